package admin

import (
	"fmt"
	"strconv"
	"time"
)

// humanDuration renders an uptime such as "3d 4h", "2h 5m" or "42s".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	sec := (d - m*time.Minute) / time.Second
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, sec)
	default:
		return fmt.Sprintf("%ds", sec)
	}
}

// humanBytes renders a size in binary units ("1.5 MiB").
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// relativeTime renders t as seen from now: "just now", "3 minutes ago",
// "5 hours ago", "yesterday", "4 days ago", then a date ("Dec 1", or
// "Dec 1, 2025" in another year). Times in the future (a clock step) read
// as the date, never as "in 3 minutes".
func relativeTime(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	d := now.Sub(t)
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, unit)
	}
	switch {
	case d < -time.Minute:
		// In the future by more than a small skew: the date says what it is.
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int64(d/time.Minute), "minute")
	case d < 24*time.Hour:
		return plural(int64(d/time.Hour), "hour")
	case d < 48*time.Hour:
		return "yesterday"
	case d < 7*24*time.Hour:
		return fmt.Sprintf("%d days ago", int64(d/(24*time.Hour)))
	}
	if t.Year() == now.Year() {
		return t.Format("Jan 2")
	}
	return t.Format("Jan 2, 2006")
}

// exactTime is the tooltip of a relative time: "2026-12-01 09:12:03 UTC".
func exactTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// relativeNext renders a job's next run as seen from now: "now" within a
// minute either way, "in 5 minutes", "in 3 hours", "tomorrow", "in 4
// days", then the date; a run already due reads as relativeTime does
// ("overdue, 3 minutes ago"). The exact time goes in the tooltip.
func relativeNext(t, now time.Time) string {
	d := t.Sub(now)
	in := func(n int64, unit string) string {
		if n == 1 {
			return "in 1 " + unit
		}
		return fmt.Sprintf("in %d %ss", n, unit)
	}
	switch {
	case d <= -time.Minute:
		return "overdue, " + relativeTime(t, now)
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return in(int64(d/time.Minute), "minute")
	case d < 24*time.Hour:
		return in(int64(d/time.Hour), "hour")
	case d < 48*time.Hour:
		return "tomorrow"
	case d < 7*24*time.Hour:
		return in(int64(d/(24*time.Hour)), "day")
	}
	t, now = t.UTC(), now.UTC()
	if t.Year() == now.Year() {
		return t.Format("Jan 2")
	}
	return t.Format("Jan 2, 2006")
}

// intervalText is a job's interval as the words after "every", exact in
// the largest unit that divides it: "day", "7 days", "36 hours", "90
// minutes", "45 seconds" ("" for none).
func intervalText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	for _, u := range []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d%u.size == 0 {
			if n := int64(d / u.size); n > 1 {
				return unitCount(n, u.name)
			}
			return u.name // "every day", "every hour"
		}
	}
	return unitCount(int64(d.Round(time.Second)/time.Second), "second")
}

// unitCount is "1 unit" or "n units".
func unitCount(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}
