package tasks

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // schedules name IANA zones; a small VPS or a scratch container may have no /usr/share/zoneinfo
)

// Kind is how a task's occurrences repeat.
type Kind string

// The kinds of schedule. Every kind but KindInterval is read in the
// schedule's Timezone.
const (
	// KindOnce occurs once, at Schedule.At.
	KindOnce Kind = "once"
	// KindInterval occurs at Anchor + k·Every (k ≥ 0), in absolute time.
	KindInterval Kind = "interval"
	// KindDaily occurs every day at Hour:Minute local time.
	KindDaily Kind = "daily"
	// KindWeekdays occurs Monday to Friday at Hour:Minute local time.
	KindWeekdays Kind = "weekdays"
	// KindWeekly occurs on Weekday at Hour:Minute local time.
	KindWeekly Kind = "weekly"
	// KindMonthly occurs on Day of every month at Hour:Minute local time;
	// in a month shorter than Day, on its last day.
	KindMonthly Kind = "monthly"
)

var kinds = []Kind{KindOnce, KindInterval, KindDaily, KindWeekdays, KindWeekly, KindMonthly}

// LatePolicy says what a runner does with an occurrence it reaches more
// than LateTolerance after it was due (the host was down or busy).
type LatePolicy string

const (
	// LateCatchUp runs once, now, for the latest missed occurrence; the
	// earlier missed ones are recorded as skipped.
	LateCatchUp LatePolicy = "catch_up"
	// LateSkip runs none of the missed occurrences; all are recorded as
	// skipped.
	LateSkip LatePolicy = "skip"
)

// Limits of a schedule and of a plan.
const (
	// LateTolerance is how late an occurrence may be reached and still run
	// as if on time (the reference's 60 s).
	LateTolerance = 60 * time.Second
	// MinEvery and MaxEvery bound an interval.
	MinEvery = 60 * time.Second
	MaxEvery = 366 * 24 * time.Hour
	// MaxSkipped bounds Plan.Skipped; Plan.SkippedCount counts them all.
	MaxSkipped = 100
)

// The field names of a schedule in a form (ParseSchedule, Fields) and in
// FieldErrors.
const (
	FieldKind     = "kind"
	FieldAt       = "at"
	FieldEvery    = "every"
	FieldTime     = "time"
	FieldWeekday  = "weekday"
	FieldDay      = "day"
	FieldTimezone = "timezone"
	FieldLate     = "late"
	// FieldAnchor is not shown in the form: Fields writes it so that a
	// stored interval reads back with the same anchor.
	FieldAnchor = "anchor"
)

// atLayout is how a once schedule's local date and time are entered and
// shown.
const atLayout = "2006-01-02 15:04"

// Schedule is when a task runs. The zero value is invalid; build one with
// ParseSchedule, or fill it and call Validate.
//
// Timezone is required for every kind. For daily, weekdays, weekly and
// monthly it is the zone of the wall time Hour:Minute. For once it is the
// zone the "at" date and time is entered and shown in (At itself is an
// instant). For interval it does not move any occurrence (an interval is
// absolute time: "every 24h" drifts by an hour in local time across a DST
// change); it is the zone run times are shown in. The admin form prefills
// it from the guild's task policy.
//
// Wall times across DST changes: a local time that does not exist (the
// hour skipped when clocks spring forward) runs once, at the shifted time —
// the wall time read with the offset in effect before the gap, so 02:30 on
// the US spring-forward day runs at 03:30 EDT and 02:30 on Europe/Berlin's
// at 03:30 CEST. That is what systemd timers (and mktime) do; vixie cron
// would run at 03:00. A local time that occurs twice (clocks fall back)
// runs once, at its first occurrence (01:30 EDT, not 01:30 EST).
type Schedule struct {
	Kind Kind
	// At is the instant of a once schedule.
	At time.Time
	// Every is an interval's period: whole seconds, MinEvery..MaxEvery.
	Every time.Duration
	// Anchor is an interval's origin: occurrences are Anchor + k·Every for
	// k ≥ 0, never drifting with run times. It defaults to the
	// definition's creation time (Anchored; the first run is then one Every
	// after creation, as Next is strictly after). A zero Anchor left as it
	// is means the Unix epoch, which aligns "every 15 minutes" to :00, :15,
	// :30 and :45 UTC.
	Anchor time.Time
	// Hour and Minute are the local wall time of the calendar kinds.
	Hour, Minute int
	// Weekday is the day of a weekly schedule.
	Weekday time.Weekday
	// Day is the day of the month (1..31) of a monthly schedule.
	Day int
	// Timezone is an explicit IANA zone name ("Europe/Berlin", "UTC");
	// "Local" is refused.
	Timezone string
	// Late is the policy for occurrences reached more than LateTolerance
	// late.
	Late LatePolicy
}

// FieldErrors maps a form field (FieldKind, FieldAt, ...) to the message
// shown next to it. A nil FieldErrors means no problem.
type FieldErrors map[string]string

// Error lists the problems in field order.
func (fe FieldErrors) Error() string {
	keys := make([]string, 0, len(fe))
	for k := range fe {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + fe[k]
	}
	return "tasks: invalid schedule: " + strings.Join(parts, "; ")
}

var _ error = FieldErrors(nil)

// ParseSchedule reads a schedule from form fields (FieldKind, FieldAt,
// FieldEvery, FieldTime, FieldWeekday, FieldDay, FieldTimezone, FieldLate;
// optionally FieldAnchor). Fields that do not apply to the kind, and keys
// that are not schedule fields, are ignored. An empty "late" means
// LateCatchUp. It returns every problem found, keyed by field; with any
// problem the Schedule must not be used.
//
// Accepted forms: at "2026-12-24 18:00" (or with a T; a local time in
// timezone) or an RFC 3339 instant; every a Go duration ("15m", "2h",
// "90s") or a number of seconds; time "HH:MM" (24-hour, "9:05" too);
// weekday "monday" or "mon" (any case); day 1..31.
//
// ParseSchedule knows no clock: the service refuses a once schedule whose
// Next(now) is false ("at" is in the past).
func ParseSchedule(fields map[string]string) (Schedule, FieldErrors) {
	fe := FieldErrors{}
	get := func(k string) string { return strings.TrimSpace(fields[k]) }
	var s Schedule

	kind := get(FieldKind)
	s.Kind = Kind(strings.ToLower(kind))
	if kind == "" {
		fe[FieldKind] = "kind is required: once, interval, daily, weekdays, weekly or monthly"
	}

	s.Timezone = get(FieldTimezone)
	loc, msg := checkZone(s.Timezone)
	if msg != "" {
		fe[FieldTimezone] = msg
	}

	switch late := strings.ToLower(get(FieldLate)); late {
	case "":
		s.Late = LateCatchUp
	default:
		s.Late = LatePolicy(late)
	}

	switch s.Kind {
	case KindOnce:
		v := get(FieldAt)
		if v == "" {
			break // Validate: required
		}
		at, ok := parseAt(v, loc)
		if !ok {
			fe[FieldAt] = "at must be a date and time such as 2026-12-24 18:00"
		}
		s.At = at
	case KindInterval:
		if v := get(FieldEvery); v != "" {
			d, ok := parseEvery(v)
			if !ok {
				fe[FieldEvery] = "every must be a duration such as 15m, 2h or 90s"
			} else if d == 0 {
				d = -1 // "0s" was given: Validate says "at least", not "required"
			}
			s.Every = d
		}
		if v := get(FieldAnchor); v != "" {
			a, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				fe[FieldAnchor] = "anchor must be an RFC 3339 instant such as 2026-12-01T09:00:00Z"
			}
			s.Anchor = a
		}
	case KindDaily, KindWeekdays, KindWeekly, KindMonthly:
		if v := get(FieldTime); v != "" {
			h, m, ok := parseClock(v)
			if !ok {
				fe[FieldTime] = "time must be HH:MM (24-hour), such as 09:00"
			}
			s.Hour, s.Minute = h, m
		} else {
			s.Hour = -1 // Validate: required
		}
		if s.Kind == KindWeekly {
			wd, ok := parseWeekday(get(FieldWeekday))
			if !ok {
				fe[FieldWeekday] = "weekday must be a day of the week such as monday"
			}
			s.Weekday = wd
		}
		if s.Kind == KindMonthly {
			if v := get(FieldDay); v != "" {
				d, err := strconv.Atoi(v)
				if err != nil || !allDigits(v) || d < 1 || d > 31 {
					fe[FieldDay] = "day must be a day of the month from 1 to 31"
				}
				s.Day = d
			}
		}
	}

	s.validate(func(field, msg string) {
		if _, ok := fe[field]; !ok {
			fe[field] = msg
		}
	})
	if len(fe) == 0 {
		return s, nil
	}
	return s, fe
}

// Validate checks a schedule's values (one read from storage or filled by
// hand) and returns the problems keyed by field, nil when it is valid.
func (s Schedule) Validate() FieldErrors {
	fe := FieldErrors{}
	s.validate(func(field, msg string) {
		if _, ok := fe[field]; !ok {
			fe[field] = msg
		}
	})
	if len(fe) == 0 {
		return nil
	}
	return fe
}

func (s Schedule) valid() bool {
	ok := true
	s.validate(func(string, string) { ok = false })
	return ok
}

// validate reports each problem through add; it allocates nothing for a
// valid schedule (Next and Plan call it).
func (s Schedule) validate(add func(field, msg string)) {
	known := false
	for _, k := range kinds {
		known = known || s.Kind == k
	}
	if !known {
		add(FieldKind, fmt.Sprintf("unknown kind %q: choose once, interval, daily, weekdays, weekly or monthly", quoted(string(s.Kind))))
	}
	if _, msg := checkZone(s.Timezone); msg != "" {
		add(FieldTimezone, msg)
	}
	if s.Late != LateCatchUp && s.Late != LateSkip {
		add(FieldLate, fmt.Sprintf("late must be catch_up or skip, not %q", quoted(string(s.Late))))
	}
	switch s.Kind {
	case KindOnce:
		if s.At.IsZero() {
			add(FieldAt, "at is required: a date and time such as 2026-12-24 18:00")
		}
	case KindInterval:
		switch {
		case s.Every == 0:
			add(FieldEvery, "every is required: a duration such as 15m, 2h or 90s")
		case s.Every < MinEvery:
			add(FieldEvery, "every must be at least 1 minute (60s)")
		case s.Every > MaxEvery:
			add(FieldEvery, "every must be at most 366 days (8784h)")
		case s.Every%time.Second != 0:
			add(FieldEvery, "every must be a whole number of seconds")
		}
	case KindDaily, KindWeekdays, KindWeekly, KindMonthly:
		if s.Hour == -1 && s.Minute == 0 {
			add(FieldTime, "time is required: HH:MM (24-hour), such as 09:00")
		} else if s.Hour < 0 || s.Hour > 23 || s.Minute < 0 || s.Minute > 59 {
			add(FieldTime, "time must be between 00:00 and 23:59")
		}
		if s.Kind == KindWeekly && (s.Weekday < time.Sunday || s.Weekday > time.Saturday) {
			add(FieldWeekday, "weekday must be a day of the week such as monday")
		}
		if s.Kind == KindMonthly {
			if s.Day == 0 {
				add(FieldDay, "day is required: a day of the month from 1 to 31")
			} else if s.Day < 1 || s.Day > 31 {
				add(FieldDay, "day must be a day of the month from 1 to 31")
			}
		}
	}
}

// Anchored returns s with its Anchor defaulted to created, the
// definition's creation time, when it has none: the tasks service calls it
// when it saves a new definition, so an interval's first run is one Every
// after creation and later ones never drift. Other kinds are returned as
// they are.
func (s Schedule) Anchored(created time.Time) Schedule {
	if s.Kind == KindInterval && s.Anchor.IsZero() {
		s.Anchor = created
	}
	return s
}

// Fields writes the schedule as form fields: ParseSchedule(s.Fields())
// reads back the same schedule (the edit form's prefill and a storable
// shape). "at" is the local date and time when that names At exactly, else
// an RFC 3339 instant (a time with seconds, or the second 01:30 of a
// fall-back night).
func (s Schedule) Fields() map[string]string {
	f := map[string]string{
		FieldKind:     string(s.Kind),
		FieldTimezone: s.Timezone,
		FieldLate:     string(s.Late),
	}
	switch s.Kind {
	case KindOnce:
		loc, _ := checkZone(s.Timezone)
		if loc == nil {
			loc = time.UTC
		}
		wall := s.At.In(loc).Format(atLayout)
		if back, ok := parseAt(wall, loc); ok && back.Equal(s.At) {
			f[FieldAt] = wall
		} else {
			f[FieldAt] = s.At.In(loc).Format(time.RFC3339Nano)
		}
	case KindInterval:
		f[FieldEvery] = compactPeriod(s.Every)
		if !s.Anchor.IsZero() {
			f[FieldAnchor] = s.Anchor.Format(time.RFC3339Nano)
		}
	case KindDaily, KindWeekdays, KindWeekly, KindMonthly:
		f[FieldTime] = fmt.Sprintf("%02d:%02d", s.Hour, s.Minute)
		if s.Kind == KindWeekly {
			f[FieldWeekday] = strings.ToLower(s.Weekday.String())
		}
		if s.Kind == KindMonthly {
			f[FieldDay] = strconv.Itoa(s.Day)
		}
	}
	return f
}

// Describe says the schedule in a sentence for the UI: "Every weekday at
// 09:00 (Europe/Berlin)", "Every 15 minutes", "Monthly on day 31 at 08:00
// (America/New_York) — the last day in shorter months", "Once at
// 2026-12-24 18:00 (Europe/Berlin)".
func (s Schedule) Describe() string {
	loc, _ := checkZone(s.Timezone)
	tz := s.Timezone
	if loc == nil {
		loc, tz = time.UTC, "UTC"
	}
	at := fmt.Sprintf("at %02d:%02d (%s)", s.Hour, s.Minute, tz)
	switch s.Kind {
	case KindOnce:
		return "Once at " + s.At.In(loc).Format(atLayout) + " (" + tz + ")"
	case KindInterval:
		return "Every " + periodPhrase(s.Every)
	case KindDaily:
		return "Every day " + at
	case KindWeekdays:
		return "Every weekday " + at
	case KindWeekly:
		return "Every " + s.Weekday.String() + " " + at
	case KindMonthly:
		d := fmt.Sprintf("Monthly on day %d %s", s.Day, at)
		if s.Day > 28 {
			d += " — the last day in shorter months"
		}
		return d
	}
	return fmt.Sprintf("Unknown schedule kind %q", string(s.Kind))
}

// periodPhrase names d in its largest whole unit: "minute", "15 minutes",
// "90 seconds", "2 days".
func periodPhrase(d time.Duration) string {
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}}
	for _, u := range units {
		if d >= u.size && d%u.size == 0 {
			if n := d / u.size; n != 1 {
				return fmt.Sprintf("%d %ss", n, u.name)
			}
			return u.name
		}
	}
	return d.String()
}

// compactPeriod writes d as "15m", "2h" or "90s" (ParseSchedule reads it
// back).
func compactPeriod(d time.Duration) string {
	for _, u := range []struct {
		size time.Duration
		unit string
	}{{time.Hour, "h"}, {time.Minute, "m"}} {
		if d != 0 && d%u.size == 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + u.unit
		}
	}
	return d.String()
}

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

var zones sync.Map // IANA name → *time.Location, loaded ones only (bounded by the tz database)

// checkZone loads an explicit IANA zone, or says what is wrong with name.
func checkZone(name string) (*time.Location, string) {
	switch {
	case name == "":
		return nil, "timezone is required: an IANA name such as Europe/Berlin"
	case strings.EqualFold(name, "Local"):
		return nil, "timezone must be an explicit IANA name such as Europe/Berlin, not Local (the host's zone)"
	}
	if v, ok := zones.Load(name); ok {
		return v.(*time.Location), ""
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Sprintf("unknown time zone %q: use an IANA name such as Europe/Berlin", quoted(name))
	}
	zones.Store(name, loc)
	return loc, ""
}

// parseAt reads a once schedule's "at": a local date and time in loc, or
// an RFC 3339 instant. Without loc (the zone is wrong) it checks the form,
// reading the time in UTC.
func parseAt(v string, loc *time.Location) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, true
	}
	for _, layout := range []string{atLayout, "2006-01-02T15:04"} {
		w, err := time.Parse(layout, v)
		if err != nil {
			continue
		}
		if loc == nil {
			loc = time.UTC // the zone's own message is enough
		}
		y, m, d := w.Date()
		return resolve(y, m, d, w.Hour(), w.Minute(), loc), true
	}
	return time.Time{}, false
}

// parseEvery reads a Go duration or a number of seconds.
func parseEvery(v string) (time.Duration, bool) {
	if allDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(math.MaxInt64/time.Second) {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	d, err := time.ParseDuration(v)
	return d, err == nil
}

// parseClock reads "HH:MM" or "H:MM"; the range is Validate's.
func parseClock(v string) (int, int, bool) {
	h, m, ok := strings.Cut(v, ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 || !allDigits(h) || !allDigits(m) {
		return 0, 0, false
	}
	hh, _ := strconv.Atoi(h)
	mm, _ := strconv.Atoi(m)
	return hh, mm, true
}

func parseWeekday(v string) (time.Weekday, bool) {
	v = strings.ToLower(v)
	for wd := time.Sunday; wd <= time.Saturday; wd++ {
		name := strings.ToLower(wd.String())
		if v != "" && (v == name || v == name[:3]) {
			return wd, true
		}
	}
	return -1, false
}

func allDigits(v string) bool {
	for _, r := range v {
		if r < '0' || r > '9' {
			return false
		}
	}
	return v != ""
}

// maxQuoted is how many code points of a typed value a message quotes.
const maxQuoted = 40

// quoted is a typed value as a field message quotes it: at most maxQuoted
// code points of it (with "…" when cut), so that a pasted page of text
// does not come back as its own error message.
func quoted(s string) string {
	if c := clip(s, maxQuoted); c != s {
		return c + "…"
	}
	return s
}
