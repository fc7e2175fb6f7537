package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/internal/signal"
	"github.com/kimiapp/kimi/app/results"
)

// settlingResults is the harness's results service with a settle from the
// background: the dispatcher is not started in the admin's tests, so
// settle writes what a delivery writes (the row's status) and signals the
// change as the dispatcher's settle does. Every other call is the real
// service's.
type settlingResults struct {
	*results.Service
	h       *harness
	settled signal.Watchers
}

// withSettling makes Options.Results a settlingResults over the harness's
// service (set up in newHarness; bound after it by h.settler).
func withSettling(o *Options) {
	res, ok := o.Results.(*results.Service)
	if !ok {
		panic("withSettling: Options.Results is not the harness's service")
	}
	o.Results = &settlingResults{Service: res}
}

// settler is the harness's settlingResults (withSettling).
func (h *harness) settler(t testing.TB) *settlingResults {
	t.Helper()
	s, ok := h.srv.opts.Results.(*settlingResults)
	if !ok {
		t.Fatal("the harness was not built withSettling")
	}
	s.h = h
	return s
}

// Watch merges the service's changes with the settles.
func (s *settlingResults) Watch(ctx context.Context) <-chan struct{} {
	a, b := s.Service.Watch(ctx), s.settled.Watch(ctx)
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for a != nil || b != nil {
			select {
			case _, ok := <-a:
				if !ok {
					a = nil
					continue
				}
			case _, ok := <-b:
				if !ok {
					b = nil
					continue
				}
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out
}

// settle sets notification id's status (acknowledged with its time) and
// its subscription's counts, as the dispatcher's settle does, and signals
// the change.
func (s *settlingResults) settle(t testing.TB, id string, st results.Status) {
	t.Helper()
	ack := int64(0)
	if st == results.StatusAcknowledged {
		ack = time.Now().UnixMilli()
	}
	for _, q := range []string{
		`UPDATE kimi_result_counts AS c SET n = n - 1 FROM kimi_result_notifications AS r
			WHERE r.id = ?2 AND c.module = r.module AND c.name = r.name AND c.guild_id = r.guild_id AND c.status = r.status`,
		`INSERT INTO kimi_result_counts (module, name, guild_id, status, n) SELECT module, name, guild_id, ?1, 1 FROM kimi_result_notifications WHERE id = ?2
			ON CONFLICT DO UPDATE SET n = n + 1`,
		`UPDATE kimi_result_notifications SET status = ?1, acknowledged_ms = ?3, lease_token = '', lease_until_ms = 0 WHERE id = ?2`,
	} {
		if _, err := s.h.st.Writer().Exec(q, string(st), id, ack); err != nil {
			t.Fatal(err)
		}
	}
	s.settled.Notify()
}

// TestResultEvents: the list's and a subscription's live regions follow
// a settle in the background and an operator action, with no reload.
func TestResultEvents(t *testing.T) {
	h := newHarness(t, withSettling)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	resultFixture(t, h)
	s := h.settler(t)

	list, _ := openStream(t, c, "/results/events?view=list")
	if first := readEvent(t, list); !strings.Contains(first, `data-testid="result-count-kudos-digest-42-pending">1<`) {
		t.Fatalf("first list fragment: %.600s", first)
	}
	sub, _ := openStream(t, c, "/results/events?view=sub&module=kudos&name=digest&guild=42")
	if first := readEvent(t, sub); !strings.Contains(first, `data-testid="result-row-`+h.vars["pending"]+`" data-status="pending"`) {
		t.Fatalf("first subscription fragment: %.600s", first)
	}
	s.settle(t, h.vars["pending"], results.StatusAcknowledged)
	for ev := readEvent(t, list); !strings.Contains(ev, `data-testid="result-count-kudos-digest-42-acknowledged">2<`); ev = readEvent(t, list) {
	}
	for ev := readEvent(t, sub); !strings.Contains(ev, `data-testid="result-row-`+h.vars["pending"]+`" data-status="acknowledged"`); ev = readEvent(t, sub) {
	}
	// An operator's pause (the real service's signal) shows its badge.
	if err := h.results.SetPaused(context.Background(), resultKey, true, results.Actor{Admin: "other"}); err != nil {
		t.Fatal(err)
	}
	for ev := readEvent(t, list); !strings.Contains(ev, ">paused<"); ev = readEvent(t, list) {
	}
	// Unsubscribed, the list empties and the subscription's stream ends.
	if _, err := h.results.Unsubscribe(context.Background(), resultKey, results.Actor{Admin: "other"}); err != nil {
		t.Fatal(err)
	}
	for ev := readEvent(t, list); !strings.Contains(ev, "No subscriptions yet"); ev = readEvent(t, list) {
	}
	for {
		select {
		case _, open := <-sub:
			if !open {
				return
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the stream of an unsubscribed subscription did not end")
		}
	}
}

// silentResults is the harness's service with a Watch that never signals:
// the admin then learns of a change only from its own actions.
type silentResults struct{ *results.Service }

func (silentResults) Watch(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{})
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}

// TestResultActionShowsItsEffectAtOnce: the page an action redirects to
// shows the action's effect even before (here: without) the service's
// change signal reaching the subscriptions' cache.
func TestResultActionShowsItsEffectAtOnce(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Results = silentResults{o.Results.(*results.Service)} })
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	resultFixture(t, h)
	wantBody(t, c.get(resultPage), "Purge expired (1)") // cached now
	res := c.post(resultPage+"/purge", url.Values{form.FieldConfirm: {form.ConfirmYes}})
	wantStatus(t, res, http.StatusSeeOther)
	wantBody(t, c.get(resultPage), "Purge expired (0)", "Purged 1 expired notification.")
}
