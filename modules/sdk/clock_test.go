package sdk

import (
	"testing"
	"time"
)

// TestRuntimeNow: Now reads the host's Clock, and the wall clock when the
// runtime (or its Clock) is nil.
func TestRuntimeNow(t *testing.T) {
	fixed := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		rt    *Runtime
		fixed bool
	}{
		{"the host's clock", &Runtime{Clock: func() time.Time { return fixed }}, true},
		{"no clock: the wall clock", &Runtime{}, false},
		{"no runtime: the wall clock", nil, false},
	} {
		before := time.Now()
		got := tc.rt.Now()
		switch {
		case tc.fixed && !got.Equal(fixed):
			t.Errorf("%s: Now = %v, want %v", tc.name, got, fixed)
		case !tc.fixed && (got.Before(before) || got.After(time.Now())):
			t.Errorf("%s: Now = %v, not the wall clock's present", tc.name, got)
		}
	}
}
