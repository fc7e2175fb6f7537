package admin

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
)

// The /tasks tests' Discord: guild taskGuild (testGuild) has text channels
// taskChannel and taskChannel2 and a forum, taskForum; guild taskOffGuild
// has scheduled tasks disabled.
const (
	taskGuild    = testGuild
	taskOffGuild = 43
	taskChannel  = 100
	taskChannel2 = 101
	taskForum    = 199
	taskOwner    = 9
)

// taskChecker is the tests' Checker: the channels above, everyone may post.
type taskChecker struct{}

func (taskChecker) ChannelKind(_ context.Context, guild, channel uint64) (tasks.ChannelKind, error) {
	if guild != taskGuild && guild != taskOffGuild {
		return tasks.ChannelMissing, nil
	}
	switch channel {
	case taskChannel, taskChannel2:
		return tasks.ChannelText, nil
	case taskForum:
		return tasks.ChannelForum, nil
	}
	return tasks.ChannelMissing, nil
}

func (taskChecker) CanPost(context.Context, uint64, uint64, uint64, tasks.Needs) (bool, error) {
	return true, nil
}

func (taskChecker) UploadLimit(context.Context, uint64) (int64, error) { return 8 << 20, nil }

// taskPolicies is the tests' guild policies: taskGuild enabled in
// Europe/Berlin, every other guild disabled.
type taskPolicies struct{}

func (taskPolicies) TaskPolicy(guildID uint64) guildcfg.TaskPolicy {
	if guildID == taskGuild {
		return guildcfg.TaskPolicy{Enabled: true, Timezone: "Europe/Berlin"}
	}
	return guildcfg.TaskPolicy{Timezone: "UTC"}
}

// taskPoster records the chunks the runner posts (message ids from 5000).
type taskPoster struct {
	mu    sync.Mutex
	posts []tasks.PostChunk
	err   error // returned instead of posting, when set
	// gate, when set, holds every post until it is closed (or ctx ends).
	gate chan struct{}
}

func (p *taskPoster) Post(ctx context.Context, _, _ uint64, chunk tasks.PostChunk) (uint64, string, error) {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, "", ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return 0, "", p.err
	}
	p.posts = append(p.posts, chunk)
	return uint64(5000 + len(p.posts)), "", nil
}

// hold makes every post wait until the returned release is called.
func (p *taskPoster) hold() (release func()) {
	gate := make(chan struct{})
	p.mu.Lock()
	p.gate = gate
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// taskEnv is the real tasks service, runner and facade over a harness's
// store.
type taskEnv struct {
	svc    *tasks.Service
	admin  *tasks.Admin
	runner *tasks.Runner
	poster *taskPoster
	jobs   *scheduler.Scheduler
}

// newTaskEnv builds the tasks side of a harness; close stops it before
// the store closes.
func newTaskEnv(t testing.TB, st *store.Store, res *results.Service, logger *slog.Logger) (*taskEnv, func()) {
	t.Helper()
	svc, err := tasks.New(tasks.Options{Store: st, Results: res, Logger: logger})
	if err != nil {
		t.Fatalf("tasks.New: %v", err)
	}
	poster := &taskPoster{}
	del, err := tasks.NewDeliverer(svc, tasks.DeliverOptions{Poster: poster, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatalf("tasks.NewDeliverer: %v", err)
	}
	jobs, err := scheduler.New(scheduler.Options{Store: st, Logger: logger})
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	runner, err := tasks.NewRunner(tasks.RunnerOptions{Service: svc, Deliverer: del, Jobs: jobs, Checker: taskChecker{}, Logger: logger})
	if err != nil {
		t.Fatalf("tasks.NewRunner: %v", err)
	}
	if err := runner.Start(context.Background()); err != nil {
		t.Fatalf("runner.Start: %v", err)
	}
	// The scheduler is not started: its runner lease would put the module
	// host's scheduler of a harness (withModules) in standby. Run now,
	// previews and retries deliver without it; due occurrences do not run.
	env := &taskEnv{svc: svc, runner: runner, poster: poster, jobs: jobs,
		admin: &tasks.Admin{Service: svc, Runner: runner, Policies: taskPolicies{}, Checker: taskChecker{}}}
	return env, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = runner.Close(ctx)
		_ = jobs.Close(ctx)
	}
}
