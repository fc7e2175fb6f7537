package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestShutdownFinishesInFlightRequests: a request that is running when
// shutdown starts completes with its full response; new connections are
// refused afterwards.
func TestShutdownFinishesInFlightRequests(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "finished")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}

	type reply struct {
		body string
		err  error
	}
	got := make(chan reply, 1)
	go func() {
		resp, err := client.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- reply{string(b), err}
	}()
	<-entered

	done := make(chan error, 1)
	go func() { done <- shutdownHTTP(context.Background(), srv, slog.New(slog.DiscardHandler)) }()
	// Shutdown closes the listener first; wait until it has, so the
	// in-flight request is released only during the drain.
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
	}
	select {
	case <-done:
		t.Fatal("shutdown returned while a request was still running")
	default:
	}
	close(release)
	r := <-got
	if r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request: %q, %v", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := client.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Fatal("a new request succeeded after shutdown")
	}
}

// kimiGoroutines returns the stacks of the goroutines running Kimi's
// code, discordgo or the websocket library (not the caller's).
func kimiGoroutines() []string {
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

// TestServeDemoLeavesNoGoroutines: `serve --demo` connects the bot to
// the built-in fake (gateway, heartbeat, READY sync) and runs the module
// host; after the context ends and serve returns, none of their goroutines
// is left (the bot's reconnect loop, discordgo's listen and heartbeat, the
// interaction dispatches, the host's queues, the fake's gateway).
func TestServeDemoLeavesNoGoroutines(t *testing.T) {
	before := kimiGoroutines()
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
	noGoroutinesLeft(t, before)
}

// noGoroutinesLeft fails when Kimi goroutines that were not running
// before are still there after a grace of 10 s.
func noGoroutinesLeft(t *testing.T, before []string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = slices.DeleteFunc(kimiGoroutines(), func(g string) bool {
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

// TestServeStoppedWhilePartsStartLeavesNoGoroutines: a shutdown while the
// parts still start (here the module host waits for a Discord that is never
// ready, its gateway lookup failing, before it starts its module) returns,
// and the goroutine that ran the start does not stay blocked behind it.
func TestServeStoppedWhilePartsStartLeavesNoGoroutines(t *testing.T) {
	before := kimiGoroutines()
	mod := &discordAtStart{channel: 1, guild: 1, report: func(sdk.MessageRef, []sdk.InviteSnapshot, error, error) {}}
	spec := sdk.Spec{Name: "discord_at_start", Version: "1.0.0", APIVersion: sdk.APIVersion,
		Permissions: sdk.Permissions{DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage, sdk.ActionFetchInvites}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_DEMO": "true",
		"KIMI_MODULES": "discord_at_start", "KIMI_DISCORD_READY_WAIT": "5m"}, "")
	c.specs = []sdk.Spec{spec}
	c.onDemoFake = func(f *fakediscord.Server, _ fakediscord.DemoGuild) {
		f.InjectFault(fakediscord.Fault{Route: "GET /gateway", Status: http.StatusBadGateway, Times: 1 << 30})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), `msg=starting component=kimi part=modules`); {
		select {
		case rc := <-code:
			t.Fatalf("serve exited with %d:\n%s", rc, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the modules never began to start:\n%s", stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if strings.Contains(stderr.String(), `msg=ready`) {
		t.Fatalf("every part started although Discord never got ready:\n%s", stderr)
	}
	cancel()
	select {
	case <-code:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	noGoroutinesLeft(t, before)
}
