package wake

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestFailuresDoubleTheDelayToTheCapAndStartOverAfterASuccess(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFailures(func() time.Time { return now })
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, time.Minute, time.Minute}
	for i, w := range want {
		if got := f.Failed(context.Background(), logger, "step failed", "disk_full", errors.New("full")); got != w {
			t.Errorf("failure %d: delay %v, want %v", i+1, got, w)
		}
	}
	if n := strings.Count(logs.String(), "step failed"); n != 1 {
		t.Errorf("%d lines within a minute, want 1", n)
	}
	f.Succeeded(logger, "steps succeed again")
	if f.Count() != 0 || !strings.Contains(logs.String(), `msg="steps succeed again" failures=8`) {
		t.Errorf("after a success: count %d, log:\n%s", f.Count(), logs.String())
	}
	if got := f.Failed(context.Background(), logger, "step failed", "disk_full", errors.New("full")); got != time.Second {
		t.Errorf("first failure after a success: delay %v, want 1s", got)
	}
}
