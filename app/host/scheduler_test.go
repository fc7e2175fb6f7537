package host

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestJobsAreDurableAcrossRestarts: the host's scheduler port is the
// durable one — a job scheduled for later survives a module restart and a
// whole new host on the same database, and runs (contained) in the new
// incarnation once it is due; the module page lists it meanwhile.
func TestJobsAreDurableAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	var ran atomic.Int32
	register := func(_ context.Context, rt *sdk.Runtime) error {
		return rt.Scheduler.Register("h", func(context.Context, sdk.JobRun) error { ran.Add(1); return nil })
	}
	mod := &testModule{start: register}
	// The first host's clock stands still an hour before the job is due,
	// however slow the machine; the second's is past it.
	t0 := time.Now()
	when := t0.Add(time.Hour)
	r := newRig(t, []sdk.Spec{spec("m", mod)}, func(o *Options) { o.Now = func() time.Time { return t0 } })
	r.start(t)
	if err := mod.runtime().Scheduler.RunAt(ctx, "later", when, "h", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.h.Restart(ctx, "m", "test"); err != nil {
		t.Fatal(err)
	}
	jobs := r.status(t, "m").Jobs
	if len(jobs) != 1 || jobs[0].Key != "later" || jobs[0].Handler != "h" || jobs[0].NextRunAt.UnixMilli() != when.UnixMilli() {
		t.Fatalf("jobs after a module restart = %+v", jobs)
	}
	if err := r.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 0 {
		t.Fatal("the job ran before it was due")
	}
	mod2 := &testModule{start: register}
	h2, err := New(ctx, Options{Specs: []sdk.Spec{spec("m", mod2)}, Store: r.st, Guilds: r.guilds, Selection: []string{"m"}, SelectionSet: true,
		storage: r.storage, events: r.bus, Now: func() time.Time { return when.Add(time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.Close(context.Background()) })
	if err := h2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the job runs in the new host once due", func() bool { return ran.Load() == 1 })
	eventually(t, "the one-shot job is deleted", func() bool { st, _ := h2.Module("m"); return len(st.Jobs) == 0 })
}
