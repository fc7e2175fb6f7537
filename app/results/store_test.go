package results

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestEnqueueRules: what a publication enqueues.
func TestEnqueueRules(t *testing.T) {
	e := newEnv(t)
	e.svc.Close(e.ctx) // rows stay as Enqueue wrote them
	e.svc = e.newService()
	for _, k := range []SubKey{{"kudos", "digest", guildA}, {"tally", "digest", guildA}, {"kudos", "digest", guildB}} {
		if _, err := e.st.Writer().Exec(`INSERT INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES (?, ?, ?, 1)`, k.Module, k.Name, k.GuildID); err != nil {
			t.Fatal(err)
		}
	}
	noID := func(p Publication) Publication {
		p.Messages = append([]sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: p.GuildID, ChannelID: 1}, Content: "log"}}, p.Messages...)
		return p
	}
	cases := []struct {
		name string
		edit func(Publication) Publication
		want int
		err  string
	}{
		{"one row per subscription of the guild", func(p Publication) Publication { return p }, 2, ""},
		{"not completed", func(p Publication) Publication { p.Outcome = "failed"; return p }, 0, ""},
		{"no message", func(p Publication) Publication { p.Messages = nil; return p }, 0, ""},
		{"no message id", func(p Publication) Publication { p.Messages[0].Message.MessageID = 0; return p }, 0, ""},
		{"message without id dropped", noID, 2, ""},
		{"empty run id", func(p Publication) Publication { p.RunID = ""; return p }, 0, "results: enqueue: run id must be 1-64 characters"},
		{"long task id", func(p Publication) Publication { p.TaskID = strings.Repeat("t", 65); return p }, 0, "results: enqueue: task id must be 1-64 characters"},
		{"guild 0", func(p Publication) Publication { p.GuildID = 0; return p }, 0, "results: enqueue: guild id must be a positive Discord id"},
		{"owner 0", func(p Publication) Publication { p.OwnerID = 0; return p }, 0, "results: enqueue: owner id must be a positive Discord id"},
		{"negative revision", func(p Publication) Publication { p.Revision = -1; return p }, 0, "results: enqueue: revision must not be negative"},
		{"no published time", func(p Publication) Publication { p.PublishedAt = time.Time{}; return p }, 0, "results: enqueue: published time is required"},
		{"guild without subscriptions", func(p Publication) Publication { p.GuildID = 999; return p }, 0, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.edit(e.pub("run-"+string(rune('a'+i)), guildA))
			var n int
			err := e.st.Write(e.ctx, func(tx *sql.Tx) error {
				var err error
				n, err = e.svc.Enqueue(e.ctx, tx, p)
				return err
			})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("Enqueue = %d, %v; want %d", n, err, tc.want)
			}
			rows := e.rows("run_id = ?", p.RunID)
			if len(rows) != tc.want {
				t.Fatalf("%d rows, want %d", len(rows), tc.want)
			}
			for _, r := range rows {
				if r.Guild != p.GuildID || r.Status != StatusPending || r.ExpiresMs != p.PublishedAt.Add(Retention).UnixMilli() || r.PublishedMs != p.PublishedAt.UnixMilli() {
					t.Fatalf("row = %+v", r)
				}
			}
			if tc.want == 0 {
				if n := e.count(`SELECT count(*) FROM kimi_result_publications WHERE run_id = ?`, p.RunID); n != 0 {
					t.Fatalf("publication stored without notifications")
				}
			}
		})
	}
	t.Run("repeat is a no-op", func(t *testing.T) {
		p := e.pub("run-repeat", guildA)
		if n := e.enqueue(p); n != 2 {
			t.Fatalf("first = %d", n)
		}
		p.Messages[0].Content = "changed"
		if n := e.enqueue(p); n != 0 {
			t.Fatalf("repeat = %d", n)
		}
		var msgs string
		if err := e.st.Reader().QueryRow(`SELECT messages FROM kimi_result_publications WHERE run_id = 'run-repeat'`).Scan(&msgs); err != nil || strings.Contains(msgs, "changed") {
			t.Fatalf("publication rewritten: %s %v", msgs, err)
		}
	})
	t.Run("rolled back with the producer", func(t *testing.T) {
		err := e.st.Write(e.ctx, func(tx *sql.Tx) error {
			if _, err := e.svc.Enqueue(e.ctx, tx, e.pub("run-rollback", guildA)); err != nil {
				return err
			}
			return errors.New("post failed")
		})
		if err == nil || e.count(`SELECT count(*) FROM kimi_result_notifications WHERE run_id = 'run-rollback'`) != 0 {
			t.Fatalf("rolled-back enqueue left rows (%v)", err)
		}
	})
}

// TestSubscribeValidation: the SDK's messages, in order.
func TestSubscribeValidation(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	h := (&recorder{}).handle
	const closedMsg = "Scheduled-result subscription is closed or undeclared"
	cases := []struct {
		name    string
		sub     string
		guild   uint64
		handler sdk.ScheduledResultHandler
		msg     string
		access  bool // a *ScheduledResultAccessError, else a contract error
	}{
		{"bad name", "Digest!", guildA, h, "scheduled-result names use 1-64 lowercase letters, digits or _", false},
		{"long name", strings.Repeat("a", 65), guildA, h, "scheduled-result names use 1-64 lowercase letters, digits or _", false},
		{"guild 0", "digest", 0, h, "scheduled-result subscriptions require a positive guild ID", false},
		{"undeclared", "other", guildA, h, closedMsg, true},
		{"nil handler", "digest", guildA, nil, "scheduled-result handler for 'digest' is nil", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := b.Subscribe(e.ctx, tc.sub, tc.guild, tc.handler)
			checkErr(t, "Subscribe", err, tc.msg, tc.access)
			if tc.handler != nil {
				checkErr(t, "Unsubscribe", b.Unsubscribe(e.ctx, tc.sub, tc.guild), tc.msg, tc.access)
			}
		})
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_subscriptions`); n != 0 {
		t.Fatalf("%d subscriptions written by refused calls", n)
	}
	b.Close()
	checkErr(t, "Subscribe after Close", b.Subscribe(e.ctx, "digest", guildA, h), closedMsg, true)
	checkErr(t, "Unsubscribe after Close", b.Unsubscribe(e.ctx, "digest", guildA), closedMsg, true)
}

func checkErr(t *testing.T, what string, err error, msg string, access bool) {
	t.Helper()
	var ce *sdk.ModuleContractError
	var ae *sdk.ScheduledResultAccessError
	if !errors.As(err, &ce) || ce.Message != msg || errors.As(err, &ae) != access {
		t.Fatalf("%s: %T %v, want %q (access error %v)", what, err, err, msg, access)
	}
}

// TestSubscribeReplacesHandler: subscribing again replaces the handler
// and keeps the one row (created_ms unchanged).
func TestSubscribeReplacesHandler(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	first, second := &recorder{}, &recorder{}
	e.subscribe(b, guildA, first)
	created := e.count(`SELECT created_ms FROM kimi_result_subscriptions`)
	e.clk.Advance(time.Minute)
	e.subscribe(b, guildA, second)
	if n := e.count(`SELECT count(*) FROM kimi_result_subscriptions`); n != 1 || e.count(`SELECT created_ms FROM kimi_result_subscriptions`) != created {
		t.Fatalf("subscriptions = %d", n)
	}
	e.enqueue(e.pub("run-1", guildA))
	e.waitStatus("run-1", StatusAcknowledged)
	if first.n() != 0 || second.n() != 1 {
		t.Fatalf("calls first %d second %d", first.n(), second.n())
	}
}

// TestClosedService: calls after Close fail with ErrClosed.
func TestClosedService(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	if err := e.svc.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe(e.ctx, "digest", guildA, (&recorder{}).handle); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe: %v", err)
	}
	err := e.st.Write(e.ctx, func(tx *sql.Tx) error {
		_, err := e.svc.Enqueue(e.ctx, tx, e.pub("run-1", guildA))
		return err
	})
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("Enqueue: %v", err)
	}
	if err := e.st.Write(e.ctx, func(tx *sql.Tx) error { return e.svc.RevokeRun(e.ctx, tx, "run-1") }); !errors.Is(err, ErrClosed) {
		t.Fatalf("RevokeRun: %v", err)
	}
}

// TestClipRunes: details are cut at DetailMax characters, not bytes.
func TestClipRunes(t *testing.T) {
	long := strings.Repeat("é", DetailMax+5)
	if got := clipRunes(long, DetailMax); got != strings.Repeat("é", DetailMax) {
		t.Fatalf("clip = %d runes", len([]rune(got)))
	}
	if got := clipRunes("short", DetailMax); got != "short" {
		t.Fatalf("clip = %q", got)
	}
}

// TestSettleClipsDetail: a long detail is stored cut to DetailMax.
func TestSettleClipsDetail(t *testing.T) {
	e := newEnv(t)
	e.svc.Close(e.ctx)
	s := e.newService()
	b, _ := e.bind(s, "kudos")
	e.subscribe(b, guildA, &recorder{})
	e.svc = s
	e.enqueue(e.pub("run-1", guildA))
	now := e.clk.Now().UnixMilli()
	var claims []*claim
	err := e.st.Write(e.ctx, func(tx *sql.Tx) error {
		var err error
		claims, err = s.claim(e.ctx, tx, now, 1, 1)
		if err != nil || len(claims) != 1 {
			return errors.Join(err, errors.New("no claim"))
		}
		_, err = s.settle(e.ctx, tx, outcome{c: claims[0], status: StatusRetry, detail: strings.Repeat("ü", 400)}, e.clk.Now(), countDeltas{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.one("run-1"); r.Detail != strings.Repeat("ü", DetailMax) || r.Status != StatusRetry {
		t.Fatalf("row = %q %s", r.Detail, r.Status)
	}
}

// FuzzParseSubKey: whatever parses round-trips through String, and
// String's form of a valid key parses back to it.
func FuzzParseSubKey(f *testing.F) {
	f.Add("kudos/digest/1001")
	f.Add("a/b/0")
	f.Add("a//18446744073709551615")
	f.Add("x/y/z/1")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseSubKey(s)
		if err != nil {
			return
		}
		if k.GuildID == 0 || k.Module == "" || k.Name == "" || strings.Contains(k.Module, "/") || strings.Contains(k.Name, "/") {
			t.Fatalf("ParseSubKey(%q) = %+v", s, k)
		}
		k2, err := ParseSubKey(k.String())
		if err != nil || k2 != k {
			t.Fatalf("round trip of %q: %+v %v", s, k2, err)
		}
	})
}

// FuzzEnqueueValidation: validatePublication never panics and accepts
// only what the schema's CHECKs accept.
func FuzzEnqueueValidation(f *testing.F) {
	f.Add("run", "task", 0, uint64(1), uint64(1))
	f.Add("", "task", -1, uint64(0), uint64(1<<63))
	f.Fuzz(func(t *testing.T, run, task string, rev int, guild, owner uint64) {
		p := Publication{RunID: run, TaskID: task, Revision: rev, GuildID: guild, OwnerID: owner, PublishedAt: time.UnixMilli(1)}
		if validatePublication(p) != nil {
			return
		}
		if len([]rune(run)) < 1 || len([]rune(run)) > 64 || len([]rune(task)) < 1 || len([]rune(task)) > 64 || rev < 0 ||
			guild == 0 || guild > 1<<63-1 || owner == 0 || owner > 1<<63-1 {
			t.Fatalf("accepted %+v", p)
		}
	})
}

// TestSettleGuards: a settle writes only under the claim's token, a live
// lease and before expiry; otherwise nothing (the lease is lost).
func TestSettleGuards(t *testing.T) {
	cases := []struct {
		name  string
		token string
		after time.Duration // clock at settle, after the claim
		pubAt time.Duration // publication time relative to the claim
		ok    bool
	}{
		{"valid", "", 0, 0, true},
		{"other token", "ffffffffffffffffffffffffffffffff", 0, 0, false},
		{"lease ran out", "", Lease, 0, false},
		{"expired within the lease", "", 20 * time.Second, -Retention + 10*time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.svc.Close(e.ctx)
			s := e.newService()
			e.svc = s
			b, _ := e.bind(s, "kudos")
			e.subscribe(b, guildA, &recorder{})
			p := e.pub("run-1", guildA)
			p.PublishedAt = e.clk.Now().Add(tc.pubAt)
			e.enqueue(p)
			var c *claim
			err := e.st.Write(e.ctx, func(tx *sql.Tx) error {
				cs, err := s.claim(e.ctx, tx, e.clk.Now().UnixMilli(), 1, 1)
				if err == nil && len(cs) != 1 {
					err = errors.New("nothing claimed")
				}
				if err == nil {
					c = cs[0]
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				c.token = tc.token
			}
			e.clk.Advance(tc.after)
			var ok bool
			err = e.st.Write(e.ctx, func(tx *sql.Tx) error {
				var err error
				ok, err = s.settle(e.ctx, tx, outcome{c: c, status: StatusAcknowledged}, e.clk.Now(), countDeltas{})
				return err
			})
			if err != nil || ok != tc.ok {
				t.Fatalf("settle = %v, %v; want %v", ok, err, tc.ok)
			}
			// A refused settle writes nothing: the row keeps its stored
			// status and the claim's lease.
			r := e.one("run-1")
			if want := map[bool]Status{true: StatusAcknowledged, false: StatusPending}[tc.ok]; r.Stored != want || (r.Token != "") == tc.ok {
				t.Fatalf("stored status = %s, token %q; want %s (leased: %v)", r.Stored, r.Token, want, !tc.ok)
			}
		})
	}
}
