package host

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Seed 001's tests (SDK 2.4: the fake FakeScheduledResults and its tests)
// ported onto the REAL host: app/host's port, the real outbox and its
// dispatcher on a SQLite file in t.TempDir(), and seedProducer standing
// in for the scheduled tasks. The fake's deliver(result, preview=True)
// maps to the producer recording a run without calling Enqueue: only
// Enqueue notifies (that a task preview never reaches Enqueue is the
// scheduled-tasks issue's test).

// seedProducer allows every access check and serves its files by
// (run, attachment id); the outbox enforces which ids a run published
// and the read limit.
type seedProducer struct {
	files map[[2]string][]byte
}

var _ results.Producer = (*seedProducer)(nil)

func (p *seedProducer) CheckAccess(context.Context, results.Publication) error { return nil }

func (p *seedProducer) ReadFile(_ context.Context, runID, attachmentID string, limit int64) ([]byte, error) {
	data, ok := p.files[[2]string{runID, attachmentID}]
	if !ok {
		return nil, errors.New("no such file")
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%d bytes over the limit %d", len(data), limit)
	}
	return data, nil
}

// newSeedRig is a host rig with a real outbox over the rig's store whose
// producer is prod; the outbox runs from the start.
func newSeedRig(t *testing.T, specs []sdk.Spec, prod results.Producer) (*rig, *results.Service) {
	t.Helper()
	var svc *results.Service
	withOutbox := func(o *Options) {
		var err error
		svc, err = results.New(results.Options{Store: o.Store, Logger: slog.New(slog.DiscardHandler), Producer: prod})
		if err != nil {
			t.Fatalf("results.New: %v", err)
		}
		t.Cleanup(func() { _ = svc.Close(context.Background()) })
		o.Results = svc
	}
	r := newRig(t, specs, withOutbox, withCaps(sdk.CapScheduledResults))
	svc.Start()
	return r, svc
}

// seedPub is seed 001's result(): run, task, revision 3, guild, owner 10,
// one published message ("Published") carrying attachments.
func seedPub(run string, guild uint64, attachments ...sdk.ScheduledResultAttachment) results.Publication {
	return results.Publication{RunID: run, TaskID: "task", Revision: 3, GuildID: guild, OwnerID: 10, PublishedAt: time.Now(),
		Outcome: sdk.ResultCompleted, Messages: []sdk.ScheduledResultMessage{{
			Message: sdk.MessageRef{GuildID: guild, ChannelID: 300, MessageID: 900}, Content: "Published", Attachments: attachments}}}
}

func seedEnqueue(t *testing.T, r *rig, svc *results.Service, p results.Publication) int {
	t.Helper()
	var n int
	if err := r.st.Write(context.Background(), func(tx *sql.Tx) error {
		var err error
		n, err = svc.Enqueue(context.Background(), tx, p)
		return err
	}); err != nil {
		t.Fatalf("Enqueue %s: %v", p.RunID, err)
	}
	return n
}

// seedRow is a notification's stored state.
type seedRow struct {
	id, status, detail               string
	attempts                         int
	retryMs, detailMs, acknowledgedM int64
}

func seedRowOf(t *testing.T, r *rig, run string) (seedRow, bool) {
	t.Helper()
	var x seedRow
	err := r.st.Reader().QueryRowContext(context.Background(), `SELECT id, status, detail, attempts, retry_ms, detail_ms, acknowledged_ms
		FROM kimi_result_notifications WHERE run_id = ?`, run).Scan(&x.id, &x.status, &x.detail, &x.attempts, &x.retryMs, &x.detailMs, &x.acknowledgedM)
	if errors.Is(err, sql.ErrNoRows) {
		return x, false
	}
	if err != nil {
		t.Fatalf("read %s: %v", run, err)
	}
	return x, true
}

func seedWaitStatus(t *testing.T, r *rig, run string, status results.Status) seedRow {
	t.Helper()
	var x seedRow
	eventually(t, run+" is "+string(status), func() bool {
		var ok bool
		x, ok = seedRowOf(t, r, run)
		return ok && x.status == string(status)
	})
	return x
}

// subscribeAtStart is a module that subscribes name in guild at Start
// with handler, reporting the error on the returned channel.
func subscribeAtStart(name string, guild uint64, handler sdk.ScheduledResultHandler) (*testModule, <-chan error) {
	errc := make(chan error, 1)
	return &testModule{start: func(ctx context.Context, rt *sdk.Runtime) error {
		errc <- rt.ScheduledResults.Subscribe(ctx, name, guild, handler)
		return nil
	}}, errc
}

// TestHostSeedRetryAcknowledgementPreviewAndFileLifetime mirrors seed
// 001's test_fake_retry_acknowledgement_preview_and_file_lifetime on the
// real host: a module declaring "reports" subscribes in guild 100 through
// rt.ScheduledResults; a run the producer records without Enqueue (the
// fake's preview) is never delivered; the published run's first delivery
// raises and is retried (retry delay 30 s; the operator's retry now
// stands in for the wait) with the same id, and the retry is
// acknowledged once — a second Enqueue of the run and a retry now of the
// acknowledged row deliver nothing more. In every invocation the
// published file reads "abc", an id the run did not publish and a
// max_bytes of 2 fail with ScheduledResultAccessError, and every reader
// is dead after its handler returned.
func TestHostSeedRetryAcknowledgementPreviewAndFileLifetime(t *testing.T) {
	ctx := context.Background()
	prod := &seedProducer{files: map[[2]string][]byte{
		{"run", "file"}:          []byte("abc"),
		{"run", "not published"}: []byte("private"),
	}}
	var (
		mu       sync.Mutex
		attempts []string // notification ids, one per invocation
		runs     []string
		readers  []sdk.ScheduledResultFiles
		problems []string
	)
	handler := func(ctx context.Context, res sdk.ScheduledResult, files sdk.ScheduledResultFiles) error {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, res.NotificationID)
		runs = append(runs, res.RunID)
		readers = append(readers, files)
		if res.RunID == "run" {
			var ae *sdk.ScheduledResultAccessError
			if data, err := files.Read(ctx, "file", sdk.MaxResultFileBytes); err != nil || string(data) != "abc" {
				problems = append(problems, fmt.Sprintf("read file = %q, %v", data, err))
			}
			if _, err := files.Read(ctx, "not published", sdk.MaxResultFileBytes); !errors.As(err, &ae) || ae.Message != results.MessageFileUnavailable {
				problems = append(problems, fmt.Sprintf("read an unpublished id: %v", err))
			}
			if _, err := files.Read(ctx, "file", 2); !errors.As(err, &ae) || ae.Message != results.MessageFileUnavailable {
				problems = append(problems, fmt.Sprintf("read over max_bytes: %v", err))
			}
		}
		if len(attempts) == 1 {
			return errors.New("retry me")
		}
		return nil
	}
	mod, subErr := subscribeAtStart("reports", 100, handler)
	r, svc := newSeedRig(t, []sdk.Spec{spec("reports", mod, subscribes("reports"))}, prod)
	r.activate(t, 100)
	r.start(t)
	if err := <-subErr; err != nil {
		t.Fatalf("Subscribe at Start: %v", err)
	}

	// The preview: the producer records its run but never enqueues it.
	if err := r.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE seed_producer_runs (run_id TEXT PRIMARY KEY, preview INTEGER NOT NULL)`)
		if err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO seed_producer_runs VALUES ('preview', 1)`)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}

	file := sdk.ScheduledResultAttachment{ID: "file", Filename: "result.txt", SizeBytes: 3}
	if n := seedEnqueue(t, r, svc, seedPub("run", 100, file)); n != 1 {
		t.Fatalf("Enqueue = %d, want 1 (one subscription)", n)
	}
	failed := seedWaitStatus(t, r, "run", results.StatusRetry)
	if failed.attempts != 1 || failed.retryMs-failed.detailMs != 30_000 {
		t.Fatalf("after the raise: %+v, want attempt 1 due 30 s after it", failed)
	}
	k := results.SubKey{Module: "reports", Name: "reports", GuildID: 100}
	if n, err := svc.RetryNow(ctx, k, nil, results.Actor{Admin: "seed"}); err != nil || n != 1 {
		t.Fatalf("RetryNow = %d, %v", n, err)
	}
	acked := seedWaitStatus(t, r, "run", results.StatusAcknowledged)
	if acked.id != failed.id || acked.attempts != 2 {
		t.Fatalf("acknowledged %+v, want the same id %s after 2 attempts", acked, failed.id)
	}

	// Acknowledged once: enqueuing the run again and retrying the row now
	// deliver nothing; a later run's delivery (claimed after them) shows
	// the handler was called for nothing else.
	if n := seedEnqueue(t, r, svc, seedPub("run", 100, file)); n != 0 {
		t.Fatalf("a second Enqueue of the run made %d rows", n)
	}
	if n, err := svc.RetryNow(ctx, k, nil, results.Actor{Admin: "seed"}); err != nil || n != 0 {
		t.Fatalf("RetryNow of an acknowledged row = %d, %v", n, err)
	}
	seedEnqueue(t, r, svc, seedPub("later", 100))
	later := seedWaitStatus(t, r, "later", results.StatusAcknowledged)
	if _, ok := seedRowOf(t, r, "preview"); ok {
		t.Fatal("the preview was notified")
	}

	mu.Lock()
	defer mu.Unlock()
	if want := []string{failed.id, failed.id, later.id}; !slices.Equal(attempts, want) {
		t.Fatalf("attempts %v (runs %v), want %v", attempts, runs, want)
	}
	if len(problems) != 0 {
		t.Fatalf("reads: %v", problems)
	}
	for i, rd := range readers {
		var ae *sdk.ScheduledResultAccessError
		if _, err := rd.Read(ctx, "file", sdk.MaxResultFileBytes); !errors.As(err, &ae) || ae.Message != results.MessageFilesClosed {
			t.Fatalf("reader %d after its handler returned: %v", i, err)
		}
	}
}

// TestHostSeedPermissionAndGuildScope mirrors seed 001's
// test_fake_permission_and_guild_scope on the real host: an undeclared
// name is a ScheduledResultAccessError, guild 0 a ModuleContractError (not
// an access error), a subscription in an inactive guild (200) blocks
// with DetailInactive without a call, and after an unsubscribe in the
// active guild (100) a publication there makes no notification and calls
// nothing.
func TestHostSeedPermissionAndGuildScope(t *testing.T) {
	ctx := context.Background()
	var calls sync.Map
	handler := func(_ context.Context, res sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		calls.Store(res.RunID, true)
		return nil
	}
	mod := &testModule{}
	r, svc := newSeedRig(t, []sdk.Spec{spec("reports", mod, subscribes("reports"))}, &seedProducer{})
	r.activate(t, 100) // guild 200 is never activated
	r.start(t)
	port := mod.runtime().ScheduledResults
	if port == nil {
		t.Fatal("no scheduled-results port")
	}

	var ae *sdk.ScheduledResultAccessError
	if err := port.Subscribe(ctx, "other", 100, handler); !errors.As(err, &ae) {
		t.Fatalf("undeclared name: %v, want a ScheduledResultAccessError", err)
	}
	var ce *sdk.ModuleContractError
	if err := port.Subscribe(ctx, "reports", 0, handler); !errors.As(err, &ce) || errors.As(err, &ae) ||
		ce.Message != "scheduled-result subscriptions require a positive guild ID" {
		t.Fatalf("guild 0: %v, want the contract error", err)
	}

	if err := port.Subscribe(ctx, "reports", 200, handler); err != nil {
		t.Fatal(err)
	}
	if n := seedEnqueue(t, r, svc, seedPub("run-200", 200)); n != 1 {
		t.Fatalf("Enqueue in guild 200 = %d", n)
	}
	if x := seedWaitStatus(t, r, "run-200", results.StatusBlocked); x.detail != results.DetailInactive {
		t.Fatalf("inactive guild: %+v", x)
	}
	if _, called := calls.Load("run-200"); called {
		t.Fatal("the handler was called in an inactive guild")
	}

	if err := port.Subscribe(ctx, "reports", 100, handler); err != nil {
		t.Fatal(err)
	}
	if err := port.Unsubscribe(ctx, "reports", 100); err != nil {
		t.Fatal(err)
	}
	if n := seedEnqueue(t, r, svc, seedPub("run-100", 100)); n != 0 {
		t.Fatalf("an unsubscribed guild was enqueued %d rows", n)
	}
	if _, ok := seedRowOf(t, r, "run-100"); ok {
		t.Fatal("the unsubscribed guild has a notification")
	}
	if _, called := calls.Load("run-100"); called {
		t.Fatal("the unsubscribed handler was called")
	}
}

// TestHostSeedResultIsImmutableAndPermissionsMustBeNamed mirrors seed
// 001's test_result_is_immutable_and_permissions_must_be_named on the
// real host. Permissions: a module declaring ("reports",) runs and is
// bound; ("Upper Case",), a duplicate and "" fail preflight with the
// SDK's message and get no port. Immutability (Go has no frozen
// dataclass): a handler that changes its ScheduledResult (owner, content,
// attachments) does not change what the outbox stored — the retry is
// handed the publication as published, and the widened attachment list
// cannot be read.
func TestHostSeedResultIsImmutableAndPermissionsMustBeNamed(t *testing.T) {
	ctx := context.Background()
	prod := &seedProducer{files: map[[2]string][]byte{{"run", "file"}: []byte("abc"), {"run", "secret"}: []byte("private")}}
	var (
		mu       sync.Mutex
		seen     []sdk.ScheduledResult
		problems []string
	)
	handler := func(ctx context.Context, res sdk.ScheduledResult, files sdk.ScheduledResultFiles) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, res)
		first := len(seen) == 1
		if first {
			res.OwnerID = 99
			res.Messages[0].Content = "tampered"
			res.Messages[0].Attachments[0].ID = "secret" // in place: the stored copy's array if it were shared
			res.Messages[0].Attachments = append(res.Messages[0].Attachments, sdk.ScheduledResultAttachment{ID: "secret", SizeBytes: 7})
			var ae *sdk.ScheduledResultAccessError
			if _, err := files.Read(ctx, "secret", sdk.MaxResultFileBytes); !errors.As(err, &ae) {
				problems = append(problems, fmt.Sprintf("a tampered copy read another file: %v", err))
			}
			return errors.New("retry me")
		}
		return nil
	}
	good, subErr := subscribeAtStart("reports", 100, handler)
	bad := map[string][]string{"upper": {"Upper Case"}, "dup": {"reports", "reports"}, "empty": {""}}
	specs := []sdk.Spec{spec("reports", good, subscribes("reports"))}
	for name, names := range bad {
		specs = append(specs, spec(name, &testModule{}, subscribes(names...)))
	}
	r, svc := newSeedRig(t, specs, prod)
	r.activate(t, 100)
	r.start(t)
	if st := r.status(t, "reports"); st.State != StateRunning {
		t.Fatalf("reports = %s %q", st.State, st.Reason)
	}
	if err := <-subErr; err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	for name := range bad {
		st := r.status(t, name)
		want := fmt.Sprintf("Kimi module '%s' has an invalid declaration: scheduled-result subscription names must be unique and valid", name)
		if st.State != StateFailed || st.Reason != want {
			t.Errorf("%s = %s %q, want failed %q", name, st.State, st.Reason, want)
		}
	}

	seedEnqueue(t, r, svc, seedPub("run", 100, sdk.ScheduledResultAttachment{ID: "file", Filename: "result.txt", SizeBytes: 3}))
	seedWaitStatus(t, r, "run", results.StatusRetry)
	if _, err := svc.RetryNow(ctx, results.SubKey{Module: "reports", Name: "reports", GuildID: 100}, nil, results.Actor{Admin: "seed"}); err != nil {
		t.Fatal(err)
	}
	seedWaitStatus(t, r, "run", results.StatusAcknowledged)
	mu.Lock()
	defer mu.Unlock()
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	if len(seen) != 2 {
		t.Fatalf("%d invocations, want 2", len(seen))
	}
	again := seen[1]
	if again.OwnerID != 10 || again.Revision != 3 || again.TaskID != "task" || len(again.Messages) != 1 ||
		again.Messages[0].Content != "Published" || len(again.Messages[0].Attachments) != 1 || again.Messages[0].Attachments[0].ID != "file" {
		t.Fatalf("the retry was handed a changed result: %+v", again)
	}
}
