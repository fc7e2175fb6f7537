package discord

import (
	"log/slog"
	"testing"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// TestQuickStopDoesNotWaitForDiscordgosClose: discordgo's gateway close
// holds the session's lock while it sleeps a fixed second after its close
// frame. Without QuickStop, Close returns after it (the lock is free at
// once); with QuickStop, Close returns first and discordgo's close runs on
// (the lock is taken after Close returned), and the bot is stopped either
// way.
func TestQuickStopDoesNotWaitForDiscordgosClose(t *testing.T) {
	for _, quick := range []bool{false, true} {
		f := newFake(t, fakediscord.Options{})
		f.AddGuild(fakediscord.GuildSpec{ID: evGuild, Name: "quick stop"})
		b, err := New(Options{Store: connStore(t), Logger: slog.New(slog.DiscardHandler),
			Token: "Bot " + f.Token(), TokenSource: "test", Transport: f.Transport(), Dialer: f.Dialer()})
		if err != nil {
			t.Fatal(err)
		}
		if quick {
			b.QuickStop()
		}
		startReady(t, b)
		sess, err := b.session()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if quick {
			connWaitFor(t, "discordgo's close running after Close returned", func() bool {
				if sess.TryRLock() {
					sess.RUnlock()
					return false
				}
				return true
			})
		} else if !sess.TryRLock() {
			t.Fatal("without QuickStop, discordgo's close still runs after Close returned")
		} else {
			sess.RUnlock()
		}
		if s := b.Status(); s.State != StateStopped {
			t.Fatalf("quick stop %v: state %s after Close", quick, s.State)
		}
	}
}
