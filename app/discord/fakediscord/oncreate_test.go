package fakediscord

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestOnMessageCreate: the hook sees every message a POST created (id,
// channel and content as stored) before the client has its answer, and
// none for a refused POST or one a fault answered before handling; a
// fault after handling calls it, the message being created.
func TestOnMessageCreate(t *testing.T) {
	w := newWorld(t, Options{})
	s := w.rest()
	type seen struct {
		msg      *discordgo.Message
		answered bool
	}
	hooked := make(chan seen, 10)
	var answered atomic.Bool // the client has its answer
	w.fake.OnMessageCreate(func(m *discordgo.Message) { hooked <- seen{m, answered.Load()} })

	tests := []struct {
		name    string
		channel string
		fault   *Fault
		created bool
	}{
		{name: "created", channel: w.text, created: true},
		{name: "unknown channel", channel: "123", created: false},
		{name: "fault before handling", channel: w.text, fault: &Fault{Route: "POST /channels/{channel}/messages", Status: http.StatusInternalServerError}, created: false},
		{name: "fault after handling", channel: w.text, fault: &Fault{Route: "POST /channels/{channel}/messages", Status: http.StatusInternalServerError, AfterHandling: true}, created: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fault != nil {
				w.fake.InjectFault(*tt.fault)
			}
			before := len(w.fake.Messages(w.text))
			answered.Store(false)
			m, err := s.ChannelMessageSend(tt.channel, "hello "+tt.name)
			answered.Store(true)
			if tt.created != (err == nil) && tt.fault == nil {
				t.Fatalf("send: %v", err)
			}
			if !tt.created {
				select {
				case h := <-hooked:
					t.Fatalf("hook called with %q for a message not created", h.msg.Content)
				default:
				}
				return
			}
			h := recv(t, hooked, "hook call")
			if h.answered {
				t.Fatal("the hook ran after the client had its answer")
			}
			stored := w.fake.Messages(w.text)
			if len(stored) != before+1 {
				t.Fatalf("%d messages stored, want %d", len(stored), before+1)
			}
			last := stored[len(stored)-1]
			if h.msg.ID != last.ID || h.msg.ChannelID != w.text || h.msg.Content != "hello "+tt.name {
				t.Fatalf("hook got %s in %s %q; stored %s", h.msg.ID, h.msg.ChannelID, h.msg.Content, last.ID)
			}
			if err == nil && m.ID != h.msg.ID {
				t.Fatalf("answered id %s, hook's %s", m.ID, h.msg.ID)
			}
		})
	}
}

// TestARequestIsInRequestsOnceItsEffectIsVisible: a handled request is
// recorded, with the status it is answered, in the same step as its
// effect, so whoever sees the effect (here the create hook, which runs
// once the message is stored) finds the request in Requests too — also
// when a fault after handling answers it with an error.
func TestARequestIsInRequestsOnceItsEffectIsVisible(t *testing.T) {
	const route = "POST /channels/{channel}/messages"
	w := newWorld(t, Options{})
	s := w.rest()
	seen := make(chan []Request, 10)
	w.fake.OnMessageCreate(func(*discordgo.Message) { seen <- w.fake.RequestsTo(route) })
	tests := []struct {
		name   string
		fault  *Fault
		status int
	}{
		{name: "created", status: http.StatusOK},
		{name: "fault after handling", fault: &Fault{Route: route, Status: http.StatusBadGateway, AfterHandling: true}, status: http.StatusBadGateway},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fault != nil {
				w.fake.InjectFault(*tt.fault)
			}
			_, _ = s.ChannelMessageSend(w.text, "hello "+tt.name)
			reqs := recv(t, seen, "hook call")
			if len(reqs) != i+1 {
				t.Fatalf("%d requests recorded when the message was visible, want %d", len(reqs), i+1)
			}
			if got := reqs[i].Status; got != tt.status {
				t.Fatalf("recorded status %d, want %d", got, tt.status)
			}
		})
	}
}
