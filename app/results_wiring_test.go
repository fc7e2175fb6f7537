package app

import (
	"context"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// subscriberModule subscribes to "digest" in guild 42 at every Start.
type subscriberModule struct {
	mu     sync.Mutex
	rt     *sdk.Runtime
	subErr error
}

func (m *subscriberModule) Migrations() []sdk.Migration { return nil }
func (m *subscriberModule) Close(context.Context) error { return nil }
func (m *subscriberModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	var err error
	if rt.ScheduledResults != nil {
		err = rt.ScheduledResults.Subscribe(ctx, "digest", 42, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil })
	}
	m.mu.Lock()
	m.rt, m.subErr = rt, err
	m.mu.Unlock()
	return nil
}

func (m *subscriberModule) started() (*sdk.Runtime, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rt, m.subErr
}

// TestServeWiresScheduledResults: `serve` advertises scheduled_results.v1
// (with the adapter's capabilities), hands a module that declares a
// subscription its port, through which it subscribes, and gives a custom
// build's OnServe the results service and the store; OnServe's ctx ends
// before serve returns.
func TestServeWiresScheduledResults(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_MODULES": "subscriber"}, "")
	mod := &subscriberModule{}
	c.specs = []sdk.Spec{{Name: "subscriber", Version: "1.0", APIVersion: sdk.APIVersion,
		Permissions: sdk.Permissions{ScheduledResults: []string{"digest"}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}}
	parts := make(chan ServeParts, 1)
	var serveCtx context.Context
	c.onServe = func(ctx context.Context, p ServeParts) {
		serveCtx = ctx
		parts <- p
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()
	ready := regexp.MustCompile(`msg=ready component=kimi`)
	for deadline := time.Now().Add(30 * time.Second); !ready.MatchString(stderr.String()); {
		select {
		case rc := <-code:
			t.Fatalf("serve exited with %d before ready:\n%s", rc, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// stop ends serve: exit 0, and OnServe's ctx ended with it.
	stop := func() {
		t.Helper()
		cancel()
		select {
		case rc := <-code:
			if rc != ExitOK {
				t.Fatalf("exit code %d:\n%s", rc, stderr)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
		}
		if serveCtx.Err() == nil {
			t.Fatal("OnServe's ctx did not end with serve")
		}
	}
	var p ServeParts
	select {
	case p = <-parts:
	default:
		t.Fatal("OnServe was not called before ready")
	}
	if p.Store == nil || p.Results == nil || p.Logger == nil {
		t.Fatalf("ServeParts = %+v", p)
	}
	rt, subErr := mod.started()
	if rt == nil {
		t.Fatalf("the module did not start:\n%s", stderr)
	}
	for _, want := range []string{sdk.CapScheduledResults, sdk.CapProposals, sdk.CapDiscordGuildCommands} {
		if !rt.Capabilities.Has(want) {
			t.Errorf("the module's capabilities %v lack %s", rt.Capabilities.Names(), want)
		}
	}
	if rt.ScheduledResults == nil {
		t.Fatal("a module declaring a subscription got no ScheduledResults port")
	}
	if subErr != nil && subErr.Error() == "results: not implemented" {
		stop() // TEMP(h15-core): until the core's Binding lands on main
		t.Skip("the results core is not merged yet")
	}
	if subErr != nil {
		t.Fatalf("Subscribe at start: %v", subErr)
	}
	subs, err := p.Results.Subscriptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := results.SubKey{Module: "subscriber", Name: "digest", GuildID: 42}
	if len(subs) != 1 || subs[0].SubKey != want || !subs[0].Registered {
		t.Fatalf("subscriptions = %+v, want %v registered", subs, want)
	}
	stop()
}
