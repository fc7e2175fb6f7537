package app

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
)

// taskParts are the scheduled tasks as serve runs them.
type taskParts struct {
	service  *tasks.Service
	runner   *tasks.Runner
	producer results.Producer
	admin    *tasks.Admin
}

// newTasks builds the scheduled tasks (reference §5.1): the service
// (publishing into res), the deliverer over the bot's tasks adapter with
// the tasks' access rule re-checked at every delivery, the runner on the
// host's durable scheduler and the results producer (the same rule).
// serve sets the producer before res starts, starts the runner after the
// bot and the modules, and closes it before the scheduler.
func newTasks(st *store.Store, res *results.Service, policies interface {
	tasks.Policies
	results.GuildActivity
}, bot *discord.Bot, jobs tasks.Jobs, logger *slog.Logger) (*taskParts, error) {
	if jobs == nil || jobs == tasks.Jobs((*scheduler.Scheduler)(nil)) {
		return nil, errors.New("app: tasks: the module host has no durable scheduler")
	}
	svc, err := tasks.New(tasks.Options{Store: st, Results: res, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	poster := discord.NewPoster(bot)
	access := tasks.NewAccess(tasks.AccessOptions{Service: svc, Policies: policies, Members: bot, Checker: poster, Ready: poster,
		Results: results.DiscordAccess{Guilds: policies, Tiers: bot, Channels: discord.NewChannelViews(bot)}})
	deliverer, err := tasks.NewDeliverer(svc, tasks.DeliverOptions{Poster: poster, Authorize: access, Policies: policies})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	runner, err := tasks.NewRunner(tasks.RunnerOptions{Service: svc, Deliverer: deliverer, Jobs: jobs, Checker: poster, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	return &taskParts{service: svc, runner: runner, producer: access,
		admin: &tasks.Admin{Service: svc, Runner: runner, Policies: policies, Checker: poster}}, nil
}
