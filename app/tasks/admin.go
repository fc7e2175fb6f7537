package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/kimiapp/kimi/app/guildcfg"
)

// Policies returns a guild's scheduled_tasks policy (*guildcfg.Service).
type Policies interface {
	TaskPolicy(guildID uint64) guildcfg.TaskPolicy
}

var _ Policies = (*guildcfg.Service)(nil)

// Admin is what /tasks acts on: the service and the runner, with the
// guild's policy and Discord's answers (Checker) looked up for every
// definition saved, so the admin passes only what the operator typed.
type Admin struct {
	Service  *Service
	Runner   *Runner
	Policies Policies
	Checker  Checker
}

func (a *Admin) ready() error {
	if a == nil || a.Service == nil || a.Runner == nil || a.Policies == nil || a.Checker == nil {
		return errors.New("tasks: the admin's service, runner, policies and checker are required")
	}
	return nil
}

// Create validates def against its guild's policy and Discord and saves
// it as a new task (a *DefinitionError says what is wrong; ErrDisabled
// when the guild's scheduled tasks are off).
func (a *Admin) Create(ctx context.Context, actor string, def Definition) (Task, error) {
	if err := a.ready(); err != nil {
		return Task{}, err
	}
	return a.Service.Create(ctx, actor, a.Policies.TaskPolicy(def.GuildID), a.Checker, def)
}

// Update saves def as task id's next revision (validated as Create).
func (a *Admin) Update(ctx context.Context, actor, id string, def Definition) (Task, error) {
	if err := a.ready(); err != nil {
		return Task{}, err
	}
	// The task's guild's policy: the definition may name no guild (the
	// guild cannot change; Update says so when it names another).
	t, err := a.Service.Get(ctx, id)
	if err != nil {
		return Task{}, err
	}
	return a.Service.Update(ctx, actor, id, a.Policies.TaskPolicy(t.GuildID), a.Checker, def)
}

// enabled returns ErrDisabled when task id's guild has scheduled tasks
// off: nothing is run or posted there (delivery would refuse it and put
// the task in needs_attention).
func (a *Admin) enabled(ctx context.Context, id string) error {
	t, err := a.Service.Get(ctx, id)
	if err != nil {
		return err
	}
	if !a.Policies.TaskPolicy(t.GuildID).Enabled {
		return ErrDisabled
	}
	return nil
}

// Policy is the guild's scheduled_tasks policy (the form's defaults).
func (a *Admin) Policy(guildID uint64) guildcfg.TaskPolicy { return a.Policies.TaskPolicy(guildID) }

// Get returns task id.
func (a *Admin) Get(ctx context.Context, id string) (Task, error) { return a.Service.Get(ctx, id) }

// Revision returns revision rev of task id (files with their bytes).
func (a *Admin) Revision(ctx context.Context, id string, rev int) (Definition, error) {
	return a.Service.Revision(ctx, id, rev)
}

// List returns a page of tasks.
func (a *Admin) List(ctx context.Context, o ListOptions) (Page, error) { return a.Service.List(ctx, o) }

// SetPaused pauses or resumes task id.
func (a *Admin) SetPaused(ctx context.Context, actor, id string, paused bool) (Task, error) {
	return a.Service.SetPaused(ctx, actor, id, paused)
}

// Delete deletes task id.
func (a *Admin) Delete(ctx context.Context, actor, id string) error {
	return a.Service.Delete(ctx, actor, id)
}

// Runs returns task id's newest runs.
func (a *Admin) Runs(ctx context.Context, id string, limit int) ([]Run, error) {
	return a.Service.Runs(ctx, id, limit)
}

// LastRuns returns the newest run of each of the tasks ids (by task id).
func (a *Admin) LastRuns(ctx context.Context, ids []string) (map[string]Run, error) {
	return a.Service.LastRuns(ctx, ids)
}

// RunPosts returns a run's post rows in order.
func (a *Admin) RunPosts(ctx context.Context, runID string) ([]PostView, error) {
	return a.Service.RunPosts(ctx, runID)
}

// RunNow runs task id now (ErrDisabled when its guild's scheduled tasks
// are off).
func (a *Admin) RunNow(ctx context.Context, actor, id string) (string, error) {
	if err := a.ready(); err != nil {
		return "", err
	}
	if err := a.enabled(ctx, id); err != nil {
		return "", err
	}
	return a.Runner.RunNow(ctx, actor, id)
}

// Preview renders (channelID 0) or posts a test preview of task id (a
// post: ErrDisabled when its guild's scheduled tasks are off).
func (a *Admin) Preview(ctx context.Context, actor, id string, channelID uint64) (Preview, error) {
	if err := a.ready(); err != nil {
		return Preview{}, err
	}
	if channelID != 0 {
		if err := a.enabled(ctx, id); err != nil {
			return Preview{}, err
		}
	}
	return a.Runner.Preview(ctx, actor, id, channelID)
}

// RetryPost re-sends an uncertain post of run runID of task taskID after
// the operator checked Discord; a run of another task is ErrNotFound (the
// page's address names the task the operator looked at).
func (a *Admin) RetryPost(ctx context.Context, actor, taskID, runID string, seq int) error {
	if err := a.ready(); err != nil {
		return err
	}
	run, err := a.Service.Run(ctx, runID)
	if err != nil {
		return err
	}
	if run.TaskID != taskID {
		return fmt.Errorf("tasks: run %s is not task %s's: %w", runID, taskID, ErrNotFound)
	}
	return a.Runner.RetryPost(ctx, actor, runID, seq)
}

// Problem is the runner's start-up problem ("" when none).
func (a *Admin) Problem() string {
	if a == nil || a.Runner == nil {
		return ""
	}
	return a.Runner.Problem()
}

// Watch returns a channel signalled after every change of a task, a run
// or a post (the pages' live updates); it closes when ctx ends.
func (a *Admin) Watch(ctx context.Context) <-chan struct{} { return a.Service.Watch(ctx) }
