package admin

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// benchProposals is how many proposals BenchmarkProposalsPage seeds.
const benchProposals = 10_000

// BenchmarkProposalsPage drives the proposals inbox over 10,000 proposals
// (20 guilds, every state, each with its created event) from 50 signed-in
// clients like BenchmarkOverviewParallel, beside the overview page on the
// same database in the same run: the list (its first page and the counts
// per state), the list filtered to one state and one guild, and one
// proposal's page (a real kudos document against the guild's empty one:
// the diff, the history, the actions). Budget: p99 ≤ 20 ms each;
// ratio-to-overview is a page's p99 over the overview's.
func BenchmarkProposalsPage(b *testing.B) {
	h := newHarness(b)
	h.createAdmin()
	id := seedBenchProposals(b, h.st, benchProposals)
	var overview float64
	b.Run("overview", func(b *testing.B) { overview = benchPage(b, h, "/") })
	ratio := func(b *testing.B, p99 float64) {
		if overview > 0 {
			b.ReportMetric(p99/overview, "ratio-to-overview")
		}
	}
	b.Run("list", func(b *testing.B) { ratio(b, benchPage(b, h, "/proposals")) })
	b.Run("filtered", func(b *testing.B) { ratio(b, benchPage(b, h, "/proposals?state=pending&guild=1000000000000000007")) })
	b.Run("proposal", func(b *testing.B) { ratio(b, benchPage(b, h, "/proposals/"+id)) })
}

// seedBenchProposals writes n proposals for kudos' settings of 20 guilds
// in one transaction (a quarter in each state, newest last) with a created
// event each, and returns the id of the newest pending one.
func seedBenchProposals(b *testing.B, st *store.Store, n int) string {
	b.Helper()
	ctx := context.Background()
	content := "---\ndigest_channel_id: 123456789012345678\n---\n"
	rev := guildcfg.Revision(content)
	states := []string{"pending", "applied", "rejected", "rolled_back"}
	var last string
	err := st.Write(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO kimi_proposals (id, guild_id, target, module, summary, content, content_revision,
			base_exists, base_content, base_revision, actor_user_id, actor_source, actor_channel_id, state,
			decided_by_admin, decision_source, decided_ms, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, 0, '', ?, 555000000000000001, 'kudos:setup', 444000000000000001, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		ev, err := tx.PrepareContext(ctx, `INSERT INTO kimi_proposal_events (proposal_id, at_ms, kind, actor, source, detail, before_revision, after_revision)
			VALUES (?, ?, 'created', 'discord:555000000000000001', 'kudos:setup', '', ?, ?)`)
		if err != nil {
			return err
		}
		defer ev.Close()
		const t0 = int64(1_780_000_000_000)
		for i := range n {
			id := fmt.Sprintf("%032x", i+1)
			guild := uint64(1_000_000_000_000_000_000 + i%20)
			state := states[i%len(states)]
			admin, source, decided := "", "", int64(0)
			if state != "pending" {
				admin, source, decided = "admin", "web", t0+int64(i)*1000+500
			}
			created := t0 + int64(i)*1000
			if _, err := ins.ExecContext(ctx, id, guild, sdk.GuildModuleTarget(guild, kudos.Name), kudos.Name,
				fmt.Sprintf("Set the kudos digest channel (%d)", i), content, rev, guildcfg.EmptyRevision,
				state, admin, source, decided, created, created); err != nil {
				return err
			}
			if _, err := ev.ExecContext(ctx, id, created, guildcfg.EmptyRevision, rev); err != nil {
				return err
			}
			if state == "pending" {
				last = id
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return last
}
