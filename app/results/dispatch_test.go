package results

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestDeliverAcknowledges: a subscribed handler receives the typed result
// built from the stored publication and its return acknowledges it.
func TestDeliverAcknowledges(t *testing.T) {
	e := newEnv(t)
	b, m := e.bind(e.svc, "kudos")
	h := &recorder{}
	e.subscribe(b, guildA, h)
	p := e.pub("run-1", guildA)
	if n := e.enqueue(p); n != 1 {
		t.Fatalf("Enqueue = %d, want 1", n)
	}
	r := e.waitStatus("run-1", StatusAcknowledged)
	if r.AckMs != e.clk.Now().UnixMilli() || r.Attempts != 1 || r.Token != "" || r.Detail != "" {
		t.Fatalf("acknowledged row = %+v", r)
	}
	calls := h.all()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	got := calls[0]
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(got.NotificationID) || got.NotificationID != r.ID {
		t.Fatalf("NotificationID = %q (row %q)", got.NotificationID, r.ID)
	}
	want := sdk.ScheduledResult{
		NotificationID: r.ID, Subscription: "digest", TaskID: "task-1", RunID: "run-1", Revision: 3,
		GuildID: guildA, OwnerID: 42, PublishedAt: time.UnixMilli(p.PublishedAt.UnixMilli()),
		ExpiresAt: time.UnixMilli(p.PublishedAt.Add(Retention).UnixMilli()), Messages: p.Messages, Outcome: sdk.ResultCompleted,
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("result\n got %+v\nwant %+v", got, want)
	}
	waitFor(t, "healthy report with the acknowledged count", func() bool {
		hr, ok := m.lastHealth()
		return ok && hr.state == sdk.HealthHealthy && hr.detail == "" && hr.metrics["results_acknowledged"] == 1 && hr.metrics["results_pending"] == 0
	})
}

type flakyError struct{}

func (flakyError) Error() string { return "flaky" }

// TestRetryThenAcknowledge is seed 001's retry on the real service: an
// error retries after 30 s with the same notification id, the next
// attempt acknowledges, and an idempotent subscriber (kudos' ledger)
// counts it once.
func TestRetryThenAcknowledge(t *testing.T) {
	e := newEnv(t)
	b, m := e.bind(e.svc, "kudos")
	var mu sync.Mutex
	seen := map[string]bool{}
	var attempts atomic.Int64
	h := &recorder{fn: func(ctx context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		mu.Lock()
		seen[r.NotificationID] = true // recorded before the (lost) ack
		mu.Unlock()
		if attempts.Add(1) == 1 {
			return flakyError{}
		}
		return nil
	}}
	e.subscribe(b, guildA, h)
	e.enqueue(e.pub("run-1", guildA))
	r := e.waitStatus("run-1", StatusRetry)
	now := e.clk.Now().UnixMilli()
	if r.Detail != "Subscriber raised results.flakyError" || r.RetryMs != now+30_000 || r.Attempts != 1 || r.DetailMs != now {
		t.Fatalf("retry row = %+v", r)
	}
	waitFor(t, "degraded health", func() bool {
		hr, ok := m.lastHealth()
		return ok && hr.state == sdk.HealthDegraded && hr.detail == "Scheduled results: 0 blocked, 1 retrying" && hr.metrics["results_retry"] == 1
	})
	e.clk.Advance(30 * time.Second)
	e.svc.signal()
	r2 := e.waitStatus("run-1", StatusAcknowledged)
	if r2.ID != r.ID || r2.Attempts != 2 {
		t.Fatalf("after retry: %+v", r2)
	}
	calls := h.all()
	if len(calls) != 2 || calls[0].NotificationID != calls[1].NotificationID {
		t.Fatalf("calls = %+v", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("idempotent count = %d, want 1", len(seen))
	}
}

// TestHandlerOutcomes: each way a handler ends and the row it leaves.
func TestHandlerOutcomes(t *testing.T) {
	cases := []struct {
		name   string
		fn     func(ctx context.Context) error
		status Status
		detail string
	}{
		{"nil acknowledges", func(context.Context) error { return nil }, StatusAcknowledged, ""},
		{"error retries with its type", func(context.Context) error { return errors.New("boom") }, StatusRetry, "Subscriber raised *errors.errorString"},
		{"panic retries", func(context.Context) error { panic("kaboom") }, StatusRetry, "Subscriber raised panic"},
		{"timeout retries", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, StatusRetry, DetailTimeout},
		{"late nil after timeout acknowledges", func(ctx context.Context) error { <-ctx.Done(); return nil }, StatusAcknowledged, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.HandlerTimeout = 50 * time.Millisecond })
			b, _ := e.bind(e.svc, "kudos")
			e.subscribe(b, guildA, &recorder{fn: func(ctx context.Context, _ sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error { return tc.fn(ctx) }})
			e.enqueue(e.pub("run-1", guildA))
			r := e.waitStatus("run-1", tc.status)
			if r.Detail != tc.detail {
				t.Fatalf("detail = %q, want %q", r.Detail, tc.detail)
			}
			if tc.status == StatusRetry && r.RetryMs != e.clk.Now().UnixMilli()+30_000 {
				t.Fatalf("retry_ms = %d, want now+30s", r.RetryMs)
			}
		})
	}
}

// TestRetryDelays: min(3600, 30·2^min(attempts−1, 7)) seconds.
func TestRetryDelays(t *testing.T) {
	want := []int{30, 60, 120, 240, 480, 960, 1920, 3600, 3600}
	for i, w := range want {
		if got := retryDelay(i + 1); got != time.Duration(w)*time.Second {
			t.Errorf("attempts %d: %v, want %ds", i+1, got, w)
		}
	}
	// The exponent stops at 7: a row retried for days never overflows.
	for _, a := range []int{40, 64, 1000} {
		if got := retryDelay(a); got != time.Hour {
			t.Errorf("attempts %d: %v, want 1h", a, got)
		}
	}
}

// TestRetryDelayStored: the settle uses the row's attempts (a row
// retried for the fourth time waits 240 s).
func TestRetryDelayStored(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	e.subscribe(b, guildA, &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return errors.New("no") }})
	e.enqueue(e.pub("run-1", guildA))
	for attempt := 1; attempt <= 4; attempt++ {
		var r row
		waitFor(t, fmt.Sprintf("attempt %d settled", attempt), func() bool {
			r = e.one("run-1")
			return r.Status == StatusRetry && r.Attempts == attempt
		})
		d := retryDelay(attempt)
		if r.RetryMs != e.clk.Now().Add(d).UnixMilli() {
			t.Fatalf("attempt %d: retry_ms %d, want now+%v", attempt, r.RetryMs, d)
		}
		e.clk.Advance(d)
		e.svc.signal()
	}
}

// TestInactiveGuildBlocks: a guild the module is not active in blocks the
// row (DetailInactive) for BlockedRetry; once active it is delivered.
func TestInactiveGuildBlocks(t *testing.T) {
	e := newEnv(t)
	b, m := e.bind(e.svc, "kudos")
	h := &recorder{}
	e.subscribe(b, guildA, h)
	m.setInactive(guildA, true)
	e.enqueue(e.pub("run-1", guildA))
	r := e.waitStatus("run-1", StatusBlocked)
	if r.Detail != DetailInactive || r.RetryMs != e.clk.Now().Add(BlockedRetry).UnixMilli() || h.n() != 0 {
		t.Fatalf("blocked row = %+v, calls %d", r, h.n())
	}
	waitFor(t, "degraded health with one blocked", func() bool {
		hr, ok := m.lastHealth()
		return ok && hr.state == sdk.HealthDegraded && hr.detail == "Scheduled results: 1 blocked, 0 retrying"
	})
	m.setInactive(guildA, false)
	e.clk.Advance(BlockedRetry)
	e.svc.signal()
	e.waitStatus("run-1", StatusAcknowledged)
	if h.n() != 1 {
		t.Fatalf("calls = %d", h.n())
	}
}

// TestNotRunningBlocks: an instance whose view closed (Running false)
// blocks with DetailUnavailable.
func TestNotRunningBlocks(t *testing.T) {
	e := newEnv(t)
	b, m := e.bind(e.svc, "kudos")
	h := &recorder{}
	e.subscribe(b, guildA, h)
	m.running.Store(false)
	e.enqueue(e.pub("run-1", guildA))
	if r := e.waitStatus("run-1", StatusBlocked); r.Detail != DetailUnavailable || h.n() != 0 {
		t.Fatalf("row = %+v, calls %d", r, h.n())
	}
}

// TestNoHistoryReplay: a subscription only sees publications enqueued
// after it.
func TestNoHistoryReplay(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	if n := e.enqueue(e.pub("run-old", guildA)); n != 0 {
		t.Fatalf("Enqueue before any subscription = %d", n)
	}
	h := &recorder{}
	e.subscribe(b, guildA, h)
	e.enqueue(e.pub("run-new", guildA))
	e.waitStatus("run-new", StatusAcknowledged)
	settled(t, e.svc)
	calls := h.all()
	if len(calls) != 1 || calls[0].RunID != "run-new" {
		t.Fatalf("calls = %+v", calls)
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_notifications WHERE run_id = 'run-old'`); n != 0 {
		t.Fatalf("old run has %d notifications", n)
	}
}

// TestUnsubscribeDeletesNotifications: the subscription and its rows go,
// the handler is unregistered; another guild's subscription stays.
func TestUnsubscribeDeletesNotifications(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	fail := &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return errors.New("later") }}
	e.subscribe(b, guildA, fail)
	e.subscribe(b, guildB, fail)
	e.enqueue(e.pub("run-1", guildA))
	e.enqueue(e.pub("run-2", guildA))
	e.enqueue(e.pub("run-3", guildB))
	for _, r := range []string{"run-1", "run-2", "run-3"} {
		e.waitStatus(r, StatusRetry)
	}
	if err := b.Unsubscribe(e.ctx, "digest", guildA); err != nil {
		t.Fatalf("Unsubscribe: %v", err)
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_notifications WHERE guild_id = ?`, guildA); n != 0 {
		t.Fatalf("%d notifications left in guild A", n)
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_subscriptions WHERE guild_id = ?`, guildA); n != 0 {
		t.Fatalf("subscription left")
	}
	if e.svc.registered(SubKey{"kudos", "digest", guildA}) || !e.svc.registered(SubKey{"kudos", "digest", guildB}) {
		t.Fatalf("registrations wrong after unsubscribe")
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_notifications WHERE guild_id = ?`, guildB); n != 1 {
		t.Fatalf("guild B has %d notifications, want 1", n)
	}
}

// TestBindingCloseLeavesRows: closing the instance leaves its
// subscription; rows block with DetailUnavailable until a new instance
// subscribes, which gets them at once (not after BlockedRetry).
func TestBindingCloseLeavesRows(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.BlockedRetry = 24 * time.Hour })
	b, _ := e.bind(e.svc, "kudos")
	e.subscribe(b, guildA, &recorder{})
	b.Close()
	if err := b.Subscribe(e.ctx, "digest", guildA, (&recorder{}).handle); err == nil || err.Error() != "Scheduled-result subscription is closed or undeclared" {
		t.Fatalf("Subscribe on a closed binding: %v", err)
	}
	e.enqueue(e.pub("run-1", guildA))
	if r := e.waitStatus("run-1", StatusBlocked); r.Detail != DetailUnavailable {
		t.Fatalf("row = %+v", r)
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_subscriptions`); n != 1 {
		t.Fatalf("subscriptions = %d", n)
	}
	b2, _ := e.bind(e.svc, "kudos")
	h := &recorder{}
	e.subscribe(b2, guildA, h)
	e.waitStatus("run-1", StatusAcknowledged)
	if h.n() != 1 {
		t.Fatalf("calls = %d", h.n())
	}
}

// TestEmbedTooLarge: an embed over 32 KiB is stored omitted with the
// reason; one of exactly 32 KiB is kept.
func TestEmbedTooLarge(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	h := &recorder{}
	e.subscribe(b, guildA, h)
	p := e.pub("run-1", guildA)
	exact := make([]byte, sdk.MaxResultEmbedJSONBytes)
	for i := range exact {
		exact[i] = 'x'
	}
	p.Messages = []sdk.ScheduledResultMessage{
		{Message: sdk.MessageRef{GuildID: guildA, ChannelID: 11, MessageID: 1}, EmbedJSON: string(exact)},
		{Message: sdk.MessageRef{GuildID: guildA, ChannelID: 11, MessageID: 2}, EmbedJSON: string(exact) + "y"},
	}
	e.enqueue(p)
	e.waitStatus("run-1", StatusAcknowledged)
	got := h.all()[0].Messages
	if len(got) != 2 || got[0].EmbedJSON != string(exact) || got[0].EmbedUnavailableReason != "" {
		t.Fatalf("first message kept wrong: %d messages", len(got))
	}
	if got[1].EmbedJSON != "" || got[1].EmbedUnavailableReason != DetailEmbedTooLarge {
		t.Fatalf("second message: embed %d bytes, reason %q", len(got[1].EmbedJSON), got[1].EmbedUnavailableReason)
	}
}

// TestResultIsCloned: a handler that changes its result cannot widen
// what its reader admits (the reader checks the stored publication's
// attachments, not the handler's copy).
func TestResultIsCloned(t *testing.T) {
	e := newEnv(t)
	e.prod.files["foreign"] = []byte("another run's file")
	b, _ := e.bind(e.svc, "kudos")
	readErr := make(chan error, 1)
	e.subscribe(b, guildA, &recorder{fn: func(ctx context.Context, r sdk.ScheduledResult, f sdk.ScheduledResultFiles) error {
		r.Messages[0].Attachments[0].ID = "foreign"
		_, err := f.Read(ctx, "foreign", 100)
		readErr <- err
		return nil
	}})
	e.enqueue(e.pub("run-1", guildA))
	var ae *sdk.ScheduledResultAccessError
	if err := <-readErr; !errors.As(err, &ae) || ae.Message != MessageFileUnavailable {
		t.Fatalf("read of a tampered attachment id: %v", err)
	}
}
