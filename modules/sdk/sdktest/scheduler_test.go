package sdktest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

var epoch = time.Unix(0, 0)

func at(seconds int64) time.Time { return time.Unix(seconds, 0) }

func mustRegister(t *testing.T, s *FakeScheduler, name string, h sdk.JobHandler) {
	t.Helper()
	if err := s.Register(name, h); err != nil {
		t.Fatal(err)
	}
}

func TestSchedulerOneShotRunsWhenDueAndIsDeletedOnSuccess(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	var runs []sdk.JobRun
	mustRegister(t, s, "h", func(_ context.Context, run sdk.JobRun) error { runs = append(runs, run); return nil })
	if err := s.RunAt(ctx, "once", at(100), "h", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}

	if ran := s.RunDue(ctx, at(99)); ran != 0 {
		t.Errorf("ran %d jobs before due", ran)
	}
	if ran := s.RunDue(ctx, at(100)); ran != 1 {
		t.Fatalf("ran %d jobs when due, want 1", ran)
	}

	if _, ok := s.Job("once"); ok {
		t.Error("a successful one-shot job must be deleted")
	}
	if len(runs) != 1 || runs[0].JobID != "mod:once" || runs[0].Key != "once" || runs[0].Attempt != 1 ||
		!runs[0].ScheduledFor.Equal(at(100)) || string(runs[0].Payload) != `{"n":1}` {
		t.Errorf("runs = %+v", runs)
	}
	var payload struct{ N int }
	if err := runs[0].Decode(&payload); err != nil || payload.N != 1 {
		t.Errorf("decode = %+v, %v", payload, err)
	}
	if got := s.Runs(); len(got) != 1 {
		t.Errorf("recorded runs = %d", len(got))
	}
}

func TestSchedulerPeriodicJobIsDueAtOnceAndReschedulesFromCompletion(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("")
	mustRegister(t, s, "h", func(context.Context, sdk.JobRun) error { return nil })
	if err := s.RunEvery(ctx, "tick", time.Minute, "h", nil, sdk.EveryOptions{Jitter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	job, _ := s.Job("tick")
	if !job.RunAt.Equal(epoch) || job.Jitter != time.Hour || string(job.Payload) != "{}" {
		t.Errorf("new periodic job = %+v", job)
	}

	if ran := s.RunDue(ctx, at(1000)); ran != 1 {
		t.Fatalf("ran %d", ran)
	}

	job, _ = s.Job("tick")
	// Jitter is ignored so the reschedule is exact: completion + interval.
	if !job.RunAt.Equal(at(1060)) || job.Attempt != 0 || job.LastError != "" {
		t.Errorf("rescheduled job = %+v", job)
	}
	if s.Runs()[0].JobID != "fake-tick" {
		t.Errorf("job id without a module = %q", s.Runs()[0].JobID)
	}
}

func TestSchedulerFailureKeepsTheJobAndBacksOff(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	fail := true
	mustRegister(t, s, "h", func(context.Context, sdk.JobRun) error {
		if fail {
			return errors.New("boom")
		}
		return nil
	})
	backoff := sdk.Backoff{Base: 10 * time.Second, Max: time.Minute, Multiplier: 3}
	if err := s.RunEvery(ctx, "job", time.Hour, "h", nil, sdk.EveryOptions{Backoff: &backoff}); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		now       int64
		attempt   int
		nextRunAt int64
	}{
		{now: 0, attempt: 1, nextRunAt: 10},   // base
		{now: 10, attempt: 2, nextRunAt: 40},  // base·3
		{now: 40, attempt: 3, nextRunAt: 100}, // capped at max (90 > 60)
	}
	for _, step := range steps {
		if ran := s.RunDue(ctx, at(step.now)); ran != 1 {
			t.Fatalf("at %d ran %d", step.now, ran)
		}
		job, ok := s.Job("job")
		if !ok || job.Attempt != step.attempt || job.LastError != "boom" || !job.RunAt.Equal(at(step.nextRunAt)) {
			t.Errorf("after failure %d: %+v", step.attempt, job)
		}
	}
	if ran := s.RunDue(ctx, at(99)); ran != 0 {
		t.Errorf("a backing-off job ran early")
	}

	fail = false
	s.RunDue(ctx, at(100))
	job, _ := s.Job("job")
	if job.Attempt != 0 || job.LastError != "" || !job.RunAt.Equal(at(100).Add(time.Hour)) {
		t.Errorf("after success: %+v", job)
	}
	if runs := s.Runs(); runs[2].Attempt != 3 || runs[3].Attempt != 4 {
		t.Errorf("attempts = %d, %d; want 3, 4", runs[2].Attempt, runs[3].Attempt)
	}
}

func TestSchedulerFailedOneShotIsKeptAndRetried(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	calls := 0
	mustRegister(t, s, "h", func(context.Context, sdk.JobRun) error {
		calls++
		if calls == 1 {
			panic("kaboom")
		}
		return nil
	})
	_ = s.RunAt(ctx, "once", at(0), "h", nil)

	s.RunDue(ctx, at(5))
	job, ok := s.Job("once")
	if !ok || job.LastError != "panic: kaboom" || !job.RunAt.Equal(at(5).Add(sdk.DefaultBackoff().Base)) {
		t.Fatalf("after a panic: %+v (exists %v)", job, ok)
	}
	s.RunDue(ctx, at(35))
	if _, ok := s.Job("once"); ok {
		t.Error("the retried one-shot job was not deleted after success")
	}
}

func TestSchedulerBackoffIsOverflowSafe(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	mustRegister(t, s, "h", func(context.Context, sdk.JobRun) error { return errors.New("x") })
	huge := sdk.Backoff{Base: time.Second, Max: time.Hour, Multiplier: 1e308}
	_ = s.RunEvery(ctx, "job", time.Minute, "h", nil, sdk.EveryOptions{Backoff: &huge})

	s.RunDue(ctx, at(0))
	s.RunDue(ctx, at(1))

	if job, _ := s.Job("job"); !job.RunAt.Equal(at(1).Add(time.Hour)) {
		t.Errorf("second failure retries at %v, want capped at max", job.RunAt)
	}
}

func TestSchedulerJobWithoutHandlerDoesNotRun(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	_ = s.RunAt(ctx, "orphan", at(0), "missing", nil)

	if ran := s.RunDue(ctx, at(10)); ran != 0 {
		t.Errorf("ran %d", ran)
	}
	job, _ := s.Job("orphan")
	if job.LastError != "no handler 'missing'" || job.Attempt != 0 || !job.RunAt.Equal(at(0)) {
		t.Errorf("orphan job = %+v", job)
	}
}

func TestSchedulerCancelListAndReplacement(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	mustRegister(t, s, "b", func(context.Context, sdk.JobRun) error { return nil })
	mustRegister(t, s, "a", func(context.Context, sdk.JobRun) error { return nil })
	_ = s.RunAt(ctx, "first", at(5), "a", nil)
	_ = s.RunAt(ctx, "second", at(5), "a", nil)
	// Replacing keeps the job's place and resets it.
	_ = s.RunEvery(ctx, "first", time.Minute, "b", nil, sdk.EveryOptions{})

	infos, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].Key != "first" || infos[0].Handler != "b" || infos[0].Interval != time.Minute || infos[1].Key != "second" {
		t.Errorf("list = %+v", infos)
	}
	if got := s.Handlers(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("handlers = %v", got)
	}
	if ok, _ := s.Cancel(ctx, "second"); !ok {
		t.Error("cancel of an existing job reported false")
	}
	if ok, _ := s.Cancel(ctx, "second"); ok {
		t.Error("cancel of a missing job reported true")
	}
	if infos, _ := s.List(ctx); len(infos) != 1 {
		t.Errorf("list after cancel = %+v", infos)
	}
}

func TestSchedulerHandlersMayCancelAndReplaceJobs(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	var ran []string
	mustRegister(t, s, "canceller", func(context.Context, sdk.JobRun) error {
		ran = append(ran, "canceller")
		_, _ = s.Cancel(ctx, "victim")
		// Replace itself with a later one-shot: settlement must not delete
		// or reschedule the replacement.
		return s.RunAt(ctx, "canceller", at(500), "canceller", nil)
	})
	mustRegister(t, s, "victim", func(context.Context, sdk.JobRun) error { ran = append(ran, "victim"); return nil })
	_ = s.RunAt(ctx, "canceller", at(0), "canceller", nil)
	_ = s.RunAt(ctx, "victim", at(0), "victim", nil)

	if n := s.RunDue(ctx, at(1)); n != 1 {
		t.Errorf("ran %d, want only the canceller", n)
	}
	if !slices.Equal(ran, []string{"canceller"}) {
		t.Errorf("ran = %v", ran)
	}
	job, ok := s.Job("canceller")
	if !ok || !job.RunAt.Equal(at(500)) || job.Attempt != 0 {
		t.Errorf("replacement = %+v (exists %v)", job, ok)
	}
}

func TestSchedulerValidatesLikeTheHost(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	long := string(make([]byte, 129))
	bad := sdk.Backoff{Base: 0, Max: time.Second, Multiplier: 2}
	tests := []struct {
		name string
		err  error
	}{
		{"empty key", s.RunAt(ctx, "", at(0), "h", nil)},
		{"long key", s.RunAt(ctx, long, at(0), "h", nil)},
		{"empty handler", s.RunAt(ctx, "k", at(0), "", nil)},
		{"zero interval", s.RunEvery(ctx, "k", 0, "h", nil, sdk.EveryOptions{})},
		{"bad backoff", s.RunEvery(ctx, "k", time.Second, "h", nil, sdk.EveryOptions{Backoff: &bad})},
		{"array payload", s.RunAt(ctx, "k", at(0), "h", []int{1})},
		{"register empty name", s.Register("", func(context.Context, sdk.JobRun) error { return nil })},
		{"register nil handler", s.Register("h", nil)},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, sdk.ErrContract) {
			t.Errorf("%s: err = %v, want a contract error", tt.name, tt.err)
		}
	}
	if infos, _ := s.List(ctx); len(infos) != 0 {
		t.Errorf("invalid calls scheduled %+v", infos)
	}
}

// Jobs and runs handed out are copies: changing a returned payload cannot
// change what the next execution receives.
func TestSchedulerJobsAndRunsAreCopies(t *testing.T) {
	ctx := context.Background()
	s := NewFakeScheduler("mod")
	var payloads []string
	mustRegister(t, s, "h", func(_ context.Context, run sdk.JobRun) error {
		payloads = append(payloads, string(run.Payload))
		run.Payload[2] = 'X'
		return nil
	})
	if err := s.RunEvery(ctx, "tick", time.Minute, "h", map[string]any{"n": 1}, sdk.EveryOptions{}); err != nil {
		t.Fatal(err)
	}
	job, _ := s.Job("tick")
	job.Payload[2] = 'Y'
	s.RunDue(ctx, at(0))
	s.Runs()[0].Payload[2] = 'Z'
	s.RunDue(ctx, at(60))
	if want := []string{`{"n":1}`, `{"n":1}`}; !slices.Equal(payloads, want) {
		t.Errorf("payloads = %q, want %q", payloads, want)
	}
	if got := string(s.Runs()[0].Payload); got != `{"n":1}` {
		t.Errorf("recorded run payload = %s", got)
	}
}
