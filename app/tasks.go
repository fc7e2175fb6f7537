package app

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
)

// taskParts are the scheduled tasks as serve runs them.
type taskParts struct {
	service *tasks.Service
	runner  *tasks.Runner
	access  *tasks.Access   // the results' producer of the tasks
	poster  *discord.Poster // the bot's tasks adapter
	admin   *tasks.Admin
}

// newTaskAccess builds the tasks' access rule over the bot's tasks adapter
// (re-checked at every delivery) and the adapter itself. The rule is also
// the scheduled results' producer of the tasks, so serve builds it before
// the outbox.
func newTaskAccess(st *store.Store, guilds *guildcfg.Service, bot *discord.Bot) (*tasks.Access, *discord.Poster) {
	poster := discord.NewPoster(bot)
	access := tasks.NewAccess(tasks.AccessOptions{Store: st, Policies: guilds, Members: bot, Checker: poster, Ready: poster,
		Results: results.DiscordAccess{Guilds: guilds, Tiers: bot, Channels: discord.NewChannelViews(bot)}})
	return access, poster
}

// newTasks builds the scheduled tasks (reference §5.1): the service
// (publishing into res), the deliverer over the bot's tasks adapter with
// the access rule, the runner on the host's durable scheduler, and the
// admin's facade.
func newTasks(st *store.Store, res *results.Service, guilds *guildcfg.Service, poster *discord.Poster, access *tasks.Access,
	jobs tasks.Jobs, logger *slog.Logger, now func() time.Time) (*taskParts, error) {
	if jobs == nil || jobs == tasks.Jobs((*scheduler.Scheduler)(nil)) {
		return nil, errors.New("app: tasks: the module host has no durable scheduler")
	}
	svc, err := tasks.New(tasks.Options{Store: st, Results: res, Logger: logger, Now: now})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	deliverer, err := tasks.NewDeliverer(svc, tasks.DeliverOptions{Poster: poster, Authorize: access, Policies: guilds})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	runner, err := tasks.NewRunner(tasks.RunnerOptions{Service: svc, Deliverer: deliverer, Jobs: jobs, Checker: poster, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	return &taskParts{service: svc, runner: runner, access: access, poster: poster,
		admin: &tasks.Admin{Service: svc, Runner: runner, Policies: guilds, Checker: poster}}, nil
}
