package fakediscord

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// BenchmarkFakeGateway pushes b.N MESSAGE_CREATE frames to one discordgo session (decoded by
// its handlers) and reports frames/s, beside a plain json.Marshal of the same frame in the same
// run (marshals/s): the fake's framing and writing cost is the gap between them.
func BenchmarkFakeGateway(b *testing.B) {
	f := New(Options{})
	defer f.Close()
	g := f.AddGuild(GuildSpec{Name: "bench"}).ID
	ch := f.AddChannel(ChannelSpec{GuildID: g, Name: "general"}).ID
	alice := f.AddUser(discordgo.User{Username: "alice"})
	f.AddMember(g, alice.ID)
	s := f.Session()
	s.Compress = false
	s.Identify.Compress = false
	s.Identify.Intents = discordgo.IntentGuilds | discordgo.IntentGuildMessages | discordgo.IntentMessageContent
	var got atomic.Int64
	done := make(chan struct{}, 1)
	var want atomic.Int64
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.MessageCreate) {
		if got.Add(1) == want.Load() {
			done <- struct{}{}
		}
	})
	if err := s.Open(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m := &discordgo.Message{ID: "1577270356467515399", ChannelID: ch, GuildID: g, Author: alice, Content: "hello from the benchmark",
		Timestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Embeds: []*discordgo.MessageEmbed{}, Mentions: []*discordgo.User{}}

	// baseline: marshal the same frame
	frame := struct {
		Op int          `json:"op"`
		S  int64        `json:"s"`
		T  string       `json:"t"`
		D  *wireMessage `json:"d"`
	}{0, 1, "MESSAGE_CREATE", wire(m)}
	const marshals = 20000
	start := time.Now()
	for i := 0; i < marshals; i++ {
		if _, err := json.Marshal(frame); err != nil {
			b.Fatal(err)
		}
	}
	marshalRate := marshals / time.Since(start).Seconds()

	got.Store(0)
	want.Store(int64(b.N))
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		f.mu.Lock()
		f.dispatchMessage("MESSAGE_CREATE", m)
		f.mu.Unlock()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("the session received %d of %d frames", got.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "frames/s")
	b.ReportMetric(marshalRate, "marshals/s")
}
