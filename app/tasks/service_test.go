package tasks

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

type world struct {
	st  *store.Store
	res *results.Service
	svc *Service
	clk *clock
	chk *fakeChecker
}

func newWorld(t *testing.T, start time.Time) *world {
	t.Helper()
	st := openStore(t)
	logger := slog.New(slog.DiscardHandler)
	res, err := results.New(results.Options{Store: st, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: start}
	svc, err := New(Options{Store: st, Results: res, Logger: logger, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return &world{st: st, res: res, svc: svc, clk: clk, chk: newChecker()}
}

func (w *world) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := w.st.Reader().QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

type auditRow struct{ actor, action, target string }

func (w *world) audit(t *testing.T) []auditRow {
	t.Helper()
	rows, err := w.st.Reader().Query(`SELECT actor, action, target FROM kimi_audit_log WHERE action LIKE 'tasks.%' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var a auditRow
		if err := rows.Scan(&a.actor, &a.action, &a.target); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

var t0 = time.Date(2026, time.December, 1, 12, 0, 0, 0, time.UTC)

// TestCreateRefusals: a disabled policy and a bad definition save nothing
// (no task, revision, file or audit row); the disabled message is the
// documented one.
func TestCreateRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		policy guildcfg.TaskPolicy
		def    func() Definition
		check  func(t *testing.T, err error)
	}{
		{"disabled", guildcfg.TaskPolicy{}, validDef, func(t *testing.T, err error) {
			if !errors.Is(err, ErrDisabled) || err.Error() != "Scheduled tasks are disabled in this server" {
				t.Fatalf("err = %v, want ErrDisabled", err)
			}
		}},
		{"invalid", enabled, func() Definition { d := validDef(); d.Destinations = []uint64{103}; d.Name = ""; return d }, func(t *testing.T, err error) {
			var de *DefinitionError
			if !errors.As(err, &de) || de.Fields[FieldName] == "" || de.Fields[FieldDestinations] == "" {
				t.Fatalf("err = %v, want a DefinitionError on name and destinations", err)
			}
		}},
		{"once in the past", enabled, func() Definition {
			d := validDef()
			d.Schedule = map[string]string{FieldKind: "once", FieldAt: "2026-11-30 12:00", FieldTimezone: "UTC"}
			return d
		}, func(t *testing.T, err error) {
			var de *DefinitionError
			if !errors.As(err, &de) || de.Fields[FieldAt] != "the schedule has no occurrence in the future" {
				t.Fatalf("err = %v, want a DefinitionError on at", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, t0)
			_, err := w.svc.Create(ctx, "alice", tc.policy, w.chk, tc.def())
			tc.check(t, err)
			for _, q := range []string{`SELECT count(*) FROM kimi_tasks`, `SELECT count(*) FROM kimi_task_revisions`, `SELECT count(*) FROM kimi_task_files`,
				`SELECT count(*) FROM kimi_audit_log WHERE action LIKE 'tasks.%'`} {
				if n := w.count(t, q); n != 0 {
					t.Errorf("%s = %d after a refused create", q, n)
				}
			}
		})
	}
}

// TestLifecycle: create, update, pause, resume and delete, each with its
// audit row by the admin; an update is a new revision and the old one
// (and a run made from it) keeps its definition and files.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, t0)
	task, err := w.svc.Create(ctx, "alice", enabled, w.chk, validDef())
	if err != nil {
		t.Fatal(err)
	}
	if len(task.ID) != 32 || task.Revision != 1 || task.State != StateActive || task.Name != "Morning digest" || task.GuildID != testGuild {
		t.Fatalf("created %+v", task)
	}
	// Daily 09:00 Berlin, created 12:00 UTC on Dec 1: next is Dec 2 08:00 UTC.
	if want := time.Date(2026, time.December, 2, 8, 0, 0, 0, time.UTC); !task.NextDue.Equal(want) {
		t.Errorf("NextDue = %v, want %v", task.NextDue, want)
	}
	if got := task.Definition.Attachments; len(got) != 1 || got[0] != (AttachmentMeta{Name: "agenda.txt", Size: 6}) {
		t.Errorf("attachments = %+v", got)
	}

	if got := task.Definition.Schedule[FieldTimezone]; got != "Europe/Berlin" {
		t.Errorf("stored timezone = %q", got)
	}
	noZone := validDef()
	delete(noZone.Schedule, FieldTimezone)
	nz, err := w.svc.Create(ctx, "alice", guildcfg.TaskPolicy{Enabled: true, Timezone: "America/New_York"}, w.chk, noZone)
	if err != nil {
		t.Fatal(err)
	}
	// The policy's zone: 09:00 New York is 14:00 UTC.
	if got, want := nz.NextDue, time.Date(2026, time.December, 1, 14, 0, 0, 0, time.UTC); nz.Definition.Schedule[FieldTimezone] != "America/New_York" || !got.Equal(want) {
		t.Errorf("zone from the policy: %q, NextDue %v, want %v", nz.Definition.Schedule[FieldTimezone], got, want)
	}
	if err := w.svc.Delete(ctx, "alice", nz.ID); err != nil {
		t.Fatal(err)
	}

	w.clk.t = time.Date(2026, time.December, 2, 8, 0, 5, 0, time.UTC)
	adv, err := w.svc.Advance(ctx, task.ID, w.clk.t)
	if err != nil || adv.RunID == "" {
		t.Fatalf("Advance = %+v, %v", adv, err)
	}

	w.clk.advance(time.Minute)
	d := validDef()
	d.Name = "Evening digest"
	d.Template = "Good evening"
	d.Files = []Attachment{{Name: "b.txt", Data: []byte("bb")}}
	d.Schedule = map[string]string{FieldKind: "daily", FieldTime: "18:00", FieldTimezone: "Europe/Berlin"}
	up, err := w.svc.Update(ctx, "bob", task.ID, enabled, w.chk, d)
	if err != nil {
		t.Fatal(err)
	}
	if up.Revision != 2 || up.Name != "Evening digest" || up.Definition.Template != "Good evening" {
		t.Fatalf("updated %+v", up)
	}
	if want := time.Date(2026, time.December, 2, 17, 0, 0, 0, time.UTC); !up.NextDue.Equal(want) {
		t.Errorf("NextDue after update = %v, want %v", up.NextDue, want)
	}
	old, err := w.svc.Revision(ctx, task.ID, 1)
	if err != nil || old.Template != validDef().Template || len(old.Files) != 1 || string(old.Files[0].Data) != "agenda" {
		t.Fatalf("revision 1 = %+v, %v", old, err)
	}
	runs, err := w.svc.Runs(ctx, task.ID, 10)
	if err != nil || len(runs) != 1 || runs[0].Revision != 1 || runs[0].Status != RunPending {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	// A bad edit saves nothing.
	bad := d
	bad.Destinations = []uint64{900}
	if _, err := w.svc.Update(ctx, "bob", task.ID, enabled, w.chk, bad); err == nil {
		t.Fatal("a bad edit was saved")
	}
	moved := d
	moved.GuildID = 43
	if _, err := w.svc.Update(ctx, "bob", task.ID, enabled, w.chk, moved); err == nil {
		t.Fatal("a task moved to another guild")
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_task_revisions WHERE task_id = ?`, task.ID); n != 2 {
		t.Errorf("%d revisions after a refused edit, want 2", n)
	}

	p, err := w.svc.SetPaused(ctx, "carol", task.ID, true)
	if err != nil || p.State != StatePaused {
		t.Fatalf("pause = %+v, %v", p, err)
	}
	if _, err := w.svc.SetPaused(ctx, "carol", task.ID, true); err != nil { // no-op, no audit
		t.Fatal(err)
	}
	if due, err := w.svc.DueTasks(ctx, w.clk.t.Add(48*time.Hour), 10); err != nil || len(due) != 0 {
		t.Errorf("a paused task is due: %+v, %v", due, err)
	}
	w.clk.t = time.Date(2026, time.December, 3, 20, 0, 0, 0, time.UTC) // a missed 18:00
	r, err := w.svc.SetPaused(ctx, "carol", task.ID, false)
	if err != nil || r.State != StateActive {
		t.Fatalf("resume = %+v, %v", r, err)
	}
	if want := time.Date(2026, time.December, 4, 17, 0, 0, 0, time.UTC); !r.NextDue.Equal(want) {
		t.Errorf("NextDue after resume = %v, want %v (no catch-up of the paused time)", r.NextDue, want)
	}
	if !r.LastDue.Equal(w.clk.t) {
		t.Errorf("LastDue after resume = %v, want the resume time %v (the runner plans from it)", r.LastDue, w.clk.t)
	}

	if err := w.svc.Delete(ctx, "dave", task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Get(ctx, task.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after delete: %v", err)
	}
	if err := w.svc.Delete(ctx, "dave", task.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v", err)
	}
	want := []auditRow{
		{"alice", ActionCreate, task.ID}, {"alice", ActionCreate, nz.ID}, {"alice", ActionDelete, nz.ID}, {"bob", ActionUpdate, task.ID}, {"carol", ActionPause, task.ID},
		{"carol", ActionResume, task.ID}, {"dave", ActionDelete, task.ID},
	}
	if got := w.audit(t); !slices.Equal(got, want) {
		t.Errorf("audit = %+v\nwant %+v", got, want)
	}
}

// TestDeleteCascadesAndRevokes: deleting a task deletes its revisions,
// files, runs and posts, and its publication in the results outbox (with
// its notification) in the same transaction; another task's stays.
func TestDeleteCascadesAndRevokes(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, t0)
	if _, err := w.st.Writer().Exec(`INSERT INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES ('kudos', 'digest', ?, 1)`, int64(testGuild)); err != nil {
		t.Fatal(err)
	}
	var ids, runs []string
	for range 2 {
		task, err := w.svc.Create(ctx, "alice", enabled, w.chk, validDef())
		if err != nil {
			t.Fatal(err)
		}
		adv, err := w.svc.Advance(ctx, task.ID, task.NextDue)
		if err != nil || adv.RunID == "" {
			t.Fatalf("Advance = %+v, %v", adv, err)
		}
		err = w.st.Write(ctx, func(tx *sql.Tx) error {
			if _, err := tx.Exec(`INSERT INTO kimi_task_posts (run_id, seq, chunk_index, chunk_total, channel_id, kind, content, status, message_id)
				VALUES (?, 1, 1, 1, 100, 'post', 'hi', 'sent', 555)`, adv.RunID); err != nil {
				return err
			}
			n, err := w.res.Enqueue(ctx, tx, results.Publication{RunID: adv.RunID, TaskID: task.ID, Revision: 1, GuildID: testGuild, OwnerID: testOwner,
				PublishedAt: w.clk.t, Outcome: sdk.ResultCompleted,
				Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: testGuild, ChannelID: 100, MessageID: 555}, Content: "hi"}}})
			if err == nil && n != 1 {
				t.Errorf("Enqueue made %d notifications, want 1", n)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		ids, runs = append(ids, task.ID), append(runs, adv.RunID)
	}
	if err := w.svc.Delete(ctx, "alice", ids[0]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    string
		arg  string
		want [2]int // rows of the deleted task, of the other
	}{
		{`SELECT count(*) FROM kimi_tasks WHERE id = ?`, "task", [2]int{0, 1}},
		{`SELECT count(*) FROM kimi_task_revisions WHERE task_id = ?`, "task", [2]int{0, 1}},
		{`SELECT count(*) FROM kimi_task_files WHERE task_id = ?`, "task", [2]int{0, 1}},
		{`SELECT count(*) FROM kimi_task_runs WHERE task_id = ?`, "task", [2]int{0, 1}},
		{`SELECT count(*) FROM kimi_task_posts WHERE run_id = ?`, "run", [2]int{0, 1}},
		{`SELECT count(*) FROM kimi_result_publications WHERE task_id = ?`, "task", [2]int{0, 1}},
		{`SELECT count(*) FROM kimi_result_notifications WHERE run_id = ?`, "run", [2]int{0, 1}},
	} {
		for i := range 2 {
			arg := ids[i]
			if c.arg == "run" {
				arg = runs[i]
			}
			if n := w.count(t, c.q, arg); n != c.want[i] {
				t.Errorf("%s [task %d] = %d, want %d", c.q, i, n, c.want[i])
			}
		}
	}
}

// TestListPages: keyset pages, newest first, of all guilds or one, with
// no task repeated or lost.
func TestListPages(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, t0)
	chk := w.chk
	var all, ofGuild []string
	for i := range 7 {
		d := validDef()
		d.Destinations = []uint64{100}
		if i%3 == 0 {
			d.GuildID = 43 // the fake checker knows no channel of 43: give it one
		}
		var task Task
		var err error
		if d.GuildID == 43 {
			task, err = w.svc.Create(ctx, "alice", enabled, guildChecker{chk}, d)
		} else {
			task, err = w.svc.Create(ctx, "alice", enabled, chk, d)
			ofGuild = append([]string{task.ID}, ofGuild...)
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append([]string{task.ID}, all...)
		if i != 3 { // two tasks in the same millisecond: the id breaks the tie
			w.clk.advance(time.Second)
		}
	}
	for _, tc := range []struct {
		name  string
		guild uint64
		limit int
		want  []string
	}{
		{"all by 3", 0, 3, all},
		{"all by 1", 0, 1, all},
		{"all at once", 0, 0, all},
		{"guild by 2", testGuild, 2, ofGuild},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			cursor, pages := "", 0
			for {
				p, err := w.svc.List(ctx, ListOptions{GuildID: tc.guild, After: cursor, Limit: tc.limit})
				if err != nil {
					t.Fatal(err)
				}
				pages++
				if tc.limit > 0 && len(p.Tasks) > tc.limit {
					t.Fatalf("page of %d, limit %d", len(p.Tasks), tc.limit)
				}
				for _, task := range p.Tasks {
					got = append(got, task.ID)
				}
				if p.Next == "" {
					break
				}
				cursor = p.Next
				if pages > 20 {
					t.Fatal("no end of pages")
				}
			}
			// created_ms DESC, id DESC: the two tasks of one millisecond
			// come in id order, so compare as sets and check the order.
			if !slices.Equal(sortedCopy(got), sortedCopy(tc.want)) || len(got) != len(tc.want) {
				t.Fatalf("pages = %v, want %v", got, tc.want)
			}
			if !slices.IsSortedFunc(got, func(a, b string) int { return w.order(t, b, a) }) {
				t.Errorf("not newest first: %v", got)
			}
		})
	}
	if _, err := w.svc.List(ctx, ListOptions{After: "garbage"}); err == nil {
		t.Error("a bad cursor was accepted")
	}
}

func sortedCopy(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }

// order compares two tasks by (created_ms, id).
func (w *world) order(t *testing.T, a, b string) int {
	var ca, cb int64
	_ = w.st.Reader().QueryRow(`SELECT created_ms FROM kimi_tasks WHERE id = ?`, a).Scan(&ca)
	_ = w.st.Reader().QueryRow(`SELECT created_ms FROM kimi_tasks WHERE id = ?`, b).Scan(&cb)
	switch {
	case ca != cb:
		return int(ca - cb)
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// guildChecker is the fake checker for guild 43 too.
type guildChecker struct{ *fakeChecker }

func (g guildChecker) ChannelKind(ctx context.Context, _, channel uint64) (ChannelKind, error) {
	return g.fakeChecker.ChannelKind(ctx, testGuild, channel)
}

// TestNextDueAcrossDST: the stored next occurrence and the runs Advance
// makes follow the schedule's wall time across DST changes in two zones
// (a skipped hour runs at the shifted time, a repeated one once).
func TestNextDueAcrossDST(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		zone    string
		at      string
		created time.Time
		runs    []time.Time // the next occurrences in order, UTC
	}{
		{"New York spring forward", "America/New_York", "02:30", time.Date(2026, time.March, 7, 12, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, time.March, 8, 7, 30, 0, 0, time.UTC), // 02:30 EST does not exist: 03:30 EDT
			time.Date(2026, time.March, 9, 6, 30, 0, 0, time.UTC), // 02:30 EDT
		}},
		{"New York fall back", "America/New_York", "01:30", time.Date(2026, time.October, 31, 12, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, time.November, 1, 5, 30, 0, 0, time.UTC), // the first 01:30 (EDT), once
			time.Date(2026, time.November, 2, 6, 30, 0, 0, time.UTC), // 01:30 EST
		}},
		{"Berlin spring forward", "Europe/Berlin", "02:30", time.Date(2026, time.March, 28, 12, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, time.March, 29, 1, 30, 0, 0, time.UTC), // 03:30 CEST
			time.Date(2026, time.March, 30, 0, 30, 0, 0, time.UTC),
		}},
		{"Berlin fall back", "Europe/Berlin", "02:30", time.Date(2026, time.October, 24, 12, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, time.October, 25, 0, 30, 0, 0, time.UTC), // 02:30 CEST, once
			time.Date(2026, time.October, 26, 1, 30, 0, 0, time.UTC), // 02:30 CET
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.created)
			d := validDef()
			d.Schedule = map[string]string{FieldKind: "daily", FieldTime: tc.at, FieldTimezone: tc.zone}
			task, err := w.svc.Create(ctx, "alice", enabled, w.chk, d)
			if err != nil {
				t.Fatal(err)
			}
			if !task.NextDue.Equal(tc.runs[0]) {
				t.Fatalf("NextDue = %v, want %v", task.NextDue, tc.runs[0])
			}
			for i, due := range tc.runs {
				adv, err := w.svc.Advance(ctx, task.ID, due.Add(time.Second))
				if err != nil || adv.RunID == "" || !adv.Plan.Run.Equal(due) {
					t.Fatalf("Advance %d = %+v, %v; want a run due %v", i, adv, err, due)
				}
				got, err := w.svc.Get(ctx, task.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !got.LastDue.Equal(due) {
					t.Errorf("LastDue = %v, want %v", got.LastDue, due)
				}
				if i+1 < len(tc.runs) && !got.NextDue.Equal(tc.runs[i+1]) {
					t.Errorf("NextDue = %v, want %v", got.NextDue, tc.runs[i+1])
				}
				if i+1 < len(tc.runs) {
					if due, err := w.svc.DueTasks(ctx, tc.runs[i+1], 10); err != nil || len(due) != 1 || due[0].ID != task.ID {
						t.Errorf("DueTasks at the next occurrence = %+v, %v", due, err)
					}
				}
			}
			runs, err := w.svc.Runs(ctx, task.ID, 10)
			if err != nil || len(runs) != len(tc.runs) || !runs[0].Due.Equal(tc.runs[len(tc.runs)-1]) {
				t.Errorf("runs = %+v, %v (newest first)", runs, err)
			}
		})
	}
}

// TestAdvanceSkipped: after an outage, catch_up runs the latest missed
// occurrence and records the earlier ones as skipped; skip records them
// all and runs nothing; a paused task is not advanced.
func TestAdvanceSkipped(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		late        string
		wantRun     bool
		wantSkipped int64
	}{
		{"catch_up", true, 11},
		{"skip", false, 12},
	} {
		t.Run(tc.late, func(t *testing.T) {
			w := newWorld(t, t0)
			d := validDef()
			d.Schedule = map[string]string{FieldKind: "interval", FieldEvery: "5m", FieldTimezone: "UTC", FieldLate: tc.late}
			task, err := w.svc.Create(ctx, "alice", enabled, w.chk, d)
			if err != nil {
				t.Fatal(err)
			}
			if want := t0.Add(5 * time.Minute); !task.NextDue.Equal(want) {
				t.Fatalf("NextDue = %v, want %v", task.NextDue, want)
			}
			now := t0.Add(62 * time.Minute) // 12 occurrences missed, the last 2 minutes late: an outage
			adv, err := w.svc.Advance(ctx, task.ID, now)
			if err != nil {
				t.Fatal(err)
			}
			if (adv.RunID != "") != tc.wantRun || adv.SkippedRunID == "" || adv.Plan.SkippedCount != tc.wantSkipped {
				t.Fatalf("Advance = %+v", adv)
			}
			runs, err := w.svc.Runs(ctx, task.ID, 10)
			if err != nil {
				t.Fatal(err)
			}
			var skipped *Run
			for i := range runs {
				if runs[i].Status == RunSkipped {
					skipped = &runs[i]
				}
			}
			if skipped == nil || skipped.SkippedCount != tc.wantSkipped || !skipped.Due.Equal(t0.Add(5*time.Minute)) || skipped.Detail == "" {
				t.Fatalf("skipped row = %+v", skipped)
			}
			got, err := w.svc.Get(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := t0.Add(65 * time.Minute); !got.NextDue.Equal(want) {
				t.Errorf("NextDue = %v, want %v", got.NextDue, want)
			}
			if _, err := w.svc.SetPaused(ctx, "alice", task.ID, true); err != nil {
				t.Fatal(err)
			}
			if adv, err := w.svc.Advance(ctx, task.ID, now.Add(time.Hour)); err != nil || adv.RunID != "" || adv.SkippedRunID != "" {
				t.Errorf("a paused task advanced: %+v, %v", adv, err)
			}
		})
	}
}

// TestRecordSkipped: RecordSkipped records a plan's skipped occurrences
// as one row with their count and the first's due time, and nothing for
// a plan without any; it leaves the task's occurrences to Advance.
func TestRecordSkipped(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, t0)
	task, err := w.svc.Create(ctx, "alice", enabled, w.chk, validDef())
	if err != nil {
		t.Fatal(err)
	}
	first := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		plan Plan
		want int64 // 0: no row
	}{
		{"none", Plan{}, 0},
		{"one", Plan{Skipped: []time.Time{first}, SkippedCount: 1}, 1},
		{"bounded list, full count", Plan{Skipped: []time.Time{first, first.Add(time.Hour)}, SkippedCount: 500}, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := w.svc.RecordSkipped(ctx, task.ID, tc.plan)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				if id != "" {
					t.Fatalf("a row %s for no skipped occurrence", id)
				}
				return
			}
			runs, err := w.svc.Runs(ctx, task.ID, 50)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(runs, func(r Run) bool { return r.ID == id })
			if i < 0 || runs[i].Status != RunSkipped || runs[i].SkippedCount != tc.want || !runs[i].Due.Equal(first) || runs[i].Revision != 1 || runs[i].FinishedAt.IsZero() {
				t.Fatalf("row %s in %+v", id, runs)
			}
		})
	}
	got, err := w.svc.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.LastDue.Equal(task.LastDue) || !got.NextDue.Equal(task.NextDue) {
		t.Errorf("RecordSkipped moved the occurrences: %v/%v, were %v/%v", got.LastDue, got.NextDue, task.LastDue, task.NextDue)
	}
	if _, err := w.svc.RecordSkipped(ctx, "0123456789abcdef0123456789abcdef", Plan{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("RecordSkipped of no task: %v", err)
	}
}
