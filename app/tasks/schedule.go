package tasks

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
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
