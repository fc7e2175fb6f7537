package main

import (
	"strings"
	"syscall"
	"testing"
)

// TestServeDemo: `kimi serve --demo` starts against the built-in fake Discord, says so in its
// log, labels the pages as a demo, serves /demo (behind sign-in) and shuts down cleanly.
func TestServeDemo(t *testing.T) {
	t.Parallel()
	s := startServer(t, testEnv(t.TempDir()), "--demo")
	if len(s.linesContaining("running in demo mode")) != 1 {
		t.Fatalf("no demo-mode line in the log:\n%s", s.log())
	}
	if code, body := s.get("/login"); code != 200 || !strings.Contains(body, `data-testid="demo-banner"`) {
		t.Fatalf("GET /login = %d, demo banner missing", code)
	}
	if code, _ := s.get("/demo"); code != 303 {
		t.Fatalf("GET /demo = %d, want 303 to sign in", code)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM; log:\n%s", code, s.log())
	}
}

// TestServeWithoutDemo: without --demo nothing is labelled a demo.
func TestServeWithoutDemo(t *testing.T) {
	t.Parallel()
	s := startServer(t, testEnv(t.TempDir()))
	if code, body := s.get("/login"); code != 200 || strings.Contains(body, "demo-banner") {
		t.Fatalf("GET /login = %d, or labelled a demo", code)
	}
	if len(s.linesContaining("demo mode")) != 0 {
		t.Fatal("demo mode logged without --demo")
	}
}
