package admin

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/results"
)

// TestResultPageFollowsWrites: a subscription page (its rows are kept
// between changes) shows a row's settle in the background once the
// service signals it, and an operator action's effect on the rows at once
// on the page the action redirects to, signal or not.
func TestResultPageFollowsWrites(t *testing.T) {
	t.Run("settle in the background", func(t *testing.T) {
		h := newHarness(t, withSettling)
		h.createAdmin()
		c := h.newClient()
		c.login(testUser, testPassword)
		resultFixture(t, h)
		s := h.settler(t)
		row := `data-testid="result-row-` + h.vars["pending"] + `" data-status=`
		wantBody(t, c.get(resultPage), row+`"pending"`) // kept now
		wantBody(t, c.get(resultPage+"?status=pending"), row+`"pending"`)
		s.settle(t, h.vars["pending"], results.StatusAcknowledged)
		for _, page := range []string{resultPage, resultPage + "?status=acknowledged"} {
			deadline := time.Now().Add(15 * time.Second)
			for body := c.get(page).body; !strings.Contains(body, row+`"acknowledged"`); body = c.get(page).body {
				if time.Now().After(deadline) {
					t.Fatalf("%s still lacks the settled row (%s)", page, row)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		if body := c.get(resultPage + "?status=pending").body; strings.Contains(body, row) {
			t.Errorf("the pending filter still lists the settled row")
		}
	})
	t.Run("operator action without a signal", func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.Results = silentResults{o.Results.(*results.Service)} })
		h.createAdmin()
		c := h.newClient()
		c.login(testUser, testPassword)
		resultFixture(t, h)
		expired := `data-testid="result-row-` + h.vars["expired"] + `"`
		wantBody(t, c.get(resultPage), expired)
		wantBody(t, c.get(resultPage+"?status=expired"), expired)
		wantStatus(t, c.post(resultPage+"/purge", url.Values{form.FieldConfirm: {form.ConfirmYes}}), http.StatusSeeOther)
		for _, page := range []string{resultPage, resultPage + "?status=expired"} {
			if body := c.get(page).body; strings.Contains(body, expired) {
				t.Errorf("%s still lists the purged row", page)
			}
		}
	})
}

// TestResultPageFollowsExpiry: with no write at all (the service never
// signals), a pending row whose expiry passes reads as expired on the
// page at once, leaves the pending filter and joins the expired one,
// though each page was kept before.
func TestResultPageFollowsExpiry(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Results = silentResults{o.Results.(*results.Service)} })
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	h.addSubscription(t, resultKey)
	id := h.addResult(t, resultKey, resultFix{status: results.StatusPending, age: results.Retention - 2*time.Second})
	var exp int64
	if err := h.st.Reader().QueryRow(`SELECT expires_ms FROM kimi_result_notifications WHERE id = ?`, id).Scan(&exp); err != nil {
		t.Fatal(err)
	}
	row := `data-testid="result-row-` + id + `" data-status=`
	wantBody(t, c.get(resultPage), row+`"pending"`)
	wantBody(t, c.get(resultPage+"?status=pending"), row+`"pending"`)
	wantBody(t, c.get(resultPage+"?status=expired"), "No matching notifications")
	time.Sleep(time.Until(time.UnixMilli(exp)) + 10*time.Millisecond)
	wantBody(t, c.get(resultPage), row+`"expired"`)
	wantBody(t, c.get(resultPage+"?status=pending"), "No matching notifications")
	wantBody(t, c.get(resultPage+"?status=expired"), row+`"expired"`)
}

// TestResultsCachePages: the kept pages are bounded, one per subscription,
// filter and cursor, and a read that races a change is not kept.
func TestResultsCachePages(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	var r resultsCache
	reads := 0
	read := func(_ context.Context, k results.SubKey, f results.NotificationFilter) (results.NotificationPage, error) {
		reads++
		return results.NotificationPage{Next: k.Name + "/" + string(f.Status)}, nil
	}
	k := results.SubKey{Module: "kudos", Name: "digest", GuildID: 42}
	for _, tc := range []struct {
		name      string
		k         results.SubKey
		f         results.NotificationFilter
		wantReads int
	}{
		{"first read", k, results.NotificationFilter{Limit: 25}, 1},
		{"kept", k, results.NotificationFilter{Limit: 25}, 1},
		{"another status", k, results.NotificationFilter{Status: results.StatusBlocked, Limit: 25}, 2},
		{"another cursor", k, results.NotificationFilter{After: "x", Limit: 25}, 3},
		{"another subscription", results.SubKey{Module: "kudos", Name: "weekly", GuildID: 42}, results.NotificationFilter{Limit: 25}, 4},
		{"first again", k, results.NotificationFilter{Limit: 25}, 4},
	} {
		p, err := r.page(ctx, tc.k, tc.f, now, read)
		if err != nil || p.Next != tc.k.Name+"/"+string(tc.f.Status) || reads != tc.wantReads {
			t.Errorf("%s: page %+v, %v, reads %d, want %d", tc.name, p, err, reads, tc.wantReads)
		}
	}
	for i := range resultPagesCached * 2 {
		if _, err := r.page(ctx, k, results.NotificationFilter{After: string(rune('a' + i)), Limit: 25}, now, read); err != nil {
			t.Fatal(err)
		}
		if n := len(r.pages); n > resultPagesCached {
			t.Fatalf("%d pages kept, at most %d", n, resultPagesCached)
		}
	}
	// A page past its until is read again.
	expiring := func(context.Context, results.SubKey, results.NotificationFilter) (results.NotificationPage, error) {
		reads++
		return results.NotificationPage{Until: now.Add(time.Second)}, nil
	}
	r.invalidate()
	before := reads
	for _, at := range []time.Time{now, now.Add(time.Second - time.Millisecond), now.Add(time.Second)} {
		if _, err := r.page(ctx, k, results.NotificationFilter{}, at, expiring); err != nil {
			t.Fatal(err)
		}
	}
	if reads-before != 2 {
		t.Errorf("reads across the until = %d, want 2 (the first, and one at the until)", reads-before)
	}
	// A read during which a change happens is served but not kept.
	racing := func(ctx context.Context, k results.SubKey, f results.NotificationFilter) (results.NotificationPage, error) {
		r.invalidate()
		return read(ctx, k, f)
	}
	before = reads
	if _, err := r.page(ctx, k, results.NotificationFilter{Limit: 25}, now, racing); err != nil {
		t.Fatal(err)
	}
	if _, err := r.page(ctx, k, results.NotificationFilter{Limit: 25}, now, read); err != nil || reads-before != 2 {
		t.Errorf("after a racing read: reads %d, want 2 (not kept), %v", reads-before, err)
	}
}

// TestResultsRevocationIsShown: the producer's RevokeRun (task deletion,
// run retention) runs inside its transaction. A read of /results before
// that transaction commits — an open live region re-renders at once —
// sees the rows still there and caches them; so the service signals
// revocations (and enqueues) once they are committed, from the
// dispatcher's next step, which waits for the producer's commit, and
// /results does not keep showing the revoked notifications until some
// unrelated change.
func TestResultsRevocationIsShown(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	resultFixture(t, h)
	// The dispatcher runs, as in serve (it announces a producer's changes
	// after their commit); the subscription is paused so that it claims
	// nothing of the fixture.
	if _, err := h.st.Writer().Exec(`UPDATE kimi_result_subscriptions SET paused = 1`); err != nil {
		t.Fatal(err)
	}
	h.results.Start()
	wantBody(t, c.get(resultPage), `data-testid="result-count-kudos-digest-42-pending">1<`)

	err := h.st.Write(context.Background(), func(tx *sql.Tx) error {
		var run string
		if err := tx.QueryRow(`SELECT run_id FROM kimi_result_notifications WHERE id = ?`, h.vars["pending"]).Scan(&run); err != nil {
			return err
		}
		if err := h.results.RevokeRun(context.Background(), tx, run); err != nil {
			return err
		}
		// The admin hears of the change (its cache is invalidated) while
		// the transaction is still open; a page read now sees the
		// committed state, as a live region's re-render would.
		deadline := time.Now().Add(10 * time.Second)
		for {
			h.srv.resultSubs.mu.Lock()
			valid := h.srv.resultSubs.valid
			h.srv.resultSubs.mu.Unlock()
			if !valid || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		wantBody(t, c.get(resultPage), `data-testid="result-count-kudos-digest-42-pending">1<`)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Committed: the page must show the revocation (bounded wait for the
	// signal; no timing is asserted).
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := c.get(resultPage)
		// The counts and the rows (kept apart) both follow it.
		if strings.Contains(res.body, `data-testid="result-count-kudos-digest-42-pending">0<`) &&
			!strings.Contains(res.body, `data-testid="result-row-`+h.vars["pending"]+`"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the commit /results still shows the revoked notification")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
