package fakediscord

import (
	"errors"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// waitBound bounds every wait for an event; generous because the machine is shared.
const waitBound = 30 * time.Second

// world is a fake with one seeded guild.
type world struct {
	fake                  *Server
	guild, text, category string
	alice, bob            string
	modRole               string
}

func newWorld(t *testing.T, opts Options) *world {
	t.Helper()
	f := New(opts)
	t.Cleanup(f.Close)
	w := &world{fake: f}
	w.guild = f.AddGuild(GuildSpec{Name: "test guild"}).ID
	w.category = f.AddChannel(ChannelSpec{GuildID: w.guild, Name: "Text", Type: discordgo.ChannelTypeGuildCategory}).ID
	w.text = f.AddChannel(ChannelSpec{GuildID: w.guild, Name: "general", ParentID: w.category}).ID
	w.alice = f.AddUser(discordgo.User{Username: "alice"}).ID
	w.bob = f.AddUser(discordgo.User{Username: "bob"}).ID
	w.modRole = f.AddRole(w.guild, discordgo.Role{Name: "mod"}).ID
	f.AddMember(w.guild, w.alice)
	f.AddMember(w.guild, w.bob, w.modRole)
	return w
}

// rest is a session for REST only (no gateway).
func (w *world) rest() *discordgo.Session {
	s := w.fake.Session()
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	return s
}

// open connects a session to the fake's gateway; the session is closed at cleanup.
func open(t *testing.T, s *discordgo.Session) {
	t.Helper()
	if err := s.Open(); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
}

// wantAPIError asserts a discordgo REST error with status and Discord JSON code.
func wantAPIError(t *testing.T, err error, status, code int) *discordgo.RESTError {
	t.Helper()
	var re *discordgo.RESTError
	if !errors.As(err, &re) {
		t.Fatalf("error = %v (%T), want a *discordgo.RESTError %d/%d", err, err, status, code)
	}
	if re.Response.StatusCode != status {
		t.Fatalf("status = %d, want %d (body %s)", re.Response.StatusCode, status, re.ResponseBody)
	}
	if re.Message == nil || re.Message.Code != code {
		t.Fatalf("code: body %s, want code %d", re.ResponseBody, code)
	}
	return re
}

// recv waits (bounded) for one value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitBound):
		t.Fatalf("no %s within %s", what, waitBound)
	}
	var zero T
	return zero
}

func ptr[T any](v T) *T { return &v }
