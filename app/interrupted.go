package app

import (
	"context"
	"log/slog"
	"sync"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/discord"
)

// leftoverRemover is what the clean-up of interrupted turns needs of the
// bot (*discord.Bot).
type leftoverRemover interface {
	RemoveOwnReaction(ctx context.Context, channelID, messageID uint64, emoji string) error
	DeleteOwnMessage(ctx context.Context, channelID, messageID uint64) error
}

var _ leftoverRemover = (*discord.Bot)(nil)

// interruptedCleanup removes what a crash left of the turns start-up
// marked interrupted, once the bot is ready: the ⏳ on their triggers and
// their status messages (Thinking...). Started with the bot, ended before
// it closes.
type interruptedCleanup struct {
	bot    leftoverRemover
	await  func(context.Context) error // the bot's readiness, bounded
	logger *slog.Logger

	mu     sync.Mutex
	gone   []assistant.Interrupted
	cancel context.CancelFunc
	done   chan struct{}
	// removing is closed once the bot is ready and the removal begins.
	removing chan struct{}
}

// set records the turns start-up marked interrupted.
func (c *interruptedCleanup) set(gone []assistant.Interrupted) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone = gone
}

// start runs the clean-up in the background when there is something to
// clean; its ctx is detached from the part's start budget.
func (c *interruptedCleanup) start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var triggers []assistant.Interrupted
	for _, it := range c.gone {
		if it.Kind == assistant.KindMessage && it.ChannelID != 0 && it.TriggerMessageID != 0 {
			triggers = append(triggers, it)
		}
	}
	c.gone = nil
	if len(triggers) == 0 {
		return
	}
	ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.done, c.removing = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.done)
		c.run(ctx, triggers)
	}()
}

func (c *interruptedCleanup) run(ctx context.Context, triggers []assistant.Interrupted) {
	if err := c.await(ctx); err != nil {
		c.logger.Warn("discord not ready: the interrupted turns keep their ⏳", "turns", len(triggers), "err", err)
		return
	}
	close(c.removing)
	removed, deleted := 0, 0
	for _, it := range triggers {
		if err := c.bot.RemoveOwnReaction(ctx, it.ChannelID, it.TriggerMessageID, assistant.ReactWorking); err != nil {
			c.logger.Warn("could not remove the ⏳ of an interrupted turn", "turn", it.Turn,
				"channel_id", it.ChannelID, "message_id", it.TriggerMessageID, "err", err)
		} else {
			removed++
		}
		if it.StatusMessageID == 0 {
			continue
		}
		if err := c.bot.DeleteOwnMessage(ctx, it.ChannelID, it.StatusMessageID); err != nil {
			c.logger.Warn("could not delete the status message of an interrupted turn", "turn", it.Turn,
				"channel_id", it.ChannelID, "message_id", it.StatusMessageID, "err", err)
			continue
		}
		deleted++
	}
	c.logger.Info("removed the ⏳ of the assistant turns interrupted by the last stop", "removed", removed,
		"status_messages_deleted", deleted, "turns", len(triggers))
}

// stop ends the clean-up and waits for it (or for ctx). One still waiting
// for the bot is cancelled at once; one already removing is let finish
// within ctx, so a stop neither cuts a removal off mid-request (its
// outcome unknown, the ⏳ perhaps left) nor leaves the rest undone, and is
// cancelled only when ctx ends.
func (c *interruptedCleanup) stop(ctx context.Context) {
	c.mu.Lock()
	cancel, done, removing := c.cancel, c.done, c.removing
	c.mu.Unlock()
	if cancel == nil {
		return
	}
	defer cancel()
	select {
	case <-removing:
	default:
		cancel()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}
