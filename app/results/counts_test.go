package results

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestCountsExactAfterRandomWorkload: the counts /results and the health
// report show (kept by the dispatcher's deltas and the insert and delete
// triggers, with the live leases read as delivering) equal a COUNT(*) of
// the rows after every round of a random workload through the real
// dispatcher: publications, handlers that acknowledge or fail, access
// refused (blocked), retries coming due, expiry and its purge, pauses,
// retry-now, a revoked run, an unsubscribe and a subscribe again.
func TestCountsExactAfterRandomWorkload(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) { countsWorkload(t, seed) })
	}
}

func countsWorkload(t *testing.T, seed uint64) {
	e := newEnv(t)
	rng := mrand.New(mrand.NewPCG(seed, 28))
	keys := []SubKey{{"kudos", "digest", guildA}, {"kudos", "digest", guildB}, {"echo", "digest", guildA}}
	fail := func(context.Context) error {
		if rng.IntN(3) == 0 {
			return errors.New("the digest channel is gone")
		}
		return nil
	}
	var hs []*recorder
	binds := map[string]*Binding{}
	for _, k := range keys {
		if binds[k.Module] == nil {
			binds[k.Module], _ = e.bind(e.svc, k.Module)
		}
		h := &recorder{}
		h.fn = func(ctx context.Context, _ sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error { return fail(ctx) }
		hs = append(hs, h)
		e.subscribe(binds[k.Module], k.GuildID, h)
	}
	// rowCounts is COUNT(*) of k's rows by status as /results reads them
	// (health: as the health report does, a row past expiry under its
	// stored status until the prune marks it).
	rowCounts := func(where string, health bool, args ...any) Counts {
		t.Helper()
		expired := `WHEN status IN ('pending', 'retry', 'blocked') AND expires_ms <= ?1 THEN 'expired'`
		if health {
			expired = ""
		}
		c := Counts{}
		rows, err := e.st.Reader().Query(`SELECT CASE `+expired+`
			WHEN lease_token <> '' AND lease_until_ms > ?1 AND expires_ms > ?1 AND status IN ('pending', 'retry', 'blocked') THEN 'delivering' ELSE status END, COUNT(*)
			FROM kimi_result_notifications WHERE `+where+` GROUP BY 1`, append([]any{e.clk.Now().UnixMilli()}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var st Status
			var n int
			if err := rows.Scan(&st, &n); err != nil {
				t.Fatal(err)
			}
			c[st] = n
		}
		return c
	}
	// stable compares got with the rows, read before and after it: a
	// step the dispatcher's timer started may commit in between, so the
	// comparison counts only when nothing changed (a wrong count never
	// matches).
	stable := func(what string, got func() (Counts, error), want func() Counts) {
		t.Helper()
		var g, w Counts
		for range 100 {
			before := want()
			var err error
			if g, err = got(); errors.Is(err, ErrNotFound) {
				return
			} else if err != nil {
				t.Fatal(err)
			}
			if w = want(); maps.Equal(before, w) && maps.Equal(g, w) {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("%s: counts %v, COUNT(*) %v", what, g, w)
	}
	check := func(round int) {
		t.Helper()
		modules := map[string]bool{}
		for _, k := range keys {
			stable(fmt.Sprintf("round %d: %s", round, k), func() (Counts, error) {
				sub, err := e.svc.Subscription(e.ctx, k)
				return sub.Counts, err
			}, func() Counts {
				return rowCounts("module = ?2 AND name = ?3 AND guild_id = ?4", false, k.Module, k.Name, int64(k.GuildID))
			})
			modules[k.Module] = true
		}
		for m := range modules {
			stable(fmt.Sprintf("round %d: module %s's health", round, m), func() (Counts, error) {
				return e.svc.moduleCounts(e.ctx, m)
			}, func() Counts { return rowCounts("module = ?2", true, m) })
		}
	}
	run := 0
	var runs []string
	for round := range 40 {
		for range 1 + rng.IntN(4) {
			run++
			id := fmt.Sprintf("run-%d", run)
			runs = append(runs, id)
			e.enqueue(e.pub(id, []uint64{guildA, guildB}[rng.IntN(2)]))
		}
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(10) {
		case 0:
			e.prod.setDeny(rng.IntN(2) == 0) // refused access: blocked
		case 1:
			_ = e.svc.SetPaused(e.ctx, k, rng.IntN(2) == 0, admn)
		case 2:
			if _, err := e.svc.RetryNow(e.ctx, k, nil, admn); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		case 3:
			if _, err := e.svc.PurgeExpired(e.ctx, k, admn); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		case 4:
			victim := runs[rng.IntN(len(runs))]
			if err := e.st.Write(e.ctx, func(tx *sql.Tx) error { return e.svc.RevokeRun(e.ctx, tx, victim) }); err != nil {
				t.Fatal(err)
			}
		case 5:
			if round%10 == 5 {
				if _, err := e.svc.Unsubscribe(e.ctx, k, admn); err != nil && !errors.Is(err, ErrNotFound) {
					t.Fatal(err)
				}
				i := 0
				for keys[i] != k {
					i++
				}
				e.subscribe(binds[k.Module], k.GuildID, hs[i])
			}
		case 6:
			if round > 20 {
				e.clk.Advance(Retention + time.Hour) // everything open expires
			}
		}
		// Retries come due (30 s doubling), sometimes a lease runs out.
		e.clk.Advance(time.Duration(rng.IntN(300)) * time.Second)
		settled(t, e.svc)
		check(round)
	}
}
