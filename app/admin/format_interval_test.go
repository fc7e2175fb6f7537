package admin

import (
	"testing"
	"time"
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
