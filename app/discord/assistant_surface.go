package discord

import (
	"context"
	"fmt"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
)

// messageSurface is a turn's Surface for a channel message: reactions on
// the trigger, one status message (mentions off) edited in place, the
// answer's first chunk a reply to the trigger, allowed mentions the
// caller only.
type messageSurface struct {
	b       *Bot
	s       *discordgo.Session
	channel string
	guild   string
	trigger string
	caller  string

	mu     sync.Mutex
	status string // the status message's id ("" none)
}

var _ assistant.Surface = (*messageSurface)(nil)

func (b *Bot) messageSurface(s *discordgo.Session, m *discordgo.Message, caller uint64) *messageSurface {
	return &messageSurface{b: b, s: s, channel: m.ChannelID, guild: m.GuildID, trigger: m.ID, caller: idString(caller)}
}

// callerOnly lets the answer ping its caller and nobody else: never
// everyone, here, a role or another user.
func callerOnly(caller string) *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, Users: []string{caller}}
}

func (ms *messageSurface) reference() *discordgo.MessageReference {
	return &discordgo.MessageReference{MessageID: ms.trigger, ChannelID: ms.channel, GuildID: ms.guild, FailIfNotExists: ptr(false)}
}

// React adds the bot's emoji to the trigger.
func (ms *messageSurface) React(ctx context.Context, emoji string) error {
	if err := ms.s.MessageReactionAdd(ms.channel, ms.trigger, emoji, requestOptions(ctx)...); err != nil {
		return fmt.Errorf("discord: react to the trigger: %w", err)
	}
	return nil
}

// Unreact removes the bot's own emoji from the trigger.
func (ms *messageSurface) Unreact(ctx context.Context, emoji string) error {
	if err := ms.s.MessageReactionRemove(ms.channel, ms.trigger, emoji, "@me", requestOptions(ctx)...); err != nil {
		return fmt.Errorf("discord: remove the reaction: %w", err)
	}
	return nil
}

// Status sends the status message (a reply to the trigger, mentions off)
// or edits it, and returns its id.
func (ms *messageSurface) Status(ctx context.Context, text string) (uint64, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.status == "" {
		m, err := ms.s.ChannelMessageSendComplex(ms.channel, &discordgo.MessageSend{Content: text, AllowedMentions: noMentions(),
			Reference: ms.reference()}, requestOptions(ctx)...)
		if err != nil {
			return 0, fmt.Errorf("discord: send the status: %w", err)
		}
		ms.status = m.ID
		return parseID(m.ID), nil
	}
	if _, err := ms.s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: ms.status, Channel: ms.channel, Content: &text,
		AllowedMentions: noMentions()}, requestOptions(ctx)...); err != nil {
		return parseID(ms.status), fmt.Errorf("discord: edit the status: %w", err)
	}
	return parseID(ms.status), nil
}

// ClearStatus deletes the status message.
func (ms *messageSurface) ClearStatus(ctx context.Context) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.status == "" {
		return nil
	}
	if err := ms.s.ChannelMessageDelete(ms.channel, ms.status, requestOptions(ctx)...); err != nil {
		return fmt.Errorf("discord: delete the status: %w", err)
	}
	ms.status = ""
	return nil
}

// Deliver sends one chunk (the first a reply to the trigger), allowed
// mentions the caller only.
func (ms *messageSurface) Deliver(ctx context.Context, chunk string, first bool) (uint64, error) {
	send := &discordgo.MessageSend{Content: chunk, AllowedMentions: callerOnly(ms.caller)}
	if first {
		send.Reference = ms.reference()
	}
	m, err := ms.s.ChannelMessageSendComplex(ms.channel, send, requestOptions(ctx)...)
	if err != nil {
		return 0, fmt.Errorf("discord: deliver the answer: %w", err)
	}
	return parseID(m.ID), nil
}

// Busy replies to the trigger with the admission refusal.
func (ms *messageSurface) Busy(ctx context.Context, text string) error {
	if _, err := ms.s.ChannelMessageSendComplex(ms.channel, &discordgo.MessageSend{Content: text, AllowedMentions: noMentions(),
		Reference: ms.reference()}, requestOptions(ctx)...); err != nil {
		return fmt.Errorf("discord: send the busy reply: %w", err)
	}
	return nil
}
