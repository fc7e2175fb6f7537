package results

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Seed 001's fake tests (SDK 2.4) on the real service. A task preview
// never notifies: that is the producer's concern (a preview records no
// sent post, so it never calls Enqueue), so there is no preview here.

// TestSeedRetryAcknowledgementAndFileLifetime: the handler reads its
// published file, not another run's file and not over its limit; a
// raise retries with the same id, the return acknowledges it once, and
// every reader handed out is dead afterwards.
func TestSeedRetryAcknowledgementAndFileLifetime(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "reports", "reports")
	p := e.pub("run-1", 100)
	p.Messages[0].Attachments = []sdk.ScheduledResultAttachment{{ID: "file", Filename: "f.txt", SizeBytes: 3}}
	e.prod.files["file"] = []byte("abc")
	e.prod.files["not published"] = []byte("private")
	var (
		mu       sync.Mutex
		attempts []string
		readers  []sdk.ScheduledResultFiles
		problems []string
	)
	handler := func(ctx context.Context, r sdk.ScheduledResult, files sdk.ScheduledResultFiles) error {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, r.NotificationID)
		readers = append(readers, files)
		if data, err := files.Read(ctx, "file", sdk.MaxResultFileBytes); err != nil || string(data) != "abc" {
			problems = append(problems, "read file: "+string(data))
		}
		var ae *sdk.ScheduledResultAccessError
		if _, err := files.Read(ctx, "not published", sdk.MaxResultFileBytes); !errors.As(err, &ae) {
			problems = append(problems, "read another file")
		}
		if _, err := files.Read(ctx, "file", 2); !errors.As(err, &ae) {
			problems = append(problems, "read over the limit")
		}
		if len(attempts) == 1 {
			return errors.New("retry me")
		}
		return nil
	}
	if err := b.Subscribe(e.ctx, "reports", 100, handler); err != nil {
		t.Fatal(err)
	}
	e.enqueue(p)
	r := e.waitStatus("run-1", StatusRetry)
	e.clk.Advance(30 * time.Second)
	e.svc.signal()
	e.waitStatus("run-1", StatusAcknowledged)
	e.clk.Advance(time.Hour)
	settled(t, e.svc)
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 2 || attempts[0] != r.ID || attempts[1] != r.ID || len(problems) != 0 {
		t.Fatalf("attempts %v, problems %v", attempts, problems)
	}
	for i, rd := range readers {
		var ae *sdk.ScheduledResultAccessError
		if _, err := rd.Read(e.ctx, "file", 10); !errors.As(err, &ae) || ae.Message != MessageFilesClosed {
			t.Fatalf("reader %d after return: %v", i, err)
		}
	}
}

// TestSeedPermissionAndGuildScope: an undeclared name is an access error,
// guild 0 a contract error, a subscription in an inactive guild blocks
// (DetailInactive) and unsubscribing forgets it.
func TestSeedPermissionAndGuildScope(t *testing.T) {
	e := newEnv(t)
	b, m := e.bind(e.svc, "reports", "reports")
	m.setInactive(200, true)
	h := &recorder{}
	var ae *sdk.ScheduledResultAccessError
	if err := b.Subscribe(e.ctx, "other", 100, h.handle); !errors.As(err, &ae) {
		t.Fatalf("undeclared: %v", err)
	}
	var ce *sdk.ModuleContractError
	if err := b.Subscribe(e.ctx, "reports", 0, h.handle); !errors.As(err, &ce) || errors.As(err, &ae) {
		t.Fatalf("guild 0: %v", err)
	}
	if err := b.Subscribe(e.ctx, "reports", 200, h.handle); err != nil {
		t.Fatal(err)
	}
	e.enqueue(e.pub("run-200", 200))
	if r := e.waitStatus("run-200", StatusBlocked); r.Detail != DetailInactive || h.n() != 0 {
		t.Fatalf("inactive guild: %+v", r)
	}
	if err := b.Subscribe(e.ctx, "reports", 100, h.handle); err != nil {
		t.Fatal(err)
	}
	if err := b.Unsubscribe(e.ctx, "reports", 100); err != nil {
		t.Fatal(err)
	}
	if n := e.enqueue(e.pub("run-100", 100)); n != 0 || e.svc.registered(SubKey{"reports", "reports", 100}) {
		t.Fatalf("unsubscribed guild enqueued %d", n)
	}
}

// TestTimerMoments: each step returns the one moment the next is due —
// the renewal of a running delivery's lease, a retry, a blocked row's re-check,
// the purge of an expired row — computed on an unstarted service whose
// steps the test runs.
func TestTimerMoments(t *testing.T) {
	e := newEnv(t)
	e.svc.Close(e.ctx)
	s := e.newService()
	e.svc = s
	b, m := e.bind(s, "kudos")
	gate := make(chan error)
	e.subscribe(b, guildA, &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return <-gate }})
	e.enqueue(e.pub("run-1", guildA))
	now := e.clk.Now()
	waitDone := func() {
		waitFor(t, "outcome", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.done) == 1 })
	}
	// While delivering: the renewal of the held claim's lease, before it
	// runs out.
	if got := s.step(); !got.Equal(now.Add(Lease).Add(-time.Duration(s.renewBelow()) * time.Millisecond)) {
		t.Fatalf("while delivering: next %v, want the lease's renewal (%v before its end)", got.Sub(now), time.Duration(s.renewBelow())*time.Millisecond)
	}
	gate <- errors.New("again")
	waitDone()
	if got := s.step(); !got.Equal(now.Add(30 * time.Second)) {
		t.Fatalf("after a failure: next %v, want 30s", got.Sub(now))
	}
	m.setInactive(guildA, true)
	e.clk.Advance(30 * time.Second)
	now = e.clk.Now()
	s.step() // claims; the check blocks it without a call
	waitDone()
	if got := s.step(); !got.Equal(now.Add(BlockedRetry)) {
		t.Fatalf("after a block: next %v, want BlockedRetry", got.Sub(now))
	}
	pub := time.UnixMilli(1_700_000_000_000)
	e.clk.Advance(Retention)
	if got := s.step(); !got.Equal(pub.Add(2 * Retention)) {
		t.Fatalf("after expiry: next %v, want the purge", got.Sub(pub))
	}
	if r := e.one("run-1"); r.Status != StatusExpired {
		t.Fatalf("row = %+v", r)
	}
}
