package admin

import (
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/results"
)

// TestIntervalText: a job's interval reads in the largest whole unit.
func TestIntervalText(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, ""},
		{-time.Second, ""},
		{7 * 24 * time.Hour, "7 days"},
		{24 * time.Hour, "day"},
		{36 * time.Hour, "36 hours"},
		{time.Hour, "hour"},
		{3 * time.Hour, "3 hours"},
		{90 * time.Minute, "90 minutes"},
		{time.Minute, "minute"},
		{45 * time.Second, "45 seconds"},
		{time.Second, "1 second"},
		{1500 * time.Millisecond, "2 seconds"},
	} {
		if got := intervalText(tt.d); got != tt.want {
			t.Errorf("intervalText(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestUnitCount: one row, not "1 rows".
func TestUnitCount(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 rows"}, {1, "1 row"}, {2, "2 rows"}} {
		if got := unitCount(tt.n, "row"); got != tt.want {
			t.Errorf("unitCount(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestResultRowAttempts: a notification's attempts read with their unit,
// the number always shown ("0 attempts", "1 attempt").
func TestResultRowAttempts(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 attempts"}, {1, "1 attempt"}, {3, "3 attempts"}} {
		if got := resultRow(results.Notification{Attempts: tt.n, PublishedAt: now, ExpiresAt: now}, now).Attempts; got != tt.want {
			t.Errorf("%d attempts read %q, want %q", tt.n, got, tt.want)
		}
	}
}
