package tasks

import (
	"testing"
	"time"
)

// FuzzParseSchedule: the parser never panics; a refused schedule says why
// for a known field; an accepted one reads back from its Fields, and its
// Next is strictly increasing, terminates, and agrees with Plan.
func FuzzParseSchedule(f *testing.F) {
	seeds := []struct {
		kind, at, every, clock, weekday, day, tz, late, anchor string
	}{
		{"once", "2026-12-24 18:00", "", "", "", "", "Europe/Berlin", "", ""},
		{"once", "2026-03-08T02:30", "", "", "", "", "America/New_York", "skip", ""},
		{"once", "2026-11-01T01:30:00-05:00", "", "", "", "", "America/New_York", "", ""},
		{"interval", "", "60s", "", "", "", "UTC", "catch_up", "2026-12-01T09:00:00Z"},
		{"interval", "", "8784h", "", "", "", "Pacific/Apia", "", "0001-01-01T00:00:01Z"},
		{"interval", "", "90", "", "", "", "Asia/Kolkata", "skip", "9999-12-31T23:59:59Z"},
		{"daily", "", "", "02:30", "", "", "America/New_York", "", ""},
		{"weekdays", "", "", "00:00", "", "", "Europe/Berlin", "skip", ""},
		{"weekly", "", "", "23:59", "sun", "", "Australia/Lord_Howe", "", ""},
		{"monthly", "", "", "02:30", "", "31", "Europe/Berlin", "", ""},
		{"monthly", "", "", "00:30", "", "29", "America/Havana", "", ""},
		{"daily", "", "", "24:00", "", "", "Local", "later", ""},
		{"", "", "", "", "", "", "", "", ""},
	}
	for i, s := range seeds {
		f.Add(s.kind, s.at, s.every, s.clock, s.weekday, s.day, s.tz, s.late, s.anchor, int64(1796000000+i*86400*37), uint32(i*7919))
	}
	f.Fuzz(func(t *testing.T, kind, at, every, clock, weekday, day, tz, late, anchor string, startSec int64, outage uint32) {
		fields := map[string]string{
			FieldKind: kind, FieldAt: at, FieldEvery: every, FieldTime: clock, FieldWeekday: weekday,
			FieldDay: day, FieldTimezone: tz, FieldLate: late, FieldAnchor: anchor,
		}
		s, fe := ParseSchedule(fields)
		if fe != nil {
			for k, msg := range fe {
				if _, ok := fields[k]; !ok || msg == "" {
					t.Fatalf("error for unknown field %q or empty message: %v", k, fe)
				}
			}
			return
		}
		if v := s.Validate(); v != nil {
			t.Fatalf("parsed schedule fails Validate: %v", v)
		}
		_ = s.Describe()
		if back, fe := ParseSchedule(s.Fields()); fe != nil || !sameSchedule(back, s) {
			t.Fatalf("round trip: %+v → %v → %+v (%v)", s, s.Fields(), back, fe)
		}

		// Start within a few thousand years of now: far enough for odd
		// zones and anchors, inside what time.Time represents.
		const span = int64(100000) * 86400 * 365
		start := time.Unix(startSec%span, 0)
		prev := start
		for i := 0; i < 60; i++ {
			next, ok := s.Next(prev)
			if !ok {
				break
			}
			if !next.After(prev) {
				t.Fatalf("Next(%s) = %s: not strictly after", prev, next)
			}
			if s.Kind == KindInterval && next.Sub(prev) > s.Every && !prev.Equal(start) {
				t.Fatalf("interval gap %s > every %s", next.Sub(prev), s.Every)
			}
			prev = next
		}

		now := start.Add(time.Duration(outage) * time.Second * 64) // up to ~8.7 years
		p := s.Plan(start, now)
		if len(p.Skipped) > MaxSkipped || p.SkippedCount < int64(len(p.Skipped)) {
			t.Fatalf("Skipped %d entries, count %d", len(p.Skipped), p.SkippedCount)
		}
		if !p.Run.IsZero() && (!p.Run.After(start) || p.Run.After(now)) {
			t.Fatalf("Run %s outside (%s, %s]", p.Run, start, now)
		}
		if p.LastDue.Before(start) || (p.LastDue.After(now) && !p.LastDue.Equal(start)) {
			t.Fatalf("LastDue %s outside [%s, %s]", p.LastDue, start, now)
		}
		for i, sk := range p.Skipped {
			if !sk.After(start) || sk.After(now) || (!p.Run.IsZero() && !sk.Before(p.Run)) || (i > 0 && !sk.After(p.Skipped[i-1])) {
				t.Fatalf("Skipped[%d] = %s out of order or range (start %s, run %s, now %s)", i, sk, start, p.Run, now)
			}
		}
		if p.HasNext && !p.Next.After(p.LastDue) {
			t.Fatalf("Next %s not after LastDue %s", p.Next, p.LastDue)
		}
	})
}
