package assistant

import (
	"context"
	"database/sql"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// answerStep answers every request with text, 100 prompt and 20
// completion tokens.
var answerStep = llmfake.Step{Repeat: true, Plan: llmfake.Plan{Content: []string{"Sure."}, Usage: llmfake.Usage{Prompt: 100, Completion: 20}}}

// newLimitRig is a turn rig whose assistant reads guild 1's policy from
// the real guild configuration (guildDoc, "" for a plain active guild),
// under the limits l.
func newLimitRig(t *testing.T, l settings.AssistantLimitsUpdate, guildDoc string, steps ...llmfake.Step) *turnRig {
	t.Helper()
	ctx := context.Background()
	r := newTurnRig(t, steps...)
	if guildDoc != "" {
		target := guildcfg.GuildTarget(1)
		doc, err := r.tools.guilds.Document(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.tools.guilds.Write(ctx, target, guildDoc, doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := settings.SaveAssistantLimits(ctx, r.st, l, settings.Actor{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	a, err := NewAssistant(AssistantOptions{Store: r.conv, Provider: r.a.o.Provider, Tools: r.tools.h, Guilds: r.tools.guilds,
		Settings: r.st, Clock: r.clock, Identity: r.a.o.Identity})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	r.a = a
	return r
}

func defaultLimits() settings.AssistantLimitsUpdate {
	return settings.AssistantLimitsUpdate{UserTurnsPer10Min: "10", UserDailyTokens: "100000", GuildDailyTokens: "1000000", MonthlyTokens: "0"}
}

// seedUsage adds tokens (as prompt tokens) to the roll-up's row of day,
// guild and user.
func (r *turnRig) seedUsage(t *testing.T, day string, guild, user uint64, tokens int64) {
	t.Helper()
	if err := r.st.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, turns)
			VALUES (?, ?, ?, 'seed', 1, ?, 1)`, day, int64(guild), int64(user), tokens)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func (r *turnRig) count(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := r.st.Reader().QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLimitsRefuseBeforeTheModel: a spent budget (the member's in this
// guild today, the guild's with and without its document's override, the
// monthly cap) refuses the trigger with its text before any row, ⏳ or
// request to the model, and counts a budget error; other guilds, other
// days and other months do not count; the owner is exempt, staff only
// with the setting.
func TestLimitsRefuseBeforeTheModel(t *testing.T) {
	const today, yesterday = "2031-03-04", "2031-03-03"
	doc := func(tokens string) string {
		return "---\nbot_active: true\nassistant:\n  daily_tokens: " + tokens + "\n---\n"
	}
	tests := []struct {
		name   string
		limits func(*settings.AssistantLimitsUpdate)
		doc    string
		seed   func(t *testing.T, r *turnRig)
		edit   func(*Incoming)
		refuse string // "" : answered
	}{
		{name: "member's budget spent", seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 5, 100_000) }, refuse: DailyBudgetText},
		{name: "member's budget almost spent", seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 5, 99_999) }},
		{name: "member's tokens in another guild", seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 2, 5, 100_000) }},
		{name: "member's tokens yesterday", seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, yesterday, 1, 5, 100_000) }},
		{name: "member's lower budget", limits: func(u *settings.AssistantLimitsUpdate) { u.UserDailyTokens = "2000" },
			seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 5, 2000) }, refuse: DailyBudgetText},
		{name: "guild's budget spent by others", seed: func(t *testing.T, r *turnRig) {
			r.seedUsage(t, today, 1, 6, 600_000)
			r.seedUsage(t, today, 1, 7, 400_000)
		}, refuse: DailyBudgetText},
		{name: "guild's override lower", doc: doc("5000"), seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 6, 5000) }, refuse: DailyBudgetText},
		{name: "guild's override higher", doc: doc("2000000"), seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 6, 1_000_000) }},
		{name: "monthly cap spent", limits: func(u *settings.AssistantLimitsUpdate) { u.MonthlyTokens = "50000" },
			seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, "2031-03-01", 3, 7, 50_000) }, refuse: MonthlyBudgetText},
		{name: "monthly cap, last month", limits: func(u *settings.AssistantLimitsUpdate) { u.MonthlyTokens = "50000" },
			seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, "2031-02-28", 3, 7, 50_000) }},
		{name: "monthly cap off", seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, "2031-03-01", 3, 7, 5_000_000) }},
		{name: "owner exempt", seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 5, 100_000) },
			edit: func(in *Incoming) { in.Owner = true }},
		{name: "staff not exempt by default", seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 5, 100_000) },
			edit: func(in *Incoming) { in.Tier = sdk.TierStaff }, refuse: DailyBudgetText},
		{name: "staff exempt with the setting", limits: func(u *settings.AssistantLimitsUpdate) { u.ExemptStaff = true },
			seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 5, 100_000) }, edit: func(in *Incoming) { in.Tier = sdk.TierStaff }},
		{name: "the setting does not exempt a member", limits: func(u *settings.AssistantLimitsUpdate) { u.ExemptStaff = true },
			seed: func(t *testing.T, r *turnRig) { r.seedUsage(t, today, 1, 5, 100_000) }, refuse: DailyBudgetText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := defaultLimits()
			if tt.limits != nil {
				tt.limits(&l)
			}
			r := newLimitRig(t, l, tt.doc, answerStep)
			tt.seed(t, r)
			in := incoming(77, "hi")
			if tt.edit != nil {
				tt.edit(&in)
			}
			s := r.run(t, in)
			reqs := len(r.fake.Requests())
			convs := r.count(t, `SELECT count(*) FROM kimi_assistant_conversations`)
			budget := r.count(t, `SELECT coalesce(sum(count), 0) FROM kimi_assistant_usage_errors WHERE kind = 'budget' AND user_id = 5 AND guild_id = 1`)
			if tt.refuse == "" {
				if reqs != 1 || convs != 1 || budget != 0 || !slices.Equal(s.Delivered(), []string{"Sure."}) {
					t.Fatalf("not answered: %d requests, %d conversations, %d budget errors, events %q", reqs, convs, budget, s.Events())
				}
				return
			}
			if got := s.Events(); !slices.Equal(got, []string{"busy " + tt.refuse}) {
				t.Errorf("events = %q, want only the refusal %q", got, tt.refuse)
			}
			if reqs != 0 || convs != 0 || budget != 1 {
				t.Errorf("%d requests, %d conversations, %d budget errors (want 0, 0, 1)", reqs, convs, budget)
			}
		})
	}
}

// TestRateLimitOneReplyThenSilence: past user_turns_per_10min a member's
// mention gets one reply with the wait, then nothing (no reply, no ⏳, no
// request) until the window frees on the clock; /ask is still answered
// (its deferred response must be), another guild has its own window, and
// each refusal is counted as rate_limit.
func TestRateLimitOneReplyThenSilence(t *testing.T) {
	l := defaultLimits()
	l.UserTurnsPer10Min = "2"
	r := newLimitRig(t, l, "", answerStep)
	msg := uint64(100)
	mention := func() *recSurface { msg++; return r.run(t, incoming(msg, "hi")) }
	answered := func(step string, s *recSurface, requests int) {
		t.Helper()
		if got := s.Delivered(); !slices.Equal(got, []string{"Sure."}) || len(r.fake.Requests()) != requests {
			t.Fatalf("%s: delivered %q, %d requests (want %d); events %q", step, got, len(r.fake.Requests()), requests, s.Events())
		}
	}
	answered("first", mention(), 1)
	r.clock.Advance(time.Minute)
	answered("second", mention(), 2)
	steps := []struct {
		name    string
		advance time.Duration
		kind    string
		guild   uint64
		want    []string
	}{
		{"third: the one reply", 0, KindMessage, 1, []string{"busy You're asking faster than I can answer. Try again in 540 s."}},
		{"fourth: silence", 2 * time.Minute, KindMessage, 1, nil},
		{"/ask: still answered", 30 * time.Second, KindAsk, 1, []string{"busy You're asking faster than I can answer. Try again in 390 s."}},
		{"fifth: silence", time.Minute, KindMessage, 1, nil},
	}
	for _, st := range steps {
		r.clock.Advance(st.advance)
		msg++
		in := incoming(msg, "hi")
		in.Kind = st.kind
		s := r.run(t, in)
		if got := s.Events(); !slices.Equal(got, st.want) {
			t.Fatalf("%s: events %q, want %q", st.name, got, st.want)
		}
		if n := len(r.fake.Requests()); n != 2 {
			t.Fatalf("%s: the model received %d requests (want 2)", st.name, n)
		}
	}
	other := incoming(500, "hi")
	other.Place.GuildID = 2
	answered("another guild", r.run(t, other), 3)
	// The first turn leaves the window at 10 min after it began: one
	// turn may start again.
	r.clock.Advance(10*time.Minute - (time.Minute + 2*time.Minute + 30*time.Second + time.Minute))
	answered("window freed", mention(), 4)
	if s := mention(); !slices.Equal(s.Events(), []string{"busy You're asking faster than I can answer. Try again in 60 s."}) {
		t.Fatalf("refilled window: events %q", s.Events())
	}
	if n := r.count(t, `SELECT coalesce(sum(count), 0) FROM kimi_assistant_usage_errors WHERE kind = 'rate_limit' AND user_id = 5`); n != 5 {
		t.Fatalf("%d rate_limit errors counted (want 5)", n)
	}
}

type usageRow struct {
	Model                                    string
	Calls, Prompt, Completion, Cached, Turns int64
}

// TestUsageRollupOfEachEnding: every response's tokens reach the day's
// roll-up under the model that served it, a turn that fails after a
// response still accounts them, the turn is counted once at its end, and
// its error ending by kind.
func TestUsageRollupOfEachEnding(t *testing.T) {
	tool := func(name string) llmfake.Step {
		return llmfake.Step{Match: llmfake.Match{Role: "user"}, Plan: llmfake.Plan{Calls: []llmfake.Call{{ID: "c1", Name: name, Args: []string{"{}"}}},
			Usage: llmfake.Usage{Prompt: 90, Completion: 5, Cached: 40}}}
	}
	then := func(p llmfake.Plan) llmfake.Step {
		return llmfake.Step{Match: llmfake.Match{ToolResultFor: "c1"}, Plan: p, Repeat: true}
	}
	tests := []struct {
		name    string
		steps   []llmfake.Step
		iterCap int
		status  string
		want    usageRow
		errors  map[string]int64
	}{
		{name: "done", steps: []llmfake.Step{answerStep}, status: StatusDone,
			want: usageRow{Calls: 1, Prompt: 100, Completion: 20, Turns: 1}},
		{name: "tool round then done", steps: []llmfake.Step{tool("hello_member"), then(llmfake.Plan{Content: []string{"Hi."}, Usage: llmfake.Usage{Prompt: 150, Completion: 3}})},
			status: StatusDone, want: usageRow{Calls: 2, Prompt: 240, Completion: 8, Cached: 40, Turns: 1}},
		{name: "tool error", steps: []llmfake.Step{tool("probe_err"), then(llmfake.Plan{Content: []string{"Oops."}, Usage: llmfake.Usage{Prompt: 150, Completion: 3}})},
			status: StatusDone, want: usageRow{Calls: 2, Prompt: 240, Completion: 8, Cached: 40, Turns: 1}, errors: map[string]int64{UsageToolError: 1}},
		{name: "provider 5xx after a response", steps: []llmfake.Step{tool("hello_member"), then(llmfake.Plan{Status: http.StatusInternalServerError})},
			status: StatusFailed, want: usageRow{Calls: 1, Prompt: 90, Completion: 5, Cached: 40, Turns: 1}, errors: map[string]int64{UsageProvider5xx: 1}},
		{name: "provider 4xx after a response", steps: []llmfake.Step{tool("hello_member"), then(llmfake.Plan{Status: http.StatusForbidden})},
			status: StatusFailed, want: usageRow{Calls: 1, Prompt: 90, Completion: 5, Cached: 40, Turns: 1}, errors: map[string]int64{UsageProvider4xx: 1}},
		{name: "iteration cap", steps: []llmfake.Step{tool("hello_member")}, iterCap: 1,
			status: StatusFailed, want: usageRow{Calls: 1, Prompt: 90, Completion: 5, Cached: 40, Turns: 1}, errors: map[string]int64{UsageIterationCap: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLimitRig(t, defaultLimits(), "", tt.steps...)
			if tt.iterCap > 0 {
				if _, err := settings.SaveAssistantBehaviour(context.Background(), r.st, settings.AssistantBehaviourUpdate{DMMode: settings.DMOff,
					TurnDeadline: settings.DefaultTurnDeadline, IterationCap: tt.iterCap}, settings.Actor{Name: "test"}); err != nil {
					t.Fatal(err)
				}
			}
			r.run(t, incoming(77, "hi"))
			if row := r.lastTurn(t); row.Status != tt.status {
				t.Fatalf("turn %+v, want %s", row, tt.status)
			}
			var got usageRow
			if err := r.st.Reader().QueryRow(`SELECT model, calls, prompt_tokens, completion_tokens, cached_tokens, turns FROM kimi_assistant_usage
				WHERE day = '2031-03-04' AND guild_id = 1 AND user_id = 5`).Scan(&got.Model, &got.Calls, &got.Prompt, &got.Completion, &got.Cached, &got.Turns); err != nil {
				t.Fatalf("roll-up row: %v", err)
			}
			tt.want.Model = r.lastTurn(t).Model
			if got != tt.want || got.Model == "" {
				t.Errorf("roll-up %+v, want %+v", got, tt.want)
			}
			rows, err := r.st.Reader().Query(`SELECT kind, count FROM kimi_assistant_usage_errors WHERE day = '2031-03-04' AND guild_id = 1 AND user_id = 5`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			errs := map[string]int64{}
			for rows.Next() {
				var k string
				var n int64
				if err := rows.Scan(&k, &n); err != nil {
					t.Fatal(err)
				}
				errs[k] = n
			}
			if len(errs) != len(tt.errors) {
				t.Fatalf("errors %v, want %v", errs, tt.errors)
			}
			for k, n := range tt.errors {
				if errs[k] != n {
					t.Fatalf("errors %v, want %v", errs, tt.errors)
				}
			}
		})
	}
}

// TestUsageStallKind: a stream that stalls is counted as provider_stall.
func TestUsageStallKind(t *testing.T) {
	r := newLimitRig(t, defaultLimits(), "", llmfake.Step{Repeat: true, Plan: llmfake.Plan{Fail: llmfake.FailStallBeforeHeaders}})
	client, err := llm.New(llm.Options{BaseURL: r.fake.URL(), Model: "fake-model", Transport: http.DefaultTransport, StallTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAssistant(AssistantOptions{Store: r.conv, Provider: providerFunc(func() llm.Provider { return client }), Tools: r.tools.h,
		Settings: r.st, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	r.a = a
	r.run(t, incoming(77, "hi"))
	if n := r.count(t, `SELECT coalesce(sum(count), 0) FROM kimi_assistant_usage_errors WHERE kind = 'provider_stall'`); n != 1 {
		t.Fatalf("%d provider_stall errors; turn %+v", n, r.lastTurn(t))
	}
	if n := r.count(t, `SELECT turns FROM kimi_assistant_usage WHERE model = ''`); n != 1 {
		t.Fatalf("the turn without a response is counted %d times under model ''", n)
	}
}

// TestUsagePrunedOnceADay: the first roll-up write of a UTC day deletes
// the rows older than 365 days, and later writes that day do not run it
// again.
func TestUsagePrunedOnceADay(t *testing.T) {
	r := newLimitRig(t, defaultLimits(), "", answerStep)
	old, kept := "2030-03-03", "2030-03-05" // 366 and 364 days before 2031-03-04
	r.seedUsage(t, old, 1, 8, 10)
	r.seedUsage(t, kept, 1, 8, 10)
	if err := r.st.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count) VALUES (?, 1, 8, 'busy', 1)`, old)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r.run(t, incoming(77, "hi"))
	if n := r.count(t, `SELECT count(*) FROM kimi_assistant_usage WHERE day = ?`, old); n != 0 {
		t.Fatal("a row older than 365 days was kept")
	}
	if n := r.count(t, `SELECT count(*) FROM kimi_assistant_usage_errors WHERE day = ?`, old); n != 0 {
		t.Fatal("an error row older than 365 days was kept")
	}
	if n := r.count(t, `SELECT count(*) FROM kimi_assistant_usage WHERE day = ?`, kept); n != 1 {
		t.Fatal("a row of 364 days ago was pruned")
	}
	r.seedUsage(t, "2030-03-02", 1, 8, 10)
	r.clock.Advance(time.Hour)
	r.run(t, incoming(78, "hi"))
	if n := r.count(t, `SELECT count(*) FROM kimi_assistant_usage WHERE day = '2030-03-02'`); n != 1 {
		t.Fatal("the pruning ran twice in a day")
	}
	r.clock.Advance(24 * time.Hour)
	r.run(t, incoming(79, "hi"))
	if n := r.count(t, `SELECT count(*) FROM kimi_assistant_usage WHERE day = '2030-03-02'`); n != 0 {
		t.Fatal("the next day's first write kept a row older than 365 days")
	}
	if n := r.count(t, `SELECT count(*) FROM kimi_assistant_usage WHERE day = ?`, kept); n != 1 {
		t.Fatal("a row of exactly 365 days ago was pruned")
	}
}
