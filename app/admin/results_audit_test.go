package admin

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// TestResultsRevocationIsShown (audit, issue 15): the producer's
// RevokeRun (task deletion, run retention) runs inside its transaction and
// signals the change before that transaction commits. A read of /results
// in between — an open live region re-renders at once — sees the rows
// still there and caches them; after the commit nothing signals again, so
// /results keeps showing the revoked notifications until some unrelated
// change. FAILS until the service signals revocations (and enqueues) once
// they are committed (now: from the dispatcher's next step, which waits
// for the producer's commit).
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
