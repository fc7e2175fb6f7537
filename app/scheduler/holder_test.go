package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer collects the log lines of the runner goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLeaseOfAGoneProcessIsAwaitedAtInfo: after a kill -9 the restarted
// process finds the dead one's runner lease and waits for it to expire;
// that is the expected recovery, logged at INFO with when the lease
// expires, while a lease held by a live runner keeps the original's ERROR.
func TestLeaseOfAGoneProcessIsAwaitedAtInfo(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	exited := exec.Command(os.Args[0], "-test.run=^$")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := exited.Process.Pid
	me := host + ":" + strconv.Itoa(os.Getpid())
	tests := []struct {
		name      string
		holder    string
		wantLevel string
		wantMsg   string
	}{
		{"this holder name (restart with the same pid)", me, "INFO", "waiting for the lease of a process that is gone"},
		{"a pid of this host that has exited", host + ":" + strconv.Itoa(deadPid), "INFO", "waiting for the lease of a process that is gone"},
		{"a live pid of this host", host + ":" + strconv.Itoa(os.Getppid()), "ERROR", "Module scheduler paused: another scheduler runner holds the lease"},
		{"another host", "elsewhere.invalid:1", "ERROR", "Module scheduler paused: another scheduler runner holds the lease"},
		{"a holder not named host:pid", "runner-b", "ERROR", "Module scheduler paused: another scheduler runner holds the lease"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, "")
			clk := newClock()
			until := clk.Now().Add(90 * time.Second)
			if _, err := st.Writer().Exec(`INSERT INTO kimi_scheduler_runner (id, token, holder, leased_until_ms) VALUES (1, 'dead', ?, ?)
				ON CONFLICT (id) DO UPDATE SET token = excluded.token, holder = excluded.holder, leased_until_ms = excluded.leased_until_ms`,
				tc.holder, until.UnixMilli()); err != nil {
				t.Fatal(err)
			}
			logs := &lockedBuffer{}
			s, err := New(Options{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil)), Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			eventually(t, "the standby's log line", func() bool { return strings.Contains(logs.String(), "holder=") })
			line := logs.String()
			if !strings.Contains(line, "level="+tc.wantLevel+" ") || !strings.Contains(line, tc.wantMsg) {
				t.Fatalf("standby logged %q, want level %s and %q", line, tc.wantLevel, tc.wantMsg)
			}
			if tc.wantLevel == "INFO" && !strings.Contains(line, "expires="+until.UTC().Format(time.RFC3339)) {
				t.Errorf("standby logged %q, want when the lease expires (%s)", line, until.UTC().Format(time.RFC3339))
			}
		})
	}
}
