package kimitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failedTB is a test that has failed, recording what it logs.
type failedTB struct {
	testing.TB
	logs []string
}

func (f *failedTB) Failed() bool { return true }
func (f *failedTB) Name() string { return "TestSomething/case_1" }
func (f *failedTB) Helper()      {}
func (f *failedTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

// TestFailedTestKeepsTheApplianceLog: a failed test shows the log's last
// logTail lines, not the earlier ones, and the whole log is kept in a file
// of $KIMI_ARTIFACTS named for the test; a short log is shown whole, with
// no file.
func TestFailedTestKeepsTheApplianceLog(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KIMI_ARTIFACTS", dir)
	tests := []struct {
		name  string
		lines int
		kept  bool
	}{
		{"long log", logTail + 20, true},
		{"short log", logTail, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log lockedBuffer
			for i := 1; i <= tt.lines; i++ {
				fmt.Fprintf(&log, "line %03d\n", i)
			}
			before, _ := filepath.Glob(filepath.Join(dir, "*"))
			f := &failedTB{}
			(&Appliance{t: f, log: &log}).reportLog()
			if len(f.logs) != 1 {
				t.Fatalf("logged %d times, want once: %q", len(f.logs), f.logs)
			}
			shown := f.logs[0]
			first := tt.lines - logTail + 1
			if !strings.Contains(shown, fmt.Sprintf("line %03d\n", first)) || !strings.Contains(shown, fmt.Sprintf("line %03d", tt.lines)) {
				t.Fatalf("the shown log lacks its last %d lines:\n%s", logTail, shown)
			}
			if first > 1 && strings.Contains(shown, fmt.Sprintf("line %03d\n", first-1)) {
				t.Fatalf("the shown log has more than its last %d lines:\n%s", logTail, shown)
			}
			after, _ := filepath.Glob(filepath.Join(dir, "*"))
			if !tt.kept {
				if len(after) != len(before) {
					t.Fatalf("a short log was kept in a file: %v", after)
				}
				return
			}
			files, _ := filepath.Glob(filepath.Join(dir, "TestSomething_case_1-kimi-*.log"))
			if len(files) != 1 || !strings.Contains(shown, files[0]) {
				t.Fatalf("kept files %v, the message names:\n%s", files, shown)
			}
			whole, err := os.ReadFile(files[0])
			if err != nil || string(whole) != log.String() {
				t.Fatalf("the kept log = %q (%v), want the whole log", whole, err)
			}
		})
	}
}

// TestKeepArtifact: each call keeps its data in a file of its own in
// $KIMI_ARTIFACTS, created when missing, and logs its path.
func TestKeepArtifact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-yet")
	t.Setenv("KIMI_ARTIFACTS", dir)
	f := &failedTB{}
	p1 := KeepArtifact(f, "shot-*.png", []byte("one"))
	p2 := KeepArtifact(f, "shot-*.png", []byte("two"))
	if p1 == "" || p2 == "" || p1 == p2 || filepath.Dir(p1) != dir || !strings.HasPrefix(filepath.Base(p1), "shot-") {
		t.Fatalf("kept %q and %q in %s", p1, p2, dir)
	}
	for p, want := range map[string]string{p1: "one", p2: "two"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Fatalf("%s = %q (%v), want %q", p, b, err, want)
		}
	}
	if len(f.logs) != 2 || !strings.Contains(f.logs[0], p1) {
		t.Fatalf("logged %q", f.logs)
	}
}
