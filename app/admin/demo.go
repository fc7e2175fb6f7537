package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// DemoChat is the demo guild of demo mode (`kimi serve --demo`), as the /demo page reads and
// posts into it. NewDemoChat gives one over the built-in fake Discord.
type DemoChat interface {
	// DemoGuild lists the guild's name, text channels and the members a visitor may post as.
	DemoGuild(ctx context.Context) (DemoGuildView, error)
	// DemoMessages lists a channel's messages, oldest first (at most the latest 100).
	DemoMessages(ctx context.Context, channelID string) ([]DemoMessage, error)
	// PostAsMember posts content in a channel as one of the demo members.
	PostAsMember(ctx context.Context, channelID, memberID, content string) error
}

// DemoGuildView is the demo guild's name, text channels and demo members.
type DemoGuildView struct {
	Name     string
	Channels []DemoRef
	Members  []DemoRef
}

// DemoRef names a channel or member by id.
type DemoRef struct{ ID, Name string }

// DemoMessage is one message of the chat view.
type DemoMessage struct {
	ID      string
	Author  string
	Bot     bool
	Content string
	At      time.Time
	// Embeds are the embeds' titles and descriptions; Buttons the buttons' labels.
	Embeds  []string
	Buttons []string
}

// ErrDemoUnknown is a channel or member id that is not in the demo guild.
var ErrDemoUnknown = errors.New("admin: not in the demo guild")

// NewDemoChat is the DemoChat of a fake Discord seeded with fakediscord.SeedDemo.
func NewDemoChat(f *fakediscord.Server, g fakediscord.DemoGuild) DemoChat {
	return demoFake{f: f, g: g}
}

type demoFake struct {
	f *fakediscord.Server
	g fakediscord.DemoGuild
}

var (
	_ DemoChat  = demoFake{}
	_ io.Closer = demoFake{}
)

// Close stops the fake Discord.
func (d demoFake) Close() error {
	d.f.Close()
	return nil
}

func (d demoFake) DemoGuild(context.Context) (DemoGuildView, error) {
	g := d.f.Guild(d.g.GuildID)
	if g == nil {
		return DemoGuildView{}, fmt.Errorf("admin: demo guild: %w", ErrDemoUnknown)
	}
	v := DemoGuildView{Name: g.Name}
	for _, id := range d.g.Channels {
		for _, c := range g.Channels {
			if c.ID == id {
				v.Channels = append(v.Channels, DemoRef{ID: id, Name: c.Name})
			}
		}
	}
	for _, id := range d.g.Members {
		if m := d.f.Member(d.g.GuildID, id); m != nil && m.User != nil {
			v.Members = append(v.Members, DemoRef{ID: id, Name: m.User.Username})
		}
	}
	return v, nil
}

func (d demoFake) known(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func (d demoFake) DemoMessages(_ context.Context, channelID string) ([]DemoMessage, error) {
	if !d.known(d.g.Channels, channelID) {
		return nil, fmt.Errorf("admin: demo channel %q: %w", channelID, ErrDemoUnknown)
	}
	msgs := d.f.Messages(channelID)
	if len(msgs) > 100 {
		msgs = msgs[len(msgs)-100:]
	}
	out := make([]DemoMessage, 0, len(msgs))
	for _, m := range msgs {
		dm := DemoMessage{ID: m.ID, Content: m.Content, At: m.Timestamp}
		if m.Author != nil {
			dm.Author, dm.Bot = m.Author.Username, m.Author.Bot
		}
		for _, e := range m.Embeds {
			dm.Embeds = append(dm.Embeds, e.Title+" "+e.Description)
		}
		dm.Buttons = buttonLabels(m.Components)
		out = append(out, dm)
	}
	return out, nil
}

func (d demoFake) PostAsMember(_ context.Context, channelID, memberID, content string) error {
	if !d.known(d.g.Channels, channelID) || !d.known(d.g.Members, memberID) {
		return fmt.Errorf("admin: demo post: %w", ErrDemoUnknown)
	}
	if _, err := d.f.PostMessage(channelID, memberID, content); err != nil {
		return fmt.Errorf("admin: demo post: %w", err)
	}
	return nil
}

// buttonLabels lists the labels of a message's buttons, rows and containers included.
func buttonLabels(cs []discordgo.MessageComponent) []string {
	var out []string
	for _, c := range cs {
		switch v := c.(type) {
		case *discordgo.ActionsRow:
			out = append(out, buttonLabels(v.Components)...)
		case *discordgo.Container:
			out = append(out, buttonLabels(v.Components)...)
		case *discordgo.Button:
			out = append(out, v.Label)
		}
	}
	return out
}
