package discord

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

func TestAwaitReady(t *testing.T) {
	tests := []struct {
		name    string
		token   func(f *fakediscord.Server) string
		start   bool
		wantErr string // "" means ready
	}{
		{name: "READY and every guild arrived", token: func(f *fakediscord.Server) string { return f.Token() }, start: true},
		{name: "no token answers at once", token: func(*fakediscord.Server) string { return "" }, start: true, wantErr: ErrNoToken.Error()},
		{name: "a rejected token answers once the bot stopped", token: func(*fakediscord.Server) string { return "wrong-token" }, start: true, wantErr: "the bot stopped"},
		{name: "a bot never started waits until ctx ends", token: func(f *fakediscord.Server) string { return f.Token() }, wantErr: context.DeadlineExceeded.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, fakediscord.Options{})
			f.AddGuild(fakediscord.GuildSpec{ID: "111111111111111111", Name: "Zeta"})
			f.AddGuild(fakediscord.GuildSpec{ID: "222222222222222222", Name: "alpha"})
			b, _ := connBot(t, f, connStore(t), connOpts{token: tt.token(f)})
			if tt.start {
				b.Start(context.Background())
			}
			wait := connWait
			if !tt.start {
				wait = 200 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err := b.AwaitReady(ctx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("AwaitReady = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("AwaitReady = %v", err)
			}
			st := b.Status()
			if st.State != StateConnected || len(st.Guilds) != 2 || !allArrived(st.Guilds) {
				t.Fatalf("ready with status %+v", st)
			}
			// Ready means Discord calls work: the bot's session is there.
			if _, err := b.session(); err != nil {
				t.Fatalf("session() after ready = %v", err)
			}
		})
	}
}

func TestAwaitReadyNoTokenIsErrNoToken(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	b, _ := connBot(t, f, connStore(t), connOpts{})
	if err := b.AwaitReady(context.Background()); !errors.Is(err, ErrNoToken) {
		t.Fatalf("AwaitReady without a token = %v, want ErrNoToken", err)
	}
}

// TestAwaitReadyGivesUpOnAnUnavailableGuild: a guild READY listed that
// stays unavailable (an outage) holds the modules back only for the
// guild arrival wait, not for the whole bounded wait.
func TestAwaitReadyGivesUpOnAnUnavailableGuild(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	f.AddGuild(fakediscord.GuildSpec{ID: "111111111111111111", Name: "Zeta"})
	f.AddGuild(fakediscord.GuildSpec{ID: "222222222222222222", Name: "alpha"})
	b, logs := connBot(t, f, connStore(t), connOpts{token: f.Token()})
	b.guildArrival = 100 * time.Millisecond
	b.Start(context.Background())
	connWaitFor(t, "both guilds", func() bool {
		st := b.Status()
		return st.State == StateConnected && len(st.Guilds) == 2 && allArrived(st.Guilds)
	})
	if err := f.DispatchRaw("222222222222222222", "GUILD_DELETE", []byte(`{"id":"222222222222222222","unavailable":true}`)); err != nil {
		t.Fatal(err)
	}
	connWaitFor(t, "the guild unavailable", func() bool { return !allArrived(b.Status().Guilds) })
	ctx, cancel := context.WithTimeout(context.Background(), connWait)
	defer cancel()
	if err := b.AwaitReady(ctx); err != nil {
		t.Fatalf("AwaitReady with a guild in an outage = %v, want ready after the arrival wait", err)
	}
	if ctx.Err() != nil || !strings.Contains(logs.String(), "starting without the guilds that are still unavailable") {
		t.Fatalf("AwaitReady waited out its ctx or did not say why it went on:\n%s", logs)
	}
}
