package tasks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

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
