package tasks

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func ts(t testing.TB, v string) time.Time {
	t.Helper()
	tt, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("bad test time %q: %v", v, err)
	}
	return tt
}

func mustParse(t testing.TB, fields map[string]string) Schedule {
	t.Helper()
	s, fe := ParseSchedule(fields)
	if fe != nil {
		t.Fatalf("ParseSchedule(%v): %v", fields, fe)
	}
	return s
}

// nexts returns n successive occurrences after after.
func nexts(t testing.TB, s Schedule, after time.Time, n int) []time.Time {
	t.Helper()
	var out []time.Time
	for range n {
		next, ok := s.Next(after)
		if !ok {
			break
		}
		if !next.After(after) {
			t.Fatalf("Next(%s) = %s, not after", after, next)
		}
		out = append(out, next)
		after = next
	}
	return out
}

type nextCase struct {
	name   string
	fields map[string]string
	after  string
	want   []string // RFC 3339 with the local offset; fewer than asked = no more
	n      int
}

func runNextCases(t *testing.T, cases []nextCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.fields)
			n := c.n
			if n == 0 {
				n = len(c.want)
			}
			got := nexts(t, s, ts(t, c.after), n)
			if len(got) != len(c.want) {
				t.Fatalf("got %d occurrences %v, want %v", len(got), got, c.want)
			}
			loc, _ := time.LoadLocation(s.Timezone)
			for i, w := range c.want {
				if !got[i].Equal(ts(t, w)) {
					t.Errorf("occurrence %d = %s, want %s", i, got[i].In(loc).Format(time.RFC3339), w)
				}
				if g := got[i].Format(time.RFC3339); g != w {
					t.Errorf("occurrence %d shown as %s, want %s (the schedule's zone)", i, g, w)
				}
			}
		})
	}
}

func TestNextEveryKind(t *testing.T) {
	berlin := func(kv ...string) map[string]string {
		m := map[string]string{"timezone": "Europe/Berlin"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	runNextCases(t, []nextCase{
		{name: "once ahead", fields: berlin("kind", "once", "at", "2026-12-24 18:00"),
			after: "2026-12-01T00:00:00Z", want: []string{"2026-12-24T18:00:00+01:00"}, n: 3},
		{name: "once a nanosecond before", fields: berlin("kind", "once", "at", "2026-12-24 18:00"),
			after: "2026-12-24T16:59:59.999999999Z", want: []string{"2026-12-24T18:00:00+01:00"}, n: 2},
		{name: "once at its instant is past", fields: berlin("kind", "once", "at", "2026-12-24 18:00"),
			after: "2026-12-24T17:00:00Z", want: nil, n: 1},
		{name: "interval before anchor starts at anchor", fields: map[string]string{"kind": "interval", "every": "15m", "timezone": "UTC", "anchor": "2026-12-01T09:07:00Z"},
			after: "2026-12-01T08:00:00Z", want: []string{"2026-12-01T09:07:00Z", "2026-12-01T09:22:00Z"}},
		{name: "interval anchored, not from after", fields: map[string]string{"kind": "interval", "every": "15m", "timezone": "UTC", "anchor": "2026-12-01T09:07:00Z"},
			after: "2026-12-01T09:30:17.5Z", want: []string{"2026-12-01T09:37:00Z", "2026-12-01T09:52:00Z", "2026-12-01T10:07:00Z"}},
		{name: "interval exactly on an occurrence", fields: map[string]string{"kind": "interval", "every": "90s", "timezone": "UTC", "anchor": "2026-12-01T09:00:00Z"},
			after: "2026-12-01T09:03:00Z", want: []string{"2026-12-01T09:04:30Z"}},
		{name: "interval zero anchor is the epoch", fields: map[string]string{"kind": "interval", "every": "15m", "timezone": "UTC"},
			after: "2026-12-01T09:01:00Z", want: []string{"2026-12-01T09:15:00Z"}},
		{name: "daily strictly after", fields: berlin("kind", "daily", "time", "09:00"),
			after: "2026-12-01T08:00:00Z", want: []string{"2026-12-02T09:00:00+01:00", "2026-12-03T09:00:00+01:00"}},
		{name: "daily later today", fields: berlin("kind", "daily", "time", "23:59"),
			after: "2026-12-01T08:00:00Z", want: []string{"2026-12-01T23:59:00+01:00"}},
		{name: "weekdays skip the weekend", fields: berlin("kind", "weekdays", "time", "09:00"),
			after: "2026-12-04T08:00:00Z", // Friday 09:00 itself
			want:  []string{"2026-12-07T09:00:00+01:00", "2026-12-08T09:00:00+01:00", "2026-12-09T09:00:00+01:00", "2026-12-10T09:00:00+01:00", "2026-12-11T09:00:00+01:00", "2026-12-14T09:00:00+01:00"}},
		{name: "weekly on monday", fields: berlin("kind", "weekly", "weekday", "monday", "time", "07:15"),
			after: "2026-12-01T00:00:00Z", want: []string{"2026-12-07T07:15:00+01:00", "2026-12-14T07:15:00+01:00"}},
		{name: "weekly on sunday late evening", fields: map[string]string{"kind": "weekly", "weekday": "sun", "time": "23:30", "timezone": "Asia/Tokyo"},
			after: "2026-12-01T00:00:00Z", want: []string{"2026-12-06T23:30:00+09:00", "2026-12-13T23:30:00+09:00"}},
		{name: "monthly on the 15th", fields: berlin("kind", "monthly", "day", "15", "time", "12:00"),
			after: "2026-11-20T00:00:00Z", want: []string{"2026-12-15T12:00:00+01:00", "2027-01-15T12:00:00+01:00"}},
	})
}

// TestNextDST: a wall time in the spring-forward gap runs once at the
// shifted time (02:30 → 03:30, as systemd); one in the repeated hour runs
// once, at its first occurrence — in two zones, for daily, weekly, monthly
// and once.
func TestNextDST(t *testing.T) {
	ny := func(kv ...string) map[string]string {
		m := map[string]string{"timezone": "America/New_York"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	be := func(kv ...string) map[string]string {
		m := ny(kv...)
		m["timezone"] = "Europe/Berlin"
		return m
	}
	runNextCases(t, []nextCase{
		// America/New_York 2026: 02:00 EST → 03:00 EDT on Sun Mar 8; 02:00 EDT → 01:00 EST on Sun Nov 1.
		{name: "NY daily in the gap", fields: ny("kind", "daily", "time", "02:30"), after: "2026-03-07T00:00:00Z",
			want: []string{"2026-03-07T02:30:00-05:00", "2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{name: "NY daily at the gap's start", fields: ny("kind", "daily", "time", "02:00"), after: "2026-03-07T12:00:00Z",
			want: []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{name: "NY daily after the gap is untouched", fields: ny("kind", "daily", "time", "03:15"), after: "2026-03-07T12:00:00Z",
			want: []string{"2026-03-08T03:15:00-04:00"}},
		{name: "NY daily in the repeated hour", fields: ny("kind", "daily", "time", "01:30"), after: "2026-10-31T12:00:00Z",
			want: []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{name: "NY daily repeated hour from between the two", fields: ny("kind", "daily", "time", "01:30"), after: "2026-11-01T05:45:00Z",
			want: []string{"2026-11-02T01:30:00-05:00"}},
		{name: "NY weekly across spring forward", fields: ny("kind", "weekly", "weekday", "sunday", "time", "02:30"), after: "2026-02-28T00:00:00Z",
			want: []string{"2026-03-01T02:30:00-05:00", "2026-03-08T03:30:00-04:00", "2026-03-15T02:30:00-04:00"}},
		{name: "NY weekly across fall back", fields: ny("kind", "weekly", "weekday", "sunday", "time", "09:00"), after: "2026-10-24T00:00:00Z",
			want: []string{"2026-10-25T09:00:00-04:00", "2026-11-01T09:00:00-05:00", "2026-11-08T09:00:00-05:00"}},
		{name: "NY monthly across spring forward", fields: ny("kind", "monthly", "day", "8", "time", "02:30"), after: "2026-02-01T00:00:00Z",
			want: []string{"2026-02-08T02:30:00-05:00", "2026-03-08T03:30:00-04:00", "2026-04-08T02:30:00-04:00"}},
		{name: "NY once in the gap", fields: ny("kind", "once", "at", "2026-03-08 02:30"), after: "2026-01-01T00:00:00Z",
			want: []string{"2026-03-08T03:30:00-04:00"}, n: 2},
		{name: "NY once in the repeated hour", fields: ny("kind", "once", "at", "2026-11-01T01:30"), after: "2026-01-01T00:00:00Z",
			want: []string{"2026-11-01T01:30:00-04:00"}, n: 2},
		// Europe/Berlin 2026: 02:00 CET → 03:00 CEST on Sun Mar 29; 03:00 CEST → 02:00 CET on Sun Oct 25.
		{name: "Berlin daily in the gap", fields: be("kind", "daily", "time", "02:30"), after: "2026-03-28T00:00:00Z",
			want: []string{"2026-03-28T02:30:00+01:00", "2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{name: "Berlin daily in the repeated hour", fields: be("kind", "daily", "time", "02:30"), after: "2026-10-24T00:00:00Z",
			want: []string{"2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{name: "Berlin weekly across fall back", fields: be("kind", "weekly", "weekday", "sunday", "time", "02:30"), after: "2026-10-17T00:00:00Z",
			want: []string{"2026-10-18T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-11-01T02:30:00+01:00"}},
		{name: "Berlin weekly across spring forward", fields: be("kind", "weekly", "weekday", "sunday", "time", "09:00"), after: "2026-03-21T00:00:00Z",
			want: []string{"2026-03-22T09:00:00+01:00", "2026-03-29T09:00:00+02:00"}},
		{name: "Berlin monthly across fall back", fields: be("kind", "monthly", "day", "25", "time", "02:30"), after: "2026-09-01T00:00:00Z",
			want: []string{"2026-09-25T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-11-25T02:30:00+01:00"}},
		{name: "Berlin weekdays across spring forward", fields: be("kind", "weekdays", "time", "08:00"), after: "2026-03-27T12:00:00Z",
			want: []string{"2026-03-30T08:00:00+02:00"}},
	})
}

// TestIntervalAbsoluteAcrossDST: an interval is absolute time, so a 24 h
// interval moves by an hour in local time across DST, and stays anchored
// however late the runs were.
func TestIntervalAbsoluteAcrossDST(t *testing.T) {
	s := mustParse(t, map[string]string{"kind": "interval", "every": "24h", "timezone": "America/New_York", "anchor": "2026-03-07T09:00:00-05:00"})
	got := nexts(t, s, ts(t, "2026-03-07T09:00:00-05:00"), 2)
	want := []string{"2026-03-08T10:00:00-04:00", "2026-03-09T10:00:00-04:00"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Format(time.RFC3339) != w {
			t.Errorf("occurrence %d = %s, want %s", i, got[i].Format(time.RFC3339), w)
		}
	}
	be := mustParse(t, map[string]string{"kind": "interval", "every": "24h", "timezone": "Europe/Berlin", "anchor": "2026-10-24T12:00:00+02:00"})
	if next, _ := be.Next(ts(t, "2026-10-24T12:00:00+02:00")); next.Format(time.RFC3339) != "2026-10-25T11:00:00+01:00" {
		t.Errorf("Berlin 24h across fall back = %s, want 2026-10-25T11:00:00+01:00", next.Format(time.RFC3339))
	}
	// A run that happened late (or from a host that was busy) does not move
	// the grid: the next occurrence after a late run is still anchor + k·Every.
	fifteen := mustParse(t, map[string]string{"kind": "interval", "every": "15m", "timezone": "UTC", "anchor": "2026-12-01T09:00:00.25Z"})
	lateRun := ts(t, "2026-12-01T09:46:59Z")
	if next, _ := fifteen.Next(lateRun); !next.Equal(ts(t, "2026-12-01T10:00:00.25Z")) {
		t.Errorf("Next after a late run = %s, want 10:00:00.25 (anchored)", next)
	}
}

// TestAnchoredDefaultsToCreation: a new interval is anchored at its
// creation, so its first run is one Every later; an explicit anchor and the
// other kinds are left alone.
func TestAnchoredDefaultsToCreation(t *testing.T) {
	created := ts(t, "2026-12-01T09:07:13Z")
	s := mustParse(t, map[string]string{"kind": "interval", "every": "15m", "timezone": "UTC"}).Anchored(created)
	if next, _ := s.Next(created); !next.Equal(created.Add(15 * time.Minute)) {
		t.Errorf("first run %s, want creation + 15m", next)
	}
	explicit := ts(t, "2026-12-01T09:00:00Z")
	if a := (Schedule{Kind: KindInterval, Anchor: explicit}).Anchored(created).Anchor; !a.Equal(explicit) {
		t.Errorf("explicit anchor replaced by %s", a)
	}
	if a := (Schedule{Kind: KindDaily}).Anchored(created).Anchor; !a.IsZero() {
		t.Errorf("daily got anchor %s", a)
	}
}

// TestMonthlyOn31stThroughYears: "monthly on the 31st" runs on the last day
// of shorter months, in a common year and a leap year.
func TestMonthlyOn31stThroughYears(t *testing.T) {
	s := mustParse(t, map[string]string{"kind": "monthly", "day": "31", "time": "08:00", "timezone": "America/New_York"})
	loc, _ := time.LoadLocation("America/New_York")
	for _, c := range []struct {
		after string
		want  []string
	}{
		{"2025-12-31T23:00:00-05:00", []string{"2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30", "2026-05-31", "2026-06-30", "2026-07-31", "2026-08-31", "2026-09-30", "2026-10-31", "2026-11-30", "2026-12-31"}},
		{"2027-12-31T23:00:00-05:00", []string{"2028-01-31", "2028-02-29", "2028-03-31", "2028-04-30", "2028-05-31", "2028-06-30", "2028-07-31", "2028-08-31", "2028-09-30", "2028-10-31", "2028-11-30", "2028-12-31"}},
	} {
		got := nexts(t, s, ts(t, c.after), 12)
		if len(got) != len(c.want) {
			t.Fatalf("after %s: %d occurrences %v, want %v", c.after, len(got), got, c.want)
		}
		for i, w := range c.want {
			if g := got[i].In(loc).Format("2006-01-02 15:04"); g != w+" 08:00" {
				t.Errorf("after %s occurrence %d = %s, want %s 08:00", c.after, i, g, w)
			}
		}
	}
	thirty := mustParse(t, map[string]string{"kind": "monthly", "day": "30", "time": "08:00", "timezone": "UTC"})
	got := nexts(t, thirty, ts(t, "2028-01-31T00:00:00Z"), 2)
	if len(got) != 2 || got[0].Format("2006-01-02") != "2028-02-29" || got[1].Format("2006-01-02") != "2028-03-30" {
		t.Errorf("monthly on the 30th = %v, want 2028-02-29 then 2028-03-30", got)
	}
}

func TestPlan(t *testing.T) {
	daily := func(late string) Schedule {
		return mustParse(t, map[string]string{"kind": "daily", "time": "09:00", "timezone": "Europe/Berlin", "late": late})
	}
	minute := func(late string) Schedule {
		return mustParse(t, map[string]string{"kind": "interval", "every": "60s", "timezone": "UTC", "late": late, "anchor": "2026-11-01T00:00:00Z"})
	}
	day0 := "2026-12-01T09:00:00+01:00"
	cases := []struct {
		name         string
		s            Schedule
		lastDue, now string
		run          string // "" = nothing runs
		late         bool
		skipped      []string
		skippedCount int64
		lastDueAfter string
		next         string
	}{
		{name: "nothing due", s: daily("catch_up"), lastDue: day0, now: "2026-12-02T08:59:59+01:00",
			lastDueAfter: day0, next: "2026-12-02T09:00:00+01:00"},
		{name: "on time", s: daily("skip"), lastDue: day0, now: "2026-12-02T09:00:00+01:00",
			run: "2026-12-02T09:00:00+01:00", lastDueAfter: "2026-12-02T09:00:00+01:00", next: "2026-12-03T09:00:00+01:00"},
		{name: "60 s late still runs (skip)", s: daily("skip"), lastDue: day0, now: "2026-12-02T09:01:00+01:00",
			run: "2026-12-02T09:00:00+01:00", lastDueAfter: "2026-12-02T09:00:00+01:00", next: "2026-12-03T09:00:00+01:00"},
		{name: "61 s late catch_up runs late", s: daily("catch_up"), lastDue: day0, now: "2026-12-02T09:01:01+01:00",
			run: "2026-12-02T09:00:00+01:00", late: true, lastDueAfter: "2026-12-02T09:00:00+01:00", next: "2026-12-03T09:00:00+01:00"},
		{name: "61 s late skip records it", s: daily("skip"), lastDue: day0, now: "2026-12-02T09:01:01+01:00",
			skipped: []string{"2026-12-02T09:00:00+01:00"}, skippedCount: 1, lastDueAfter: "2026-12-02T09:00:00+01:00", next: "2026-12-03T09:00:00+01:00"},
		{name: "outage catch_up coalesces into one run", s: daily("catch_up"), lastDue: day0, now: "2026-12-04T12:00:00+01:00",
			run: "2026-12-04T09:00:00+01:00", late: true, skipped: []string{"2026-12-02T09:00:00+01:00", "2026-12-03T09:00:00+01:00"}, skippedCount: 2,
			lastDueAfter: "2026-12-04T09:00:00+01:00", next: "2026-12-05T09:00:00+01:00"},
		{name: "outage skip runs nothing", s: daily("skip"), lastDue: day0, now: "2026-12-04T12:00:00+01:00",
			skipped: []string{"2026-12-02T09:00:00+01:00", "2026-12-03T09:00:00+01:00", "2026-12-04T09:00:00+01:00"}, skippedCount: 3,
			lastDueAfter: "2026-12-04T09:00:00+01:00", next: "2026-12-05T09:00:00+01:00"},
		{name: "outage ending on time runs the fresh one (catch_up)", s: daily("catch_up"), lastDue: day0, now: "2026-12-04T09:00:30+01:00",
			run: "2026-12-04T09:00:00+01:00", skipped: []string{"2026-12-02T09:00:00+01:00", "2026-12-03T09:00:00+01:00"}, skippedCount: 2,
			lastDueAfter: "2026-12-04T09:00:00+01:00", next: "2026-12-05T09:00:00+01:00"},
		{name: "outage ending on time runs the fresh one (skip)", s: daily("skip"), lastDue: day0, now: "2026-12-04T09:00:30+01:00",
			run: "2026-12-04T09:00:00+01:00", skipped: []string{"2026-12-02T09:00:00+01:00", "2026-12-03T09:00:00+01:00"}, skippedCount: 2,
			lastDueAfter: "2026-12-04T09:00:00+01:00", next: "2026-12-05T09:00:00+01:00"},
		{name: "two on time: the earlier runs, the later is next", s: minute("skip"), lastDue: "2026-12-01T00:00:00Z", now: "2026-12-01T00:02:00Z",
			run: "2026-12-01T00:01:00Z", lastDueAfter: "2026-12-01T00:01:00Z", next: "2026-12-01T00:02:00Z"},
		{name: "once missed catch_up", s: mustParse(t, map[string]string{"kind": "once", "at": "2026-12-24 18:00", "timezone": "Europe/Berlin"}),
			lastDue: "2026-12-01T00:00:00Z", now: "2026-12-25T00:00:00+01:00",
			run: "2026-12-24T18:00:00+01:00", late: true, lastDueAfter: "2026-12-24T18:00:00+01:00"},
		{name: "once missed skip", s: mustParse(t, map[string]string{"kind": "once", "at": "2026-12-24 18:00", "timezone": "Europe/Berlin", "late": "skip"}),
			lastDue: "2026-12-01T00:00:00Z", now: "2026-12-25T00:00:00+01:00",
			skipped: []string{"2026-12-24T18:00:00+01:00"}, skippedCount: 1, lastDueAfter: "2026-12-24T18:00:00+01:00"},
		{name: "clock went back", s: daily("catch_up"), lastDue: "2026-12-02T09:00:00+01:00", now: "2026-12-01T12:00:00+01:00",
			lastDueAfter: "2026-12-02T09:00:00+01:00", next: "2026-12-03T09:00:00+01:00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.s.Plan(ts(t, c.lastDue), ts(t, c.now))
			if c.run == "" {
				if !p.Run.IsZero() {
					t.Errorf("Run = %s, want nothing", p.Run)
				}
			} else if !p.Run.Equal(ts(t, c.run)) {
				t.Errorf("Run = %s, want %s", p.Run, c.run)
			}
			if p.Late != c.late {
				t.Errorf("Late = %t, want %t", p.Late, c.late)
			}
			if len(p.Skipped) != len(c.skipped) || p.SkippedCount != c.skippedCount {
				t.Fatalf("Skipped = %v (count %d), want %v (count %d)", p.Skipped, p.SkippedCount, c.skipped, c.skippedCount)
			}
			for i, w := range c.skipped {
				if !p.Skipped[i].Equal(ts(t, w)) {
					t.Errorf("Skipped[%d] = %s, want %s", i, p.Skipped[i], w)
				}
			}
			if !p.LastDue.Equal(ts(t, c.lastDueAfter)) {
				t.Errorf("LastDue = %s, want %s", p.LastDue, c.lastDueAfter)
			}
			if c.next == "" {
				if p.HasNext {
					t.Errorf("Next = %s, want none", p.Next)
				}
			} else if !p.HasNext || !p.Next.Equal(ts(t, c.next)) {
				t.Errorf("Next = %s (%t), want %s", p.Next, p.HasNext, c.next)
			}
		})
	}
}

// TestPlanLongOutageBounded: after a month offline the plan records the
// earliest 100 skipped occurrences and the count of all of them, not
// tens of thousands of entries.
func TestPlanLongOutageBounded(t *testing.T) {
	const month = 30 * 24 * time.Hour
	last := ts(t, "2026-11-01T00:00:00Z")
	for _, c := range []struct {
		name, every, late string
		now               time.Time
		run               time.Time
		runLate           bool
		count             int64
	}{
		// A 60 s interval always has an occurrence at most 60 s old: the
		// fresh one runs under either policy, the 43,199 before it are skipped.
		{"60s catch_up", "60s", "catch_up", last.Add(month + 30*time.Second), last.Add(month), false, 30*24*60 - 1},
		{"60s skip", "60s", "skip", last.Add(month + 30*time.Second), last.Add(month), false, 30*24*60 - 1},
		// A 5 min interval reached 2 min after its latest occurrence.
		{"5m catch_up", "5m", "catch_up", last.Add(month + 2*time.Minute), last.Add(month), true, 30*24*12 - 1},
		{"5m skip", "5m", "skip", last.Add(month + 2*time.Minute), time.Time{}, false, 30 * 24 * 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, map[string]string{"kind": "interval", "every": c.every, "timezone": "UTC", "late": c.late, "anchor": last.Format(time.RFC3339)})
			p := s.Plan(last, c.now)
			if len(p.Skipped) != MaxSkipped || p.SkippedCount != c.count {
				t.Fatalf("%d skipped entries (count %d), want %d entries (count %d)", len(p.Skipped), p.SkippedCount, MaxSkipped, c.count)
			}
			if !p.Skipped[0].Equal(last.Add(s.Every)) || !p.Skipped[MaxSkipped-1].Equal(last.Add(MaxSkipped*s.Every)) {
				t.Errorf("skipped %s … %s, want the earliest %d", p.Skipped[0], p.Skipped[MaxSkipped-1], MaxSkipped)
			}
			if !p.Run.Equal(c.run) || p.Late != c.runLate {
				t.Errorf("Run = %s late %t, want %s late %t", p.Run, p.Late, c.run, c.runLate)
			}
			if !p.LastDue.Equal(last.Add(month)) || !p.Next.Equal(last.Add(month+s.Every)) {
				t.Errorf("LastDue %s Next %s, want the latest occurrence and the one after", p.LastDue, p.Next)
			}
		})
	}
}

// TestPlanCountsMatchEnumeration: for every calendar kind over a year
// offline (DST changes included), SkippedCount — computed by subtraction
// past MaxSkipped — equals the occurrences counted one by one with Next.
func TestPlanCountsMatchEnumeration(t *testing.T) {
	for _, f := range []map[string]string{
		{"kind": "daily", "time": "02:30"},
		{"kind": "weekdays", "time": "02:30"},
		{"kind": "weekly", "weekday": "sunday", "time": "01:30"},
		{"kind": "monthly", "day": "31", "time": "08:00"},
		{"kind": "interval", "every": "7m", "anchor": "2025-12-15T10:05:00Z"}, // latest is 5 min before now
	} {
		for _, tz := range []string{"America/New_York", "Europe/Berlin"} {
			for _, late := range []string{"catch_up", "skip"} {
				f := maps.Clone(f)
				f["timezone"], f["late"] = tz, late
				t.Run(f["kind"]+"/"+tz+"/"+late, func(t *testing.T) {
					s := mustParse(t, f)
					last, now := ts(t, "2025-12-15T10:00:00Z"), ts(t, "2027-01-20T10:00:00Z")
					var n int64
					for o, ok := s.Next(last); ok && !o.After(now); o, ok = s.Next(o) {
						n++
					}
					p := s.Plan(last, now)
					if p.Run.IsZero() == (late == "catch_up") {
						t.Fatalf("Run = %s with %s", p.Run, late)
					}
					if late == "catch_up" {
						n-- // the latest runs
					}
					if p.SkippedCount != n || len(p.Skipped) != min(MaxSkipped, int(n)) {
						t.Errorf("SkippedCount %d (%d entries), enumeration %d", p.SkippedCount, len(p.Skipped), n)
					}
				})
			}
		}
	}
}

func TestParseScheduleFieldErrors(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{"timezone": "Europe/Berlin"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name   string
		fields map[string]string
		want   FieldErrors
	}{
		{"empty", map[string]string{}, FieldErrors{
			"kind":     "kind is required: once, interval, daily, weekdays, weekly or monthly",
			"timezone": "timezone is required: an IANA name such as Europe/Berlin"}},
		{"unknown kind", base("kind", "hourly"), FieldErrors{
			"kind": `unknown kind "hourly": choose once, interval, daily, weekdays, weekly or monthly`}},
		{"Local refused", map[string]string{"kind": "daily", "time": "09:00", "timezone": "Local"}, FieldErrors{
			"timezone": "timezone must be an explicit IANA name such as Europe/Berlin, not Local (the host's zone)"}},
		{"unknown zone named", map[string]string{"kind": "daily", "time": "09:00", "timezone": "Mars/Olympus_Mons"}, FieldErrors{
			"timezone": `unknown time zone "Mars/Olympus_Mons": use an IANA name such as Europe/Berlin`}},
		{"zone path refused", map[string]string{"kind": "daily", "time": "09:00", "timezone": "../../etc/passwd"}, FieldErrors{
			"timezone": `unknown time zone "../../etc/passwd": use an IANA name such as Europe/Berlin`}},
		{"once without at", base("kind", "once"), FieldErrors{
			"at": "at is required: a date and time such as 2026-12-24 18:00"}},
		{"once bad at", base("kind", "once", "at", "24.12.2026 18:00"), FieldErrors{
			"at": "at must be a date and time such as 2026-12-24 18:00"}},
		{"once bad zone, good at: only the zone", map[string]string{"kind": "once", "at": "2026-12-24 18:00", "timezone": "Nowhere"}, FieldErrors{
			"timezone": `unknown time zone "Nowhere": use an IANA name such as Europe/Berlin`}},
		{"interval without every", base("kind", "interval"), FieldErrors{
			"every": "every is required: a duration such as 15m, 2h or 90s"}},
		{"interval not a duration", base("kind", "interval", "every", "often"), FieldErrors{
			"every": "every must be a duration such as 15m, 2h or 90s"}},
		{"interval days unit", base("kind", "interval", "every", "2d"), FieldErrors{
			"every": "every must be a duration such as 15m, 2h or 90s"}},
		{"interval too short", base("kind", "interval", "every", "59s"), FieldErrors{
			"every": "every must be at least 1 minute (60s)"}},
		{"interval zero", base("kind", "interval", "every", "0s"), FieldErrors{
			"every": "every must be at least 1 minute (60s)"}},
		{"interval negative", base("kind", "interval", "every", "-5m"), FieldErrors{
			"every": "every must be at least 1 minute (60s)"}},
		{"interval fractional seconds", base("kind", "interval", "every", "90.5s"), FieldErrors{
			"every": "every must be a whole number of seconds"}},
		{"interval too long", base("kind", "interval", "every", "8785h"), FieldErrors{
			"every": "every must be at most 366 days (8784h)"}},
		{"interval huge number", base("kind", "interval", "every", "99999999999999999999"), FieldErrors{
			"every": "every must be a duration such as 15m, 2h or 90s"}},
		{"interval bad anchor", base("kind", "interval", "every", "1h", "anchor", "yesterday"), FieldErrors{
			"anchor": "anchor must be an RFC 3339 instant such as 2026-12-01T09:00:00Z"}},
		{"daily without time", base("kind", "daily"), FieldErrors{
			"time": "time is required: HH:MM (24-hour), such as 09:00"}},
		{"daily bad time", base("kind", "daily", "time", "9am"), FieldErrors{
			"time": "time must be HH:MM (24-hour), such as 09:00"}},
		{"daily signed time", base("kind", "daily", "time", "+9:00"), FieldErrors{
			"time": "time must be HH:MM (24-hour), such as 09:00"}},
		{"daily out of range", base("kind", "daily", "time", "24:00"), FieldErrors{
			"time": "time must be between 00:00 and 23:59"}},
		{"daily minute out of range", base("kind", "weekdays", "time", "09:60"), FieldErrors{
			"time": "time must be between 00:00 and 23:59"}},
		{"weekly without weekday", base("kind", "weekly", "time", "09:00"), FieldErrors{
			"weekday": "weekday must be a day of the week such as monday"}},
		{"weekly bad weekday", base("kind", "weekly", "time", "09:00", "weekday", "funday"), FieldErrors{
			"weekday": "weekday must be a day of the week such as monday"}},
		{"monthly without day", base("kind", "monthly", "time", "09:00"), FieldErrors{
			"day": "day is required: a day of the month from 1 to 31"}},
		{"monthly day 0", base("kind", "monthly", "time", "09:00", "day", "0"), FieldErrors{
			"day": "day must be a day of the month from 1 to 31"}},
		{"monthly day 32", base("kind", "monthly", "time", "09:00", "day", "32"), FieldErrors{
			"day": "day must be a day of the month from 1 to 31"}},
		{"monthly day not a number", base("kind", "monthly", "time", "09:00", "day", "last"), FieldErrors{
			"day": "day must be a day of the month from 1 to 31"}},
		{"monthly negative day", base("kind", "monthly", "time", "09:00", "day", "-1"), FieldErrors{
			"day": "day must be a day of the month from 1 to 31"}},
		{"bad late", base("kind", "daily", "time", "09:00", "late", "later"), FieldErrors{
			"late": `late must be catch_up or skip, not "later"`}},
		{"several at once", map[string]string{"kind": "monthly", "time": "25:00", "day": "40", "timezone": "Local", "late": "x"}, FieldErrors{
			"time":     "time must be between 00:00 and 23:59",
			"day":      "day must be a day of the month from 1 to 31",
			"timezone": "timezone must be an explicit IANA name such as Europe/Berlin, not Local (the host's zone)",
			"late":     `late must be catch_up or skip, not "x"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, fe := ParseSchedule(c.fields)
			if !maps.Equal(fe, c.want) {
				t.Errorf("errors = %v\nwant     %v", fe, c.want)
			}
			if fe != nil && !strings.HasPrefix(fe.Error(), "tasks: invalid schedule: ") {
				t.Errorf("Error() = %q", fe.Error())
			}
		})
	}
}

func TestParseScheduleAccepts(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, c := range []struct {
		name   string
		fields map[string]string
		want   Schedule
	}{
		{"weekly short name, one-digit hour, unrelated keys ignored",
			map[string]string{"kind": "Weekly", "weekday": "MON", "time": " 9:05 ", "timezone": "Europe/Berlin", "day": "40", "every": "x", "name": "digest"},
			Schedule{Kind: KindWeekly, Weekday: time.Monday, Hour: 9, Minute: 5, Timezone: "Europe/Berlin", Late: LateCatchUp}},
		{"interval in seconds, skip",
			map[string]string{"kind": "interval", "every": "900", "timezone": "UTC", "late": "skip"},
			Schedule{Kind: KindInterval, Every: 15 * time.Minute, Timezone: "UTC", Late: LateSkip}},
		{"once as an RFC 3339 instant",
			map[string]string{"kind": "once", "at": "2026-12-24T17:00:00Z", "timezone": "Europe/Berlin"},
			Schedule{Kind: KindOnce, At: time.Date(2026, 12, 24, 18, 0, 0, 0, berlin), Timezone: "Europe/Berlin", Late: LateCatchUp}},
		{"monthly midnight",
			map[string]string{"kind": "monthly", "day": "31", "time": "00:00", "timezone": "UTC"},
			Schedule{Kind: KindMonthly, Day: 31, Timezone: "UTC", Late: LateCatchUp}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := mustParse(t, c.fields)
			if !sameSchedule(got, c.want) {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func sameSchedule(a, b Schedule) bool {
	return a.Kind == b.Kind && a.At.Equal(b.At) && a.Every == b.Every && a.Anchor.Equal(b.Anchor) &&
		a.Hour == b.Hour && a.Minute == b.Minute && a.Weekday == b.Weekday && a.Day == b.Day &&
		a.Timezone == b.Timezone && a.Late == b.Late
}

// TestValidateFilledByHand: a schedule read from storage is checked the
// same way, and an invalid one has no occurrence.
func TestValidateFilledByHand(t *testing.T) {
	for _, c := range []struct {
		s    Schedule
		want FieldErrors
	}{
		{Schedule{Kind: KindDaily, Hour: 9, Timezone: "Europe/Berlin", Late: LateSkip}, nil},
		{Schedule{Kind: KindDaily, Hour: 9, Timezone: "Local", Late: LateSkip}, FieldErrors{"timezone": "timezone must be an explicit IANA name such as Europe/Berlin, not Local (the host's zone)"}},
		{Schedule{Kind: KindDaily, Hour: 9, Timezone: "UTC"}, FieldErrors{"late": `late must be catch_up or skip, not ""`}},
		{Schedule{Kind: KindInterval, Every: 59 * time.Second, Timezone: "UTC", Late: LateSkip}, FieldErrors{"every": "every must be at least 1 minute (60s)"}},
		{Schedule{Kind: KindInterval, Every: time.Minute + time.Millisecond, Timezone: "UTC", Late: LateSkip}, FieldErrors{"every": "every must be a whole number of seconds"}},
		{Schedule{Kind: KindWeekly, Weekday: 7, Timezone: "UTC", Late: LateSkip}, FieldErrors{"weekday": "weekday must be a day of the week such as monday"}},
		{Schedule{Kind: KindOnce, Timezone: "UTC", Late: LateSkip}, FieldErrors{"at": "at is required: a date and time such as 2026-12-24 18:00"}},
		{Schedule{}, FieldErrors{"kind": `unknown kind "": choose once, interval, daily, weekdays, weekly or monthly`, "timezone": "timezone is required: an IANA name such as Europe/Berlin", "late": `late must be catch_up or skip, not ""`}},
	} {
		got := c.s.Validate()
		if !maps.Equal(got, c.want) {
			t.Errorf("%+v: Validate = %v, want %v", c.s, got, c.want)
		}
		if _, ok := c.s.Next(ts(t, "2026-12-01T00:00:00Z")); ok != (c.want == nil) {
			t.Errorf("%+v: Next ok = %t with errors %v", c.s, ok, c.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		fields map[string]string
		want   string
	}{
		{map[string]string{"kind": "weekdays", "time": "09:00", "timezone": "Europe/Berlin"}, "Every weekday at 09:00 (Europe/Berlin)"},
		{map[string]string{"kind": "daily", "time": "7:30", "timezone": "UTC"}, "Every day at 07:30 (UTC)"},
		{map[string]string{"kind": "weekly", "weekday": "fri", "time": "17:00", "timezone": "Europe/Berlin"}, "Every Friday at 17:00 (Europe/Berlin)"},
		{map[string]string{"kind": "interval", "every": "15m", "timezone": "UTC"}, "Every 15 minutes"},
		{map[string]string{"kind": "interval", "every": "60s", "timezone": "UTC"}, "Every minute"},
		{map[string]string{"kind": "interval", "every": "90s", "timezone": "UTC"}, "Every 90 seconds"},
		{map[string]string{"kind": "interval", "every": "1h30m", "timezone": "UTC"}, "Every 90 minutes"},
		{map[string]string{"kind": "interval", "every": "48h", "timezone": "UTC"}, "Every 2 days"},
		{map[string]string{"kind": "monthly", "day": "31", "time": "08:00", "timezone": "America/New_York"}, "Monthly on day 31 at 08:00 (America/New_York) — the last day in shorter months"},
		{map[string]string{"kind": "monthly", "day": "28", "time": "08:00", "timezone": "America/New_York"}, "Monthly on day 28 at 08:00 (America/New_York)"},
		{map[string]string{"kind": "once", "at": "2026-12-24 18:00", "timezone": "Europe/Berlin"}, "Once at 2026-12-24 18:00 (Europe/Berlin)"},
	} {
		if got := mustParse(t, c.fields).Describe(); got != c.want {
			t.Errorf("Describe(%v) = %q, want %q", c.fields, got, c.want)
		}
	}
}

// TestFieldsRoundTrip: Fields is what the edit form shows and what
// ParseSchedule reads back, exactly (the second 01:30 of a fall-back night
// and an anchor with nanoseconds included).
func TestFieldsRoundTrip(t *testing.T) {
	for _, s := range []Schedule{
		{Kind: KindOnce, At: ts(t, "2026-11-01T01:30:00-05:00"), Timezone: "America/New_York", Late: LateSkip},
		{Kind: KindOnce, At: ts(t, "2026-11-01T01:30:00-04:00"), Timezone: "America/New_York", Late: LateSkip},
		{Kind: KindOnce, At: ts(t, "2026-12-24T18:00:30+01:00"), Timezone: "Europe/Berlin", Late: LateCatchUp},
		{Kind: KindInterval, Every: 90 * time.Second, Anchor: ts(t, "2026-12-01T09:00:00.123456789Z"), Timezone: "UTC", Late: LateCatchUp},
		{Kind: KindInterval, Every: 2 * time.Hour, Timezone: "Europe/Berlin", Late: LateSkip},
		{Kind: KindWeekly, Weekday: time.Saturday, Hour: 23, Minute: 59, Timezone: "Asia/Kolkata", Late: LateSkip},
		{Kind: KindMonthly, Day: 31, Timezone: "UTC", Late: LateCatchUp},
	} {
		f := s.Fields()
		back, fe := ParseSchedule(f)
		if fe != nil || !sameSchedule(back, s) {
			t.Errorf("%+v → %v → %+v (%v)", s, f, back, fe)
		}
	}
	if f := (Schedule{Kind: KindOnce, At: ts(t, "2026-11-01T01:30:00-04:00"), Timezone: "America/New_York"}).Fields(); f["at"] != "2026-11-01 01:30" {
		t.Errorf("first 01:30 shown as %q, want the local form", f["at"])
	}
	if f := (Schedule{Kind: KindInterval, Every: 15 * time.Minute}).Fields(); f["every"] != "15m" {
		t.Errorf("every shown as %q, want 15m", f["every"])
	}
}

// BenchmarkPlanMonthOffline: the runner's decision after a month offline
// with a 60 s interval, and with a daily schedule after ten years (the work
// is bounded by MaxSkipped, not by the number of missed occurrences).
func BenchmarkPlanMonthOffline(b *testing.B) {
	for _, c := range []struct {
		name   string
		fields map[string]string
		outage time.Duration
	}{
		{"interval-60s-30d", map[string]string{"kind": "interval", "every": "60s", "timezone": "UTC", "anchor": "2026-11-01T00:00:00Z"}, 30 * 24 * time.Hour},
		{"daily-10y", map[string]string{"kind": "daily", "time": "02:30", "timezone": "Europe/Berlin"}, 3653 * 24 * time.Hour},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := mustParse(b, c.fields)
			last := ts(b, "2026-11-01T00:00:00Z")
			now := last.Add(c.outage + 90*time.Second)
			for b.Loop() {
				if p := s.Plan(last, now); len(p.Skipped) != MaxSkipped {
					b.Fatalf("%d skipped", len(p.Skipped))
				}
			}
		})
	}
}
