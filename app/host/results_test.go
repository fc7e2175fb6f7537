package host

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// recordingResults is the real outbox with the hooks the host gave each
// binding recorded, so a test can drive them as the dispatcher does.
type recordingResults struct {
	svc   *results.Service
	mu    sync.Mutex
	hooks map[string]results.Hooks
}

func (r *recordingResults) Bind(module string, hooks results.Hooks) *results.Binding {
	r.mu.Lock()
	r.hooks[module] = hooks
	r.mu.Unlock()
	return r.svc.Bind(module, hooks)
}

func (r *recordingResults) hooksOf(t *testing.T, module string) results.Hooks {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.hooks[module]
	if !ok {
		t.Fatalf("module %s was never bound", module)
	}
	return h
}

// newResultsRig is a rig whose host has a real results service on the
// rig's store (the service closes with the test).
func newResultsRig(t *testing.T, specs []sdk.Spec, opts ...rigOption) (*rig, *recordingResults) {
	t.Helper()
	rec := &recordingResults{hooks: map[string]results.Hooks{}}
	var r *rig
	withResults := func(o *Options) {
		svc, err := results.New(results.Options{Store: o.Store, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("results.New: %v", err)
		}
		t.Cleanup(func() { _ = svc.Close(context.Background()) })
		rec.svc = svc
		o.Results = rec
	}
	r = newRig(t, specs, append([]rigOption{withResults}, opts...)...)
	return r, rec
}

func subscribes(names ...string) func(*sdk.Spec) {
	return func(s *sdk.Spec) { s.Permissions.ScheduledResults = names }
}

// TestScheduledResultsPortGating: a module gets the port only when it
// declares a subscription, the host advertises scheduled_results.v1 and
// an outbox is wired; otherwise Runtime.ScheduledResults is nil (the SDK
// doc's contract) and nothing is bound.
func TestScheduledResultsPortGating(t *testing.T) {
	cases := []struct {
		name     string
		declare  bool
		caps     []string
		wired    bool
		wantPort bool
	}{
		{"declared, advertised, wired", true, []string{sdk.CapScheduledResults}, true, true},
		{"undeclared", false, []string{sdk.CapScheduledResults}, true, false},
		{"not advertised", true, nil, true, false},
		{"no outbox", true, []string{sdk.CapScheduledResults}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mod := &testModule{}
			var edits []func(*sdk.Spec)
			if c.declare {
				edits = append(edits, subscribes("digest"))
			}
			specs := []sdk.Spec{spec("m", mod, edits...)}
			var (
				r   *rig
				rec *recordingResults
			)
			if c.wired {
				r, rec = newResultsRig(t, specs, withCaps(c.caps...))
			} else {
				r = newRig(t, specs, withCaps(c.caps...))
			}
			r.start(t)
			if st := r.status(t, "m"); st.State != StateRunning {
				t.Fatalf("m = %s %q", st.State, st.Reason)
			}
			got := mod.runtime().ScheduledResults != nil
			if got != c.wantPort {
				t.Fatalf("ScheduledResults present = %v, want %v", got, c.wantPort)
			}
			if rec != nil {
				rec.mu.Lock()
				_, bound := rec.hooks["m"]
				rec.mu.Unlock()
				if bound != c.wantPort {
					t.Fatalf("bound = %v, want %v", bound, c.wantPort)
				}
			}
		})
	}
}

// TestScheduledResultsPortRevokedAtClose: a port kept past Close refuses
// Subscribe and Unsubscribe with the host's revocation (ErrRevoked) and
// the SDK's closed-view error, message exact.
func TestScheduledResultsPortRevokedAtClose(t *testing.T) {
	ctx := context.Background()
	mod := &testModule{}
	r, _ := newResultsRig(t, []sdk.Spec{spec("m", mod, subscribes("digest"))}, withCaps(sdk.CapScheduledResults))
	r.start(t)
	port := mod.runtime().ScheduledResults
	if port == nil {
		t.Fatal("no port")
	}
	if err := r.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"subscribe": func() error {
			return port.Subscribe(ctx, "digest", 42, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil })
		},
		"unsubscribe": func() error { return port.Unsubscribe(ctx, "digest", 42) },
	}
	for name, call := range calls {
		err := call()
		var ae *sdk.ScheduledResultAccessError
		if !errors.Is(err, ErrRevoked) || !errors.As(err, &ae) || ae.Error() != "Scheduled-result subscription is closed or undeclared" {
			t.Errorf("%s after close = %v", name, err)
		}
	}
}

// TestScheduledResultsHooks: the binding's hooks are the instance's —
// declared names, running until Close, the module's guild predicate — and
// its health hook sets the scheduled_results constraint (which the module
// cannot clear) and the results_<status> metrics on the module's health;
// after Close the hook changes nothing.
func TestScheduledResultsHooks(t *testing.T) {
	ctx := context.Background()
	mod := &testModule{}
	r, rec := newResultsRig(t, []sdk.Spec{spec("m", mod, subscribes("digest", "weekly"))}, withCaps(sdk.CapScheduledResults))
	r.start(t)
	hk := rec.hooksOf(t, "m")
	if len(hk.Declared) != 2 || hk.Declared[0] != "digest" || hk.Declared[1] != "weekly" {
		t.Fatalf("Declared = %v", hk.Declared)
	}
	if !hk.Running() {
		t.Fatal("Running() = false for a running module")
	}
	if hk.GuildActive(42) {
		t.Fatal("GuildActive(42) before the guild is active")
	}
	r.activate(t, 42)
	if !hk.GuildActive(42) {
		t.Fatal("GuildActive(42) = false for an active guild")
	}

	hk.Health(sdk.HealthDegraded, "Scheduled results: 2 blocked, 0 retrying", map[string]float64{"results_blocked": 2, "results_pending": 1})
	st := r.status(t, "m")
	if st.Health.State != sdk.HealthDegraded || st.Health.Detail != "Scheduled results: 2 blocked, 0 retrying" {
		t.Fatalf("health = %+v", st.Health)
	}
	if st.Metrics["results_blocked"] != 2 || st.Metrics["results_pending"] != 1 {
		t.Fatalf("metrics = %v", st.Metrics)
	}
	// The module's own healthy report does not clear the core's constraint.
	mod.runtime().Health.Report(sdk.HealthHealthy, "", nil)
	if st := r.status(t, "m"); st.Health.State != sdk.HealthDegraded {
		t.Fatalf("a module report cleared the constraint: %+v", st.Health)
	}
	hk.Health(sdk.HealthHealthy, "", map[string]float64{"results_blocked": 0, "results_pending": 0})
	st = r.status(t, "m")
	if st.Health.State != sdk.HealthHealthy || st.Metrics["results_blocked"] != 0 {
		t.Fatalf("after clearing: health %+v, metrics %v", st.Health, st.Metrics)
	}

	if err := r.h.Restart(ctx, "m", "test"); err != nil {
		t.Fatal(err)
	}
	if hk.Running() {
		t.Fatal("the closed incarnation's Running() = true")
	}
	if hk.GuildActive(42) {
		t.Fatal("the closed incarnation's GuildActive(42) = true")
	}
	hk.Health(sdk.HealthFailed, "stale", map[string]float64{"results_blocked": 9})
	if st := r.status(t, "m"); st.Health.State == sdk.HealthFailed || st.Metrics["results_blocked"] == 9 {
		t.Fatalf("the closed incarnation's hook changed the new one's health: %+v %v", st.Health, st.Metrics)
	}
	if !rec.hooksOf(t, "m").Running() {
		t.Fatal("the new incarnation is not bound as running")
	}
}

// TestHealthBookKeepsEarlyCounters: core counters merged before the
// module's first report are kept and show with it (they were dropped).
func TestHealthBookKeepsEarlyCounters(t *testing.T) {
	b := newHealthBook(timeNow, 0, nil)
	b.mergeMetrics("m", map[string]float64{"results_pending": 3})
	if _, _, ok := b.snapshot("m"); ok {
		t.Fatal("counters alone made a visible health")
	}
	b.report("m", sdk.HealthHealthy, "", map[string]float64{"own": 1})
	h, _, ok := b.snapshot("m")
	if !ok || h.Metrics["results_pending"] != 3 || h.Metrics["own"] != 1 {
		t.Fatalf("health = %+v (ok %v)", h, ok)
	}
}

// TestScheduledResultsThroughHost: on the real outbox, a module subscribes
// through the host's port at Start; a publication it cannot be handed (no
// producer: every access check fails) blocks, and the module's health
// shows the scheduled_results constraint and the results_<status>
// metrics; an unsubscribe through the port clears both.
func TestScheduledResultsThroughHost(t *testing.T) {
	ctx := context.Background()
	subErr := make(chan error, 1)
	mod := &testModule{start: func(ctx context.Context, rt *sdk.Runtime) error {
		subErr <- rt.ScheduledResults.Subscribe(ctx, "digest", 42, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil })
		return nil
	}}
	r, rec := newResultsRig(t, []sdk.Spec{spec("m", mod, subscribes("digest"))}, withCaps(sdk.CapScheduledResults))
	r.activate(t, 42)
	r.start(t)
	if err := <-subErr; err != nil {
		t.Fatalf("Subscribe at Start: %v", err)
	}
	rec.svc.Start()
	pub := results.Publication{RunID: "run-1", TaskID: "task-1", Revision: 1, GuildID: 42, OwnerID: 7, PublishedAt: time.Now(),
		Outcome: sdk.ResultCompleted, Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: 42, ChannelID: 5, MessageID: 9}}}}
	if err := r.st.Write(ctx, func(tx *sql.Tx) error {
		n, err := rec.svc.Enqueue(ctx, tx, pub)
		if err == nil && n != 1 {
			err = fmt.Errorf("enqueued %d, want 1", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wantDetail := fmt.Sprintf(results.HealthDegradedDetailFmt, 1, 0)
	eventually(t, "the blocked notification shows in the module's health", func() bool {
		st := r.status(t, "m")
		return st.Health.State == sdk.HealthDegraded && st.Health.Detail == wantDetail && st.Metrics["results_blocked"] == 1
	})
	if err := mod.runtime().ScheduledResults.Unsubscribe(ctx, "digest", 42); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the unsubscribe clears the constraint", func() bool {
		st := r.status(t, "m")
		return st.Health.State == sdk.HealthHealthy && st.Metrics["results_blocked"] == 0
	})
}

// allowAll is a producer that allows every access and has no files.
type allowAll struct{}

func (allowAll) CheckAccess(context.Context, results.Publication) error { return nil }
func (allowAll) ReadFile(context.Context, string, string, int64) ([]byte, error) {
	return nil, errors.New("no files")
}

// TestScheduledResultsDeliveredOnceSubscribedAtStart: a module's view is
// open from Start, so a notification that waited for it (blocked while no
// handler was registered) is handed to the handler as soon as Start
// subscribes — it was blocked again for BlockedRetry (60 s) because the
// instance did not count as running until Start returned.
func TestScheduledResultsDeliveredOnceSubscribedAtStart(t *testing.T) {
	ctx := context.Background()
	r, rec := newResultsRig(t, []sdk.Spec{spec("m", &testModule{start: func(ctx context.Context, rt *sdk.Runtime) error {
		return rt.ScheduledResults.Subscribe(ctx, "digest", 42, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil })
	}}, subscribes("digest"))}, withCaps(sdk.CapScheduledResults))
	r.activate(t, 42)
	if err := r.h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.status(t, "m"); st.State != StateRunning {
		t.Fatalf("m = %s %q", st.State, st.Reason)
	}
	if err := r.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The module is gone; its subscription stays. A publication now is
	// blocked: no handler is registered.
	rec.svc.SetProducer(allowAll{})
	rec.svc.Start()
	pub := results.Publication{RunID: "run-1", TaskID: "task-1", Revision: 1, GuildID: 42, OwnerID: 7, PublishedAt: time.Now(),
		Outcome: sdk.ResultCompleted, Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: 42, ChannelID: 5, MessageID: 9}}}}
	if err := r.st.Write(ctx, func(tx *sql.Tx) error { _, err := rec.svc.Enqueue(ctx, tx, pub); return err }); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the notification is blocked while nobody subscribes", func() bool {
		var status, detail string
		err := r.st.Reader().QueryRowContext(ctx, `SELECT status, detail FROM kimi_result_notifications WHERE module = 'm'`).Scan(&status, &detail)
		return err == nil && status == string(results.StatusBlocked) && detail == results.DetailUnavailable
	})

	// A new incarnation subscribes at Start and waits there (bounded) for
	// the notification: its view is open, so it arrives.
	delivered := make(chan string, 1)
	mod := &testModule{start: func(ctx context.Context, rt *sdk.Runtime) error {
		err := rt.ScheduledResults.Subscribe(ctx, "digest", 42, func(_ context.Context, res sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
			select {
			case delivered <- res.NotificationID:
			default:
			}
			return nil
		})
		if err != nil {
			return err
		}
		select {
		case <-delivered:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("no delivery during Start")
		}
	}}
	caps := sdk.NewCapabilities([]string{sdk.CapScheduledResults}, false, false)
	h2, err := New(ctx, Options{Specs: []sdk.Spec{spec("m", mod, subscribes("digest"))}, Store: r.st, Guilds: r.guilds,
		Selection: []string{"m"}, SelectionSet: true, storage: r.storage, events: r.bus, Results: rec,
		StartTimeout: 30 * time.Second, caps: &caps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.Close(context.Background()) })
	if err := h2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := h2.Module("m"); st.State != StateRunning {
		t.Fatalf("m = %s %q", st.State, st.Reason)
	}
}

// TestHealthHookCheckedUnderTheBooksLock: the results binding's health
// hook decides "this incarnation is gone" under the health book's lock, so
// revoke's forget (which takes it after the close mark) cannot slip
// between the check and the write and leave a closed incarnation's
// constraint behind; a gone incarnation writes nothing.
func TestHealthHookCheckedUnderTheBooksLock(t *testing.T) {
	b := newHealthBook(timeNow, 0, nil)
	b.report("m", sdk.HealthHealthy, "", nil)
	held := false
	b.constrainUnless(func() bool {
		if held = !b.mu.TryLock(); !held {
			b.mu.Unlock() // not held: the check ran outside the lock
		}
		return false
	},
		"m", "scheduled_results", sdk.HealthDegraded, "Scheduled results: 1 blocked, 0 retrying", map[string]float64{"results_blocked": 1})
	if !held {
		t.Fatal("gone() ran without the book's lock held")
	}
	h, _, _ := b.snapshot("m")
	if h.State != sdk.HealthDegraded || h.Metrics["results_blocked"] != 1 {
		t.Fatalf("health = %+v", h)
	}
	b.forget("m")
	b.report("m", sdk.HealthHealthy, "", nil)
	b.constrainUnless(func() bool { return true }, "m", "scheduled_results", sdk.HealthFailed, "x", map[string]float64{"results_blocked": 9})
	if h, _, _ := b.snapshot("m"); h.State != sdk.HealthHealthy || h.Metrics["results_blocked"] == 9 {
		t.Fatalf("a gone incarnation's hook wrote: %+v", h)
	}
}
