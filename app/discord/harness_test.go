package discord

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// Shared test harness: a fakediscord per test and a real discordgo session
// opened against it. Each area's tests build on these; keep area-specific
// helpers in that area's test files with names prefixed by the area.

// newFake starts a fakediscord closed with the test.
func newFake(t testing.TB, opts fakediscord.Options) *fakediscord.Server {
	t.Helper()
	f := fakediscord.New(opts)
	t.Cleanup(f.Close)
	return f
}

// openSession opens a discordgo session against f configured as the Bot
// configures it (SyncEvents, no discordgo reconnects, no 429 sleeps, no 502
// retries), adds handlers before Open, and closes it with the test.
func openSession(t testing.TB, f *fakediscord.Server, intents discordgo.Intent, handlers ...any) *discordgo.Session {
	t.Helper()
	s := f.Session()
	s.ShouldReconnectOnError = false
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.Identify.Intents = intents
	for _, h := range handlers {
		s.AddHandler(h)
	}
	if err := s.Open(); err != nil {
		t.Fatalf("open session: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testSource is a sessionSource over one session (nil: not connected).
type testSource struct {
	mu    sync.Mutex
	s     *discordgo.Session
	botID uint64
	appID uint64
}

func newTestSource(f *fakediscord.Server, s *discordgo.Session) *testSource {
	bot, _ := strconv.ParseUint(f.BotID(), 10, 64)
	app, _ := strconv.ParseUint(f.AppID(), 10, 64)
	return &testSource{s: s, botID: bot, appID: app}
}

func (ts *testSource) session() (*discordgo.Session, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.s == nil {
		return nil, ErrNotConnected
	}
	return ts.s, nil
}

func (ts *testSource) self() (uint64, uint64) { return ts.botID, ts.appID }

var _ sessionSource = (*testSource)(nil)

func TestHarnessOpensAgainstTheFake(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	ready := make(chan *discordgo.Ready, 1)
	s := openSession(t, f, discordgo.IntentsGuilds, func(_ *discordgo.Session, r *discordgo.Ready) { ready <- r })
	r := <-ready
	if r.User == nil || r.User.ID != f.BotID() {
		t.Fatalf("READY user = %+v, want the fake's bot %s", r.User, f.BotID())
	}
	src := newTestSource(f, s)
	if bot, app := src.self(); bot == 0 || app == 0 {
		t.Fatalf("self() = %d, %d", bot, app)
	}
}

// startReady starts b and waits until its session is ready.
func startReady(t testing.TB, b *Bot) {
	t.Helper()
	b.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), connWait)
	defer cancel()
	if err := b.AwaitReady(ctx); err != nil {
		t.Fatalf("AwaitReady: %v", err)
	}
}
