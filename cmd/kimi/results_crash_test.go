package main

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
)

// Mirror testdata/resultskimi.
var resultsSubscribers = []string{"results_a", "results_b", "results_c"}

const (
	resultsPublished = 2000
	resultsGuild     = 42
	resultsKills     = 4
)

// TestScheduledResultsSurviveKill9: the built binary publishes 2,000
// results to 3 subscribers (6,000 notifications; each publication is
// recorded by the producer in the transaction of its Enqueue) and is
// killed with kill -9 at random points during delivery (each kill once a
// random share of the notifications is acknowledged), restarted each
// time, then run to completion and stopped gracefully: every one of the
// 6,000 notifications is acknowledged, none is lost (each module's
// effects table holds exactly the 2,000 published runs, under the ids of
// its notifications), and the redeliveries the kills caused show as
// duplicate attempts rows only (the handler's effect is deduplicated by
// the notification id). The outbox lease is testdata/resultskimi's 2 s
// (Extensions.ResultsLease), so a delivery cut short is claimed again
// within seconds of a restart.
func TestScheduledResultsSurviveKill9(t *testing.T) {
	began := time.Now()
	bin := buildTestdata(t, "resultskimi")
	dataDir := t.TempDir()
	env := testEnv(dataDir, "KIMI_MODULES="+strings.Join(resultsSubscribers, ","))
	dbPath := filepath.Join(dataDir, "kimi.db")
	total := resultsPublished * len(resultsSubscribers)

	// The subscribers' guild is active before the first start.
	migrate := exec.Command(bin, "migrate", "up")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	func() {
		ctx := context.Background()
		st, err := store.Open(ctx, dbPath, store.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer guilds.Close()
		doc, err := guilds.Document(ctx, guildcfg.GuildTarget(resultsGuild))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := guilds.Write(ctx, guildcfg.GuildTarget(resultsGuild), "---\nbot_active: true\n---\n", doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
			t.Fatal(err)
		}
	}()

	ro, count := openCounter(t, dbPath)
	acknowledged := func() int {
		return count(`SELECT count(*) FROM kimi_result_notifications WHERE status = 'acknowledged'`)
	}
	published := func() int {
		var n int
		// The producer creates its table once it runs.
		if err := ro.QueryRow(`SELECT count(*) FROM resultskimi_published`).Scan(&n); err != nil {
			return 0
		}
		return n
	}

	srv := startBinary(t, bin, env)
	// Kill i comes once a random share of the i-th fifth of the
	// notifications is acknowledged: every kill is during delivery.
	var during int
	for i := range resultsKills {
		span := total / (resultsKills + 1)
		target := i*span + 1 + rand.IntN(span)
		deadline := time.Now().Add(2 * startTimeout)
		for acknowledged() < target {
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: %d of %d acknowledged, waiting for %d; log:\n%s", i+1, acknowledged(), total, target, srv.log())
			}
			time.Sleep(2 * time.Millisecond)
		}
		srv.kill9()
		acked, pub := acknowledged(), published()
		t.Logf("kill -9 #%d: %d of %d notifications acknowledged, %d of %d runs published", i+1, acked, total, pub, resultsPublished)
		if acked < total {
			during++
		}
		srv = startBinary(t, bin, env)
	}
	if during < resultsKills {
		t.Fatalf("only %d of %d kills came during delivery", during, resultsKills)
	}

	deadline := time.Now().Add(2 * startTimeout)
	for published() < resultsPublished || acknowledged() < total {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs published, %d of %d notifications acknowledged; log:\n%s",
				published(), resultsPublished, acknowledged(), total, srv.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, srv.log())
	}

	// Every publication once, each enqueued to the 3 subscriptions.
	if n := count(`SELECT count(*) FROM resultskimi_published WHERE enqueued = ?`, len(resultsSubscribers)); n != resultsPublished {
		t.Fatalf("%d runs enqueued to %d subscriptions, want %d", n, len(resultsSubscribers), resultsPublished)
	}
	if n := count(`SELECT count(*) FROM kimi_result_publications`); n != resultsPublished {
		t.Fatalf("%d publications stored, want %d", n, resultsPublished)
	}
	// Every notification acknowledged, none left in another status.
	if n, acked := count(`SELECT count(*) FROM kimi_result_notifications`), acknowledged(); n != total || acked != total {
		t.Fatalf("notifications %d, acknowledged %d; want %d of each", n, acked, total)
	}
	attempts, redelivered := 0, 0
	for _, m := range resultsSubscribers {
		// None lost: the module's effects are its 2,000 notifications, of
		// the 2,000 published runs, each once.
		if n := count(`SELECT count(*) FROM ` + m + `_effects`); n != resultsPublished {
			t.Errorf("%s: %d effects, want %d", m, n, resultsPublished)
		}
		if n := count(`SELECT count(*) FROM `+m+`_effects e JOIN kimi_result_notifications n ON n.id = e.id AND n.run_id = e.run_id
			JOIN resultskimi_published p ON p.run_id = e.run_id WHERE n.module = ?`, m); n != resultsPublished {
			t.Errorf("%s: %d effects match its notifications of published runs, want %d", m, n, resultsPublished)
		}
		if n := count(`SELECT count(DISTINCT run_id) FROM ` + m + `_effects`); n != resultsPublished {
			t.Errorf("%s: effects of %d distinct runs, want %d", m, n, resultsPublished)
		}
		// Duplicates only in the attempts table: every attempt is of one
		// of the module's notifications, and every notification was
		// attempted.
		a := count(`SELECT count(*) FROM ` + m + `_attempts`)
		if n := count(`SELECT count(DISTINCT id) FROM ` + m + `_attempts`); n != resultsPublished {
			t.Errorf("%s: attempts of %d distinct notifications, want %d", m, n, resultsPublished)
		}
		if n := count(`SELECT count(*) FROM `+m+`_attempts a WHERE NOT EXISTS (SELECT 1 FROM kimi_result_notifications n WHERE n.id = a.id AND n.module = ?)`, m); n != 0 {
			t.Errorf("%s: %d attempts of notifications not its own", m, n)
		}
		attempts += a
		redelivered += count(`SELECT count(*) FROM (SELECT id FROM ` + m + `_attempts GROUP BY id HAVING count(*) > 1)`)
	}
	t.Logf("%d notifications acknowledged after %d kills; %d handler invocations (%d duplicates, %d notifications handled more than once); %s in all",
		total, resultsKills, attempts, attempts-total, redelivered, time.Since(began).Round(100*time.Millisecond))
}
