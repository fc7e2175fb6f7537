package app

import (
	"context"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// auditKimiGoroutines returns the stacks of the goroutines running Kimi's
// code, discordgo or the websocket library (not the caller's).
func auditKimiGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the caller's own goroutine
			continue
		}
		if strings.Contains(g, "kimiapp/kimi/") || strings.Contains(g, "bwmarrin/discordgo") || strings.Contains(g, "gorilla/websocket") {
			if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "testing.(*T).Run") {
				continue
			}
			out = append(out, g)
		}
	}
	return out
}

// TestAuditServeDemoLeavesNoGoroutines: `serve --demo` connects the bot to
// the built-in fake (gateway, heartbeat, READY sync) and runs the module
// host; after the context ends and serve returns, none of their goroutines
// is left (the bot's reconnect loop, discordgo's listen and heartbeat, the
// interaction dispatches, the host's queues, the fake's gateway).
func TestAuditServeDemoLeavesNoGoroutines(t *testing.T) {
	before := auditKimiGoroutines()
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_DEMO": "true"}, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()
	connected := regexp.MustCompile(`msg="connected to the gateway"`)
	for deadline := time.Now().Add(30 * time.Second); !connected.MatchString(stderr.String()); {
		select {
		case rc := <-code:
			t.Fatalf("serve exited with %d:\n%s", rc, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo bot never connected:\n%s", stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case rc := <-code:
		if rc != ExitOK {
			t.Fatalf("exit code %d:\n%s", rc, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = slices.DeleteFunc(auditKimiGoroutines(), func(g string) bool {
			_, rest, _ := strings.Cut(g, "\n")
			return slices.ContainsFunc(before, func(b string) bool { _, r, _ := strings.Cut(b, "\n"); return r == rest })
		})
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutines left after serve returned:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
