package app

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// subscriberModule subscribes to "digest" in guild 42 at every Start.
type subscriberModule struct {
	mu        sync.Mutex
	rt        *sdk.Runtime
	subErr    error
	delivered []sdk.ScheduledResult
	closeErr  error // of a Subscribe tried in Close
	closed    bool
}

func (m *subscriberModule) Migrations() []sdk.Migration { return nil }

// Close tries the port once more: by then the outbox must be closed.
func (m *subscriberModule) Close(ctx context.Context) error {
	m.mu.Lock()
	rt := m.rt
	m.mu.Unlock()
	err := rt.ScheduledResults.Subscribe(ctx, "digest", 42, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil })
	m.mu.Lock()
	m.closeErr, m.closed = err, true
	m.mu.Unlock()
	return nil
}
func (m *subscriberModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	var err error
	if rt.ScheduledResults != nil {
		err = rt.ScheduledResults.Subscribe(ctx, "digest", 42, func(_ context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
			m.mu.Lock()
			m.delivered = append(m.delivered, r)
			m.mu.Unlock()
			return nil
		})
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

func (m *subscriberModule) results() []sdk.ScheduledResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.delivered)
}

// allowAll is a producer that allows every access and has no files.
type allowAll struct{}

func (allowAll) CheckAccess(context.Context, results.Publication) error { return nil }
func (allowAll) ReadFile(context.Context, string, string, int64) ([]byte, error) {
	return nil, errors.New("no files")
}

// activateGuild writes guild's server setup (bot_active) into the data
// directory's database before serve opens it.
func activateGuild(t *testing.T, dbPath string, guildID uint64) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dbPath, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer guilds.Close()
	target := guildcfg.GuildTarget(guildID)
	doc, err := guilds.Document(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guilds.Write(ctx, target, "---\nbot_active: true\n---\n", doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
		t.Fatal(err)
	}
}

// TestServeWiresScheduledResults: `serve` advertises scheduled_results.v1
// (with the adapter's capabilities), hands a module that declares a
// subscription its port, through which it subscribes, and gives a custom
// build's OnServe the results service and the store: a producer set there
// enqueues a publication and the module's handler receives it. OnServe's
// ctx ends before serve returns, and the outbox closes before the modules.
func TestServeWiresScheduledResults(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	activateGuild(t, filepath.Join(dataDir, config.DBFile), 42)
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_MODULES": "subscriber"}, "")
	mod := &subscriberModule{}
	c.specs = []sdk.Spec{{Name: "subscriber", Version: "1.0", APIVersion: sdk.APIVersion,
		Permissions: sdk.Permissions{ScheduledResults: []string{"digest"}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}}
	parts := make(chan ServeParts, 1)
	var serveCtx context.Context
	c.onServe = func(ctx context.Context, p ServeParts) {
		serveCtx = ctx
		p.Results.SetProducer(allowAll{})
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
	if subErr != nil {
		t.Fatalf("Subscribe at start: %v", subErr)
	}
	pub := results.Publication{RunID: "run-1", TaskID: "task-1", Revision: 3, GuildID: 42, OwnerID: 7,
		OriginChannelID: 5, PublishedAt: time.Now(), Outcome: sdk.ResultCompleted,
		Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: 42, ChannelID: 5, MessageID: 9}, Content: "the digest"}}}
	var added int
	if err := p.Store.Write(context.Background(), func(tx *sql.Tx) error {
		var err error
		added, err = p.Results.Enqueue(context.Background(), tx, pub)
		return err
	}); err != nil || added != 1 {
		t.Fatalf("Enqueue = %d, %v; want 1 notification", added, err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(mod.results()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the module's handler never received the publication:\n%s", stderr)
		}
	}
	got := mod.results()[0]
	if got.Subscription != "digest" || got.RunID != "run-1" || got.TaskID != "task-1" || got.GuildID != 42 ||
		len(got.Messages) != 1 || got.Messages[0].Content != "the digest" || got.NotificationID == "" {
		t.Fatalf("delivered %+v", got)
	}
	stop()
	// The outbox closed before the modules: a module's Close finds it
	// closed, so no handler runs into a closing module.
	mod.mu.Lock()
	closed, closeErr := mod.closed, mod.closeErr
	mod.mu.Unlock()
	if !closed || !errors.Is(closeErr, results.ErrClosed) {
		t.Fatalf("Subscribe in the module's Close = %v (closed %v), want results.ErrClosed", closeErr, closed)
	}
}
