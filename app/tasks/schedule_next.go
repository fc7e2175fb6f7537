package tasks

import (
	"math"
	"time"
)

// Next returns the first occurrence strictly after after, in the
// schedule's zone; false when there is none (a once schedule at or before
// after) or the schedule is invalid.
func (s Schedule) Next(after time.Time) (time.Time, bool) {
	o, ok := s.next(after)
	return o.t, ok
}

// Plan is what a runner does at one instant (Schedule.Plan).
type Plan struct {
	// Run is the occurrence to run now; zero when nothing runs.
	Run time.Time
	// Late says Run is more than LateTolerance late: a catch-up run.
	Late bool
	// Skipped are the earliest skipped occurrences, at most MaxSkipped.
	Skipped []time.Time
	// SkippedCount counts every skipped occurrence (≥ len(Skipped)).
	SkippedCount int64
	// LastDue is the last occurrence this plan handled (Run, or the latest
	// skipped one), or the lastDue given when nothing was due. The runner
	// stores it and passes it to the next Plan.
	LastDue time.Time
	// Next is the first occurrence after LastDue (HasNext false: none).
	// It can be at or before now when a second occurrence is already due
	// on time (an interval of 60 s reached exactly 60 s late): the runner
	// plans again at once.
	Next    time.Time
	HasNext bool
}

// Plan decides what a runner does at now, given lastDue, the last
// occurrence already handled (for a new task: its creation time). Of the
// occurrences in (lastDue, now]:
//   - the earliest one at most LateTolerance late runs (Late false); every
//     earlier one is skipped, whatever the policy — a fresher run is
//     happening;
//   - when none is that recent (an outage), LateCatchUp runs once, now, for
//     the latest missed occurrence (Late true) and skips the earlier ones;
//     LateSkip runs nothing and skips them all.
//
// Skipped keeps the earliest MaxSkipped occurrences and SkippedCount counts
// all, so a 60 s interval after a month offline costs 100 entries, not
// 43,200. The work is bounded likewise.
func (s Schedule) Plan(lastDue, now time.Time) Plan {
	p := Plan{LastDue: lastDue}
	first, ok := s.next(lastDue)
	if !ok || first.t.After(now) {
		p.Next, p.HasNext = first.t, ok
		return p
	}
	var (
		run   occurrence // zero: nothing runs
		last  occurrence // the last occurrence skipped or run
		bound time.Time  // skipped occurrences are in [first, bound)
	)
	floor := now.Add(-LateTolerance - time.Nanosecond)
	if floor.Before(lastDue) {
		floor = lastDue
	}
	if o, ok := s.next(floor); ok && !o.t.After(now) {
		run, last, bound = o, o, o.t
	} else {
		latest, ok := s.prev(now)
		if !ok || latest.t.Before(first.t) {
			latest = first // cannot happen: first ≤ now; keeps the plan in range
		}
		last = latest
		if s.Late == LateCatchUp {
			run, bound, p.Late = latest, latest.t, true
		} else {
			bound = latest.t.Add(time.Nanosecond)
			p.LastDue = latest.t
		}
	}
	for o, ok := first, true; ok && o.t.Before(bound) && len(p.Skipped) < MaxSkipped; o, ok = s.next(o.t) {
		p.Skipped = append(p.Skipped, o.t)
	}
	p.SkippedCount = int64(len(p.Skipped))
	if len(p.Skipped) == MaxSkipped { // count the rest by ordinal, not one by one
		n := last.ord - first.ord // the occurrences before last
		if run.t.IsZero() {
			n++ // skip: last is skipped too
		}
		p.SkippedCount = max(p.SkippedCount, n)
	}
	if !run.t.IsZero() {
		p.Run, p.LastDue = run.t, run.t
	}
	p.Next, p.HasNext = s.Next(p.LastDue)
	return p
}

// occurrence is an occurrence's instant and its ordinal: consecutive
// occurrences have consecutive ordinals, so Plan counts a long outage by
// subtraction.
type occurrence struct {
	t   time.Time
	ord int64
}

// scanDays bounds the calendar search of next and prev: a monthly
// occurrence is at most 31 days from the previous one, plus the two days
// of margin on each side.
const scanDays = 40

func (s Schedule) next(after time.Time) (occurrence, bool) {
	if !s.valid() {
		return occurrence{}, false
	}
	loc, _ := checkZone(s.Timezone)
	switch s.Kind {
	case KindOnce:
		if s.At.After(after) {
			return occurrence{s.At.In(loc), 0}, true
		}
		return occurrence{}, false
	case KindInterval:
		a, e := s.anchor(), int64(s.Every/time.Second)
		if after.Before(a) {
			return occurrence{a.In(loc), 0}, true
		}
		return s.interval(a, wholeSeconds(a, after)/e+1, loc)
	}
	d := dayNumber(after.In(loc)) - 2
	for range scanDays {
		if s.onDay(d) {
			if t := s.at(d, loc); t.After(after) {
				return occurrence{t, s.ordinal(d)}, true
			}
		}
		d++
	}
	return occurrence{}, false
}

// prev returns the latest occurrence at or before at.
func (s Schedule) prev(at time.Time) (occurrence, bool) {
	if !s.valid() {
		return occurrence{}, false
	}
	loc, _ := checkZone(s.Timezone)
	switch s.Kind {
	case KindOnce:
		if !s.At.After(at) {
			return occurrence{s.At.In(loc), 0}, true
		}
		return occurrence{}, false
	case KindInterval:
		a, e := s.anchor(), int64(s.Every/time.Second)
		if at.Before(a) {
			return occurrence{}, false
		}
		return s.interval(a, wholeSeconds(a, at)/e, loc)
	}
	d := dayNumber(at.In(loc)) + 2
	for range scanDays {
		if s.onDay(d) {
			if t := s.at(d, loc); !t.After(at) {
				return occurrence{t, s.ordinal(d)}, true
			}
		}
		d--
	}
	return occurrence{}, false
}

func (s Schedule) anchor() time.Time {
	if s.Anchor.IsZero() {
		return time.Unix(0, 0)
	}
	return s.Anchor
}

// interval returns occurrence k of an interval anchored at a; false past
// the range of time.Time.
func (s Schedule) interval(a time.Time, k int64, loc *time.Location) (occurrence, bool) {
	e := int64(s.Every / time.Second)
	if k < 0 || k > (1<<62)/e {
		return occurrence{}, false
	}
	sec, add := a.Unix(), k*e
	if sec > math.MaxInt64/2-add {
		return occurrence{}, false
	}
	return occurrence{time.Unix(sec+add, int64(a.Nanosecond())).In(loc), k}, true
}

// wholeSeconds returns the whole seconds from a to b (b not before a).
func wholeSeconds(a, b time.Time) int64 {
	ds := b.Unix() - a.Unix()
	if b.Nanosecond() < a.Nanosecond() {
		ds--
	}
	return ds
}

// Day numbers count civil days from 1970-01-01 (a Thursday).

func dayNumber(t time.Time) int64 {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

func civilDate(d int64) (int, time.Month, int) {
	return time.Unix(d*86400, 0).UTC().Date()
}

// weekday of day number d.
func weekday(d int64) time.Weekday {
	return time.Weekday(floorMod(d+4, 7))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// onDay says whether a calendar schedule occurs on day d.
func (s Schedule) onDay(d int64) bool {
	switch s.Kind {
	case KindDaily:
		return true
	case KindWeekdays:
		wd := weekday(d)
		return wd >= time.Monday && wd <= time.Friday
	case KindWeekly:
		return weekday(d) == s.Weekday
	case KindMonthly:
		y, m, day := civilDate(d)
		return day == min(s.Day, daysIn(y, m))
	}
	return false
}

// ordinal numbers a calendar schedule's occurrence on day d so that
// consecutive occurrences differ by one.
func (s Schedule) ordinal(d int64) int64 {
	switch s.Kind {
	case KindWeekdays: // weeks from Monday 1969-12-29, five days each
		return floorDiv(d+3, 7)*5 + floorMod(d+3, 7)
	case KindWeekly:
		return floorDiv(d+3, 7)
	case KindMonthly:
		y, m, _ := civilDate(d)
		return int64(y)*12 + int64(m) - 1
	}
	return d
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// at returns the instant of the schedule's wall time on day d.
func (s Schedule) at(d int64, loc *time.Location) time.Time {
	y, m, day := civilDate(d)
	return resolve(y, m, day, s.Hour, s.Minute, loc)
}

// resolve returns the instant of a local wall time, deterministically
// across DST changes (time.Date does not promise which of two instants it
// returns): a time that occurs twice resolves to its first occurrence; a
// time in a gap to the shifted time, read with the offset in effect before
// the gap (02:30 → 03:30 when clocks jump from 02:00 to 03:00).
func resolve(y int, m time.Month, d, hh, mm int, loc *time.Location) time.Time {
	naive := time.Date(y, m, d, hh, mm, 0, 0, time.UTC)
	var best time.Time
	found := false
	for _, probe := range [...]time.Duration{-36 * time.Hour, 0, 36 * time.Hour} {
		_, off := naive.Add(probe).In(loc).Zone()
		t := naive.Add(-time.Duration(off) * time.Second)
		l := t.In(loc)
		ly, lm, ld := l.Date()
		if ly == y && lm == m && ld == d && l.Hour() == hh && l.Minute() == mm && l.Second() == 0 {
			if !found || t.Before(best) {
				best, found = t, true
			}
		}
	}
	if !found {
		_, off := naive.Add(-36 * time.Hour).In(loc).Zone()
		best = naive.Add(-time.Duration(off) * time.Second)
	}
	return best.In(loc)
}
