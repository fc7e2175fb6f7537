package discord

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// evBenchMessage is one MESSAGE_CREATE's d with the message id id.
func evBenchMessage(id uint64) json.RawMessage {
	b := make([]byte, 0, 512)
	b = append(b, `{"id":"`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `","type":0,"channel_id":"`+evChannel+`","guild_id":"`+evGuild+`","content":"a message of ordinary length, with a few words in it",`+
		`"timestamp":"2025-06-01T12:00:00.000000+00:00","edited_timestamp":null,"tts":false,"mention_everyone":false,"mentions":[],"mention_roles":[],`+
		`"attachments":[],"embeds":[],"pinned":false,"author":{"id":"`+evUser+`","username":"ann","global_name":"Ann","discriminator":"0","avatar":null},`+
		`"member":{"roles":["`+evRoleA+`","`+evRoleB+`"],"joined_at":"2024-01-01T00:00:00.000000+00:00","nick":null,"deaf":false,"mute":false}}`...)
	return b
}

// BenchmarkGatewayIngest: MESSAGE_CREATE frames from fakediscord through
// the real Bot (serve's session: the frame filter and its decode-once hot
// path, hot.go, the ingest and the assistant's handler), and the real bus
// (serve's lanes) to a module's handler. Reports events/s and
// allocs/event (the whole process: the fake's framing and websocket write
// included; the payload is encoded once, up front), and, in the same run,
// a plain json.Unmarshal of the same payload into *discordgo.MessageCreate
// (unmarshals/s) and ratio = events/s ÷ unmarshals/s.
//
// The fake compresses only frames of 64 KiB and more, as Discord
// compresses only some large payloads; BenchmarkGatewayIngestZlib
// measures every frame compressed.
func BenchmarkGatewayIngest(b *testing.B) { evBenchIngest(b, evBenchBot, 64<<10) }

// BenchmarkGatewayIngestZlib is BenchmarkGatewayIngest with every frame
// zlib-compressed by the fake (a fresh compressor per frame, about 1 ms:
// the fake's cost, not Kimi's, dominates it).
func BenchmarkGatewayIngestZlib(b *testing.B) { evBenchIngest(b, evBenchBot, 0) }

// BenchmarkGatewayIngestDiscordgo is BenchmarkGatewayIngest with the
// events decoded and dispatched by discordgo itself (a session without
// Kimi's frame filter carrying the ingest's handlers): the path the hot
// path replaced, for comparison.
func BenchmarkGatewayIngestDiscordgo(b *testing.B) { evBenchIngest(b, evBenchDiscordgo, 64<<10) }

type evBenchPath int

const (
	evBenchBot evBenchPath = iota
	evBenchDiscordgo
)

func evBenchIngest(b *testing.B, path evBenchPath, compressMin int) {
	f := newFake(b, fakediscord.Options{CompressMin: compressMin})
	f.AddGuild(fakediscord.GuildSpec{ID: evGuild})
	f.AddChannel(fakediscord.ChannelSpec{ID: evChannel, GuildID: evGuild})
	// The bus as serve makes it (app/parts.go): the default lanes,
	// sdk.EventWorkers workers and an sdk.EventQueueSize queue a module.
	bus := events.New(events.Options{Logger: discardLogger()})
	b.Cleanup(func() { bus.Close(5 * time.Second) })
	mod := bus.Module(context.Background(), "evbench", sdk.Permissions{EventTopics: []string{sdk.TopicMessage}}, nil)
	// The gateway is a stream with backpressure; the producer keeps at most
	// a lane's queue of events in flight, so the lane never drops one.
	inflight := make(chan struct{}, sdk.EventQueueSize)
	var delivered atomic.Int64
	done := make(chan struct{}, 1)
	var want atomic.Int64
	if _, err := mod.Subscribe(sdk.TopicMessage, func(_ context.Context, ev sdk.Event) error {
		<-inflight
		if delivered.Add(1) == want.Load() {
			done <- struct{}{}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	guilds := evGuilds{parseID(evGuild): true}
	switch path {
	case evBenchBot:
		evBenchStartBot(b, f, bus, guilds)
	case evBenchDiscordgo:
		in := newIngest(discardLogger(), bus, guilds, NewCache(CacheSizes{}), newTestSource(f, nil))
		evOpenSession(b, f, evIntents, in.handlers()...)
	}

	frames := make([]json.RawMessage, 1024)
	for i := range frames {
		frames[i] = evBenchMessage(1<<40 + uint64(i))
	}
	run := func(n int) time.Duration {
		delivered.Store(0)
		want.Store(int64(n))
		start := time.Now()
		for i := 0; i < n; i++ {
			inflight <- struct{}{}
			if err := f.DispatchRaw(evGuild, "MESSAGE_CREATE", frames[i%len(frames)]); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			b.Fatalf("%d of %d events delivered", delivered.Load(), n)
		}
		return time.Since(start)
	}
	run(1000) // warm-up: connection, caches, lane

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	elapsed := run(b.N)
	b.StopTimer()
	runtime.ReadMemStats(&after)

	var sink discordgo.MessageCreate
	start := time.Now()
	for i := 0; i < b.N; i++ {
		sink = discordgo.MessageCreate{}
		if err := json.Unmarshal(frames[i%len(frames)], &sink); err != nil {
			b.Fatal(err)
		}
	}
	unmarshal := time.Since(start)

	eps := float64(b.N) / elapsed.Seconds()
	ups := float64(b.N) / unmarshal.Seconds()
	b.ReportMetric(eps, "events/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/event")
	b.ReportMetric(ups, "unmarshals/s")
	b.ReportMetric(eps/ups, "ratio")
}

// evBenchStartBot starts a real Bot against f as serve configures it (its
// store, the bus as its publisher, guilds as its guild configuration) and
// waits for it to be connected.
func evBenchStartBot(b *testing.B, f *fakediscord.Server, bus *events.Bus, guilds GuildConfig) {
	ctx := context.Background()
	st := connStore(b)
	if err := settings.SaveDiscordToken(ctx, st, "Bot "+f.Token(), settings.Actor{Name: "bench", IP: "127.0.0.1"}); err != nil {
		b.Fatal(err)
	}
	bot, err := New(Options{Store: st, Bus: bus, Guilds: guilds, Logger: discardLogger(), Transport: f.Transport(), Dialer: f.Dialer()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bot.Close() })
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	changed := bot.Watch(wctx)
	bot.Start(ctx)
	for bot.Status().State != StateConnected {
		select {
		case <-changed:
		case <-wctx.Done():
			b.Fatalf("the bot did not connect: %+v", bot.Status())
		}
	}
}

// BenchmarkMemberCacheHeap reports the heap that 10,000 cached members
// with three roles each take (runtime.MemStats before and after filling).
func BenchmarkMemberCacheHeap(b *testing.B) {
	var total float64
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := NewCache(CacheSizes{})
		for u := uint64(0); u < 10000; u++ {
			m, _ := memberEntry(parseID(evGuild), &discordgo.Member{
				Roles: []string{evRoleA, evRoleB, strconv.FormatUint(500000000000000000+u%50, 10)}, JoinedAt: time.Unix(1700000000, 0),
			}, &discordgo.User{ID: strconv.FormatUint(300000000000000000+u, 10), Username: "member" + strconv.FormatUint(u, 10)})
			c.putMember(m)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		total += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(c)
	}
	b.ReportMetric(total/float64(b.N), "heap-bytes/10k-members")
}

// evOpenSession is openSession for a benchmark.
func evOpenSession(b *testing.B, f *fakediscord.Server, intents discordgo.Intent, handlers ...any) *discordgo.Session {
	b.Helper()
	s := f.Session()
	s.ShouldReconnectOnError = false
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.Identify.Intents = intents
	for _, h := range handlers {
		s.AddHandler(h)
	}
	if err := s.Open(); err != nil {
		b.Fatalf("open session: %v", err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
