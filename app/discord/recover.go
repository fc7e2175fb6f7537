package discord

import (
	"context"
	"fmt"
)

// RemoveOwnReaction removes the bot's own emoji reaction from a message:
// start-up's clean-up of the ⏳ a crash left on an interrupted turn's
// trigger. A message or reaction already gone is Discord's error, wrapped.
func (b *Bot) RemoveOwnReaction(ctx context.Context, channelID, messageID uint64, emoji string) error {
	if channelID == 0 || messageID == 0 {
		return fmt.Errorf("discord: remove own reaction: channel %d, message %d: both ids are required", channelID, messageID)
	}
	if emoji == "" {
		return fmt.Errorf("discord: remove own reaction: no emoji")
	}
	s, err := b.session()
	if err != nil {
		return fmt.Errorf("discord: remove own reaction: %w", err)
	}
	if err := s.MessageReactionRemove(idString(channelID), idString(messageID), emoji, "@me", requestOptions(ctx)...); err != nil {
		return fmt.Errorf("discord: remove own reaction: %w", err)
	}
	return nil
}

// DeleteOwnMessage deletes a message the bot sent: start-up's clean-up of
// the status message a crash left beside an interrupted turn's trigger. A
// message already gone (the turn deleted it just before the crash) is not
// an error; any other failure is Discord's error, wrapped.
func (b *Bot) DeleteOwnMessage(ctx context.Context, channelID, messageID uint64) error {
	if channelID == 0 || messageID == 0 {
		return fmt.Errorf("discord: delete own message: channel %d, message %d: both ids are required", channelID, messageID)
	}
	s, err := b.session()
	if err != nil {
		return fmt.Errorf("discord: delete own message: %w", err)
	}
	if err := s.ChannelMessageDelete(idString(channelID), idString(messageID), requestOptions(ctx)...); err != nil {
		if classify(err).code == codeUnknownMessage {
			return nil
		}
		return fmt.Errorf("discord: delete own message: %w", err)
	}
	return nil
}
