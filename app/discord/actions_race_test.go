package discord

import (
	"context"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// TestActStateReadsUnderLock: the actions read the state's channels and
// members while CHANNEL_UPDATE rewrites them (go test -race).
func TestActStateReadsUnderLock(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	mod := w.mod("digest")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 40 {
			_, _ = w.s.ChannelEdit(idString(w.hidden), &discordgo.ChannelEdit{Topic: "t" + itoa(i)})
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		_, _ = mod.CanViewChannel(ctx, w.guild, w.staff, w.hidden)
		_, _ = mod.FetchChannel(ctx, w.guild, w.hidden)
	}
}
