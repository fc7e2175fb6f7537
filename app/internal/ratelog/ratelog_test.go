package ratelog

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLimiterPassesOneLinePerCausePerIntervalWithTheSuppressedCount(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(time.Minute, func() time.Time { return now })
	steps := []struct {
		advance        time.Duration
		cause          string
		wantOK         bool
		wantSuppressed int
	}{
		{0, "full", true, 0},
		{time.Second, "full", false, 0},
		{time.Second, "busy", true, 0}, // another cause has its own minute
		{time.Second, "full", false, 0},
		{58 * time.Second, "full", true, 2}, // a minute after the first line
		{time.Second, "full", false, 0},
		{time.Minute, "full", true, 1},
		{0, "busy", true, 0},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		ok, n := l.Allow(s.cause)
		if ok != s.wantOK || n != s.wantSuppressed {
			t.Errorf("step %d (%s): Allow = %v, %d; want %v, %d", i, s.cause, ok, n, s.wantOK, s.wantSuppressed)
		}
	}
}

func TestLogReportsSuppressedLinesOnTheNextLine(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(time.Minute, func() time.Time { return now })
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	for range 5 {
		l.Log(context.Background(), logger, slog.LevelError, "full", "step failed")
		now = now.Add(time.Second)
	}
	now = now.Add(time.Minute)
	l.Log(context.Background(), logger, slog.LevelError, "full", "step failed")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "suppressed") || !strings.Contains(lines[1], "suppressed=4") {
		t.Errorf("lines = %q, want two, the second reporting suppressed=4", lines)
	}
}

func TestLimiterForgetsTheOldestCauseBeyondItsBound(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(time.Minute, func() time.Time { return now })
	for i := range maxCauses + 1 {
		now = now.Add(time.Millisecond)
		l.Allow(string(rune('A' + i)))
	}
	if len(l.causes) != maxCauses {
		t.Errorf("%d causes remembered, want %d", len(l.causes), maxCauses)
	}
	if ok, _ := l.Allow("A"); !ok {
		t.Error("the forgotten oldest cause did not pass again")
	}
}
