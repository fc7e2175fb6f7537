package fakediscord

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// events collects every dispatch a session receives, in order (SyncEvents is on).
func events(s *discordgo.Session) <-chan *discordgo.Event {
	ch := make(chan *discordgo.Event, 1024)
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		if e.Operation == 0 {
			ch <- e
		}
	})
	return ch
}

// next waits for the next dispatch of type want, failing on a different one.
func next(t *testing.T, ch <-chan *discordgo.Event, want string) *discordgo.Event {
	t.Helper()
	e := recv(t, ch, want)
	if e.Type != want {
		t.Fatalf("event %s (%s), want %s", e.Type, e.RawData, want)
	}
	return e
}

// decoded decodes a dispatch's raw data afresh: the structs discordgo hands to handlers are
// shared with its State, which keeps changing them on its own goroutine.
func decoded[T any](t *testing.T, e *discordgo.Event) *T {
	t.Helper()
	v := new(T)
	if err := json.Unmarshal(e.RawData, v); err != nil {
		t.Fatalf("%s: %v", e.Type, err)
	}
	return v
}

// until skips dispatches until one of type want.
func until(t *testing.T, ch <-chan *discordgo.Event, want string) *discordgo.Event {
	t.Helper()
	for {
		if e := recv(t, ch, want); e.Type == want {
			return e
		}
	}
}

// heartbeating waits until the fake has read the first heartbeat of a session just opened.
// discordgo's heartbeat goroutine writes one as soon as it starts, before it watches for the
// connection's end; a connection closed before that write (a test closing it right after READY,
// with the goroutine not yet scheduled) makes the write fail, and that goroutine reconnects as
// well as the reader: the two reconnects close each other's new connections for a while (seen
// under load: 7 identifies and 6 resumes for one close). After the first heartbeat the goroutine
// waits on its ticker (41.25 s by default) or the connection's end, so a close is heard once.
func heartbeating(t *testing.T, f *Server) {
	t.Helper()
	for deadline := time.Now().Add(waitBound); f.GatewayStats().Heartbeats == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat within %s", waitBound)
		}
	}
}

// TestGatewayIdentifyReadyGuildCreate: Hello, Identify with intents, READY with
// resume_gateway_url, one GUILD_CREATE per guild with members only under the members intent.
func TestGatewayIdentifyReadyGuildCreate(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	second := w.fake.AddGuild(GuildSpec{Name: "second"}).ID
	cases := []struct {
		name    string
		intents discordgo.Intent
		members int
	}{
		{"without the members intent", discordgo.IntentGuilds | discordgo.IntentGuildMessages, 1},
		{"with the members intent", discordgo.IntentGuilds | discordgo.IntentGuildMembers, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := w.fake.Session()
			s.Identify.Intents = c.intents
			ev := events(s)
			open(t, s)
			ready := next(t, ev, "READY")
			r := decoded[discordgo.Ready](t, ready)
			if r.SessionID == "" || r.User.ID != w.fake.BotID() || len(r.Guilds) != 2 || r.Application.ID != w.fake.AppID() {
				t.Fatalf("READY = %+v", r)
			}
			if !contains(string(ready.RawData), `"resume_gateway_url":"`+w.fake.GatewayURL()+`"`) {
				t.Fatalf("READY lacks resume_gateway_url: %s", ready.RawData)
			}
			g1 := decoded[discordgo.GuildCreate](t, next(t, ev, "GUILD_CREATE"))
			g2 := decoded[discordgo.GuildCreate](t, next(t, ev, "GUILD_CREATE"))
			if g1.ID != w.guild || g2.ID != second || len(g1.Channels) != 2 || len(g1.Roles) != 3 {
				t.Fatalf("GUILD_CREATE = %+v / %+v", g1.Guild, g2.Guild)
			}
			if len(g1.Members) != c.members || g1.MemberCount != 4 {
				t.Fatalf("members = %d (count %d), want %d", len(g1.Members), g1.MemberCount, c.members)
			}
		})
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestGatewayMessageContentRule: without the message-content intent the content is stripped,
// except in messages that mention the bot; with it, every message has its content.
func TestGatewayMessageContentRule(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	cases := []struct {
		name       string
		intents    discordgo.Intent
		content    string
		wantStrips bool
	}{
		{"no intent", discordgo.IntentGuildMessages, "hello", true},
		{"no intent, mentions the bot", discordgo.IntentGuildMessages, "hi <@" + "900000000000000002" + ">", false},
		{"intent", discordgo.IntentGuildMessages | discordgo.IntentMessageContent, "hello", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := w.fake.Session()
			s.Identify.Intents = c.intents
			got := make(chan *discordgo.MessageCreate, 1)
			s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { got <- m })
			open(t, s)
			if _, err := w.fake.PostMessage(w.text, w.alice, c.content); err != nil {
				t.Fatal(err)
			}
			m := recv(t, got, "MESSAGE_CREATE")
			if stripped := m.Content == ""; stripped != c.wantStrips || m.Author.ID != w.alice {
				t.Fatalf("content %q (author %s), want stripped=%v", m.Content, m.Author.ID, c.wantStrips)
			}
		})
	}
}

// TestGatewayDispatchesKimiEvents: every event Kimi consumes arrives, decoded by discordgo,
// and a session without an event's intent does not get it.
func TestGatewayDispatchesKimiEvents(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	carol := w.fake.AddUser(discordgo.User{Username: "carol"}).ID
	rest := w.rest()
	if _, err := rest.ApplicationCommandBulkOverwrite(w.fake.AppID(), w.guild, []*discordgo.ApplicationCommand{{Name: "ping", Description: "p"}}); err != nil {
		t.Fatal(err)
	}
	s := w.fake.Session()
	s.Identify.Intents = discordgo.IntentsAll
	ev := events(s)
	open(t, s)
	until(t, ev, "GUILD_CREATE")
	var msgID, inviteCode string
	steps := []struct {
		event string
		act   func() error
	}{
		{"MESSAGE_CREATE", func() error { m, err := w.fake.PostMessage(w.text, w.alice, "one"); msgID = m.ID; return err }},
		{"MESSAGE_UPDATE", func() error { return w.fake.EditAsUser(w.text, msgID, "two") }},
		{"MESSAGE_REACTION_ADD", func() error { return w.fake.React(w.text, msgID, w.alice, "👍") }},
		{"MESSAGE_DELETE", func() error { return w.fake.DeleteAsUser(w.text, msgID) }},
		{"MESSAGE_DELETE_BULK", func() error {
			a, _ := w.fake.PostMessage(w.text, w.alice, "a")
			b, _ := w.fake.PostMessage(w.text, w.alice, "b")
			until(t, ev, "MESSAGE_CREATE")
			until(t, ev, "MESSAGE_CREATE")
			return rest.ChannelMessagesBulkDelete(w.text, []string{a.ID, b.ID})
		}},
		{"GUILD_MEMBER_ADD", func() error { _, err := w.fake.JoinGuild(w.guild, carol); return err }},
		{"GUILD_MEMBER_UPDATE", func() error { return rest.GuildMemberRoleAdd(w.guild, carol, w.modRole) }},
		{"GUILD_MEMBER_REMOVE", func() error { return w.fake.LeaveGuild(w.guild, carol) }},
		{"INVITE_CREATE", func() error {
			inv, err := rest.ChannelInviteCreate(w.text, discordgo.Invite{})
			inviteCode = inv.Code
			return err
		}},
		{"INVITE_DELETE", func() error { _, err := rest.InviteDelete(inviteCode); return err }},
		{"GUILD_BAN_ADD", func() error { return rest.GuildBanCreate(w.guild, w.alice, 0) }},
		{"GUILD_AUDIT_LOG_ENTRY_CREATE", func() error { return rest.GuildBanDelete(w.guild, w.alice) }},
		{"INTERACTION_CREATE", func() error { _, err := w.fake.RunCommand(w.text, w.bob, "ping"); return err }},
		{"GUILD_CREATE", func() error { w.fake.AddGuild(GuildSpec{Name: "third"}); return nil }},
	}
	for _, st := range steps {
		if err := st.act(); err != nil {
			t.Fatalf("%s: %v", st.event, err)
		}
		e := until(t, ev, st.event)
		if e.Struct == nil && st.event != "GUILD_AUDIT_LOG_ENTRY_CREATE" {
			t.Fatalf("%s not decoded by discordgo", st.event)
		}
	}
	third := w.fake.Guild(w.fake.gorderLast())
	w.fake.RemoveGuild(third.ID)
	if del := decoded[discordgo.GuildDelete](t, until(t, ev, "GUILD_DELETE")); del.ID != third.ID {
		t.Fatalf("GUILD_DELETE = %+v", del.Guild)
	}

	// a session without the members intent: no GUILD_MEMBER_ADD before the next message
	quiet := w.fake.Session()
	quiet.Identify.Intents = discordgo.IntentGuilds | discordgo.IntentGuildMessages
	qev := events(quiet)
	open(t, quiet)
	until(t, qev, "GUILD_CREATE")
	if _, err := w.fake.JoinGuild(w.guild, carol); err != nil {
		t.Fatal(err)
	}
	if _, err := w.fake.PostMessage(w.text, w.bob, "marker"); err != nil {
		t.Fatal(err)
	}
	next(t, qev, "MESSAGE_CREATE")
}

func (s *Server) gorderLast() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gorder[len(s.gorder)-1]
}

// TestGatewayResumeAfterDroppedConnection: events sent while the connection is down are
// replayed on Resume, then RESUMED; no second Identify.
func TestGatewayResumeAfterDroppedConnection(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.fake.Session()
	s.Identify.Intents = discordgo.IntentsAllWithoutPrivileged | discordgo.IntentMessageContent
	ev := events(s)
	resumed := make(chan struct{}, 4)
	s.AddHandler(func(*discordgo.Session, *discordgo.Resumed) { resumed <- struct{}{} })
	open(t, s)
	until(t, ev, "GUILD_CREATE")
	heartbeating(t, w.fake)
	w.fake.DropConnections()
	if _, err := w.fake.PostMessage(w.text, w.alice, "while you were away"); err != nil {
		t.Fatal(err)
	}
	m := until(t, ev, "MESSAGE_CREATE").Struct.(*discordgo.MessageCreate)
	if m.Content != "while you were away" {
		t.Fatalf("replayed message = %q", m.Content)
	}
	recv(t, resumed, "RESUMED")
	if st := w.fake.GatewayStats(); st.Identifies != 1 || st.Resumes != 1 {
		t.Fatalf("stats = %+v, want 1 identify and 1 resume", st)
	}
}

// TestGatewayHeartbeatsAndStoppedACKs: heartbeats are ACKed; when ACKs stop, discordgo's
// zombie detection reconnects and resumes.
func TestGatewayHeartbeatsAndStoppedACKs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{HeartbeatInterval: 20 * time.Millisecond})
	s := w.fake.Session()
	resumed := make(chan struct{}, 4)
	s.AddHandler(func(*discordgo.Session, *discordgo.Resumed) { resumed <- struct{}{} })
	open(t, s)
	opened := time.Now()
	deadline := opened.Add(waitBound)
	for {
		s.RLock()
		acked := s.LastHeartbeatAck.After(opened) // Hello set it before opened; an op 11 moves it
		s.RUnlock()
		if acked && w.fake.GatewayStats().Heartbeats >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat ACK seen, or fewer than 3 heartbeats (%+v)", w.fake.GatewayStats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.fake.StopHeartbeatACKs(true)
	recv(t, resumed, "RESUMED after missed ACKs")
	w.fake.StopHeartbeatACKs(false)
	if st := w.fake.GatewayStats(); st.Resumes < 1 || st.Identifies != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestGatewayInvalidSessionAndReconnect: op 9 makes the client identify again; op 7 makes it
// reconnect and resume.
func TestGatewayInvalidSessionAndReconnect(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.fake.Session()
	ev := events(s)
	resumed := make(chan struct{}, 4)
	s.AddHandler(func(*discordgo.Session, *discordgo.Resumed) { resumed <- struct{}{} })
	open(t, s)
	first := decoded[discordgo.Ready](t, next(t, ev, "READY")).SessionID
	w.fake.InvalidateSessions(false)
	again := decoded[discordgo.Ready](t, until(t, ev, "READY")).SessionID
	if again == first {
		t.Fatal("a new Identify got the old session")
	}
	w.fake.RequestReconnect()
	recv(t, resumed, "RESUMED after op 7")
	if st := w.fake.GatewayStats(); st.Identifies != 2 || st.Resumes != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestGatewayCloseCodes: each close code on demand. At Identify, Open returns the
// *websocket.CloseError with the code; mid-session, a resumable code resumes and a
// non-resumable one gets Invalid Session and a new Identify.
func TestGatewayCloseCodes(t *testing.T) {
	t.Parallel()
	atIdentify := []struct {
		name  string
		code  int
		setup func(f *Server, s *discordgo.Session)
	}{
		{"4004 token reset", CloseAuthenticationFailed, func(f *Server, _ *discordgo.Session) { f.SetToken("a-new-token") }},
		{"4014 disallowed intent", CloseDisallowedIntents, func(f *Server, s *discordgo.Session) {
			f.SetAllowedIntents(0)
			s.Identify.Intents = discordgo.IntentGuildMembers
		}},
		{"4013 invalid intents", CloseInvalidIntents, func(_ *Server, s *discordgo.Session) { s.Identify.Intents = 1 << 30 }},
		{"4010 invalid shard", CloseInvalidShard, func(_ *Server, s *discordgo.Session) { s.Identify.Shard = &[2]int{3, 2} }},
	}
	for _, c := range atIdentify {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, Options{})
			s := w.fake.Session()
			s.ShouldReconnectOnError = false
			c.setup(w.fake, s)
			err := s.Open()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != c.code {
				t.Fatalf("Open = %v, want close code %d", err, c.code)
			}
		})
	}
	midSession := []struct {
		code      int
		resumable bool
	}{
		{CloseUnknownError, true}, {CloseRateLimited, true}, {CloseSessionTimedOut, false}, {CloseInvalidSeq, false},
	}
	for _, c := range midSession {
		t.Run("mid-session "+closeReasons[c.code], func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, Options{})
			s := w.fake.Session()
			ev := events(s)
			resumed := make(chan struct{}, 4)
			s.AddHandler(func(*discordgo.Session, *discordgo.Resumed) { resumed <- struct{}{} })
			open(t, s)
			next(t, ev, "READY")
			heartbeating(t, w.fake)
			w.fake.CloseGateway(c.code)
			if c.resumable {
				recv(t, resumed, "RESUMED")
			} else {
				until(t, ev, "READY")
			}
			st := w.fake.GatewayStats()
			if wantIdent := map[bool]int{true: 1, false: 2}[c.resumable]; st.Identifies != wantIdent || st.Resumes != 1 {
				t.Fatalf("stats = %+v, want %d identifies and 1 resume", st, wantIdent)
			}
		})
	}
}

// TestGatewayCompressedFrames: with Identify's compress flag (discordgo's default), dispatches
// arrive as zlib binary frames that discordgo decodes.
func TestGatewayCompressedFrames(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.fake.Session()
	s.Compress = true
	s.Identify.Compress = true
	s.Identify.Intents |= discordgo.IntentMessageContent
	got := make(chan *discordgo.MessageCreate, 1)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { got <- m })
	open(t, s)
	if _, err := w.fake.PostMessage(w.text, w.alice, "zipped"); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, got, "MESSAGE_CREATE"); m.Content != "zipped" {
		t.Fatalf("content = %q", m.Content)
	}
	w.fake.mu.Lock()
	compressed := false
	for _, sess := range w.fake.gw.sessions {
		compressed = compressed || sess.compress
	}
	w.fake.mu.Unlock()
	if !compressed {
		t.Fatal("the session did not ask for compression")
	}
}

// TestGatewayCompressMin: a session that asked for payload compression gets a dispatch as a
// zlib binary frame from Options.CompressMin bytes, and as text below it (0: every frame
// compressed).
func TestGatewayCompressMin(t *testing.T) {
	t.Parallel()
	short, long := "short", strings.Repeat("a long message ", 400)
	for _, c := range []struct {
		name        string
		min         int
		short, long int // the websocket message kinds of the two MESSAGE_CREATEs
	}{
		{"every frame (the default)", 0, websocket.BinaryMessage, websocket.BinaryMessage},
		{"the large ones", 4096, websocket.TextMessage, websocket.BinaryMessage},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, Options{CompressMin: c.min})
			ws, _, err := w.fake.Dialer().Dial(w.fake.GatewayURL()+"?v=10&encoding=json", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if _, _, err := ws.ReadMessage(); err != nil { // Hello
				t.Fatal(err)
			}
			identify, _ := json.Marshal(map[string]any{"op": 2, "d": map[string]any{"token": w.fake.Token(), "compress": true,
				"intents":    discordgo.IntentGuilds | discordgo.IntentGuildMessages | discordgo.IntentMessageContent,
				"properties": map[string]string{"os": "linux"}}})
			if err := ws.WriteMessage(websocket.TextMessage, identify); err != nil {
				t.Fatal(err)
			}
			// Posted once READY came (the session exists), then read until both arrived.
			kinds := map[string]int{}
			for len(kinds) < 2 {
				_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
				kind, msg, err := ws.ReadMessage()
				if err != nil {
					t.Fatalf("read: %v (MESSAGE_CREATEs so far: %v)", err, kinds)
				}
				if kind == websocket.BinaryMessage {
					z, err := zlib.NewReader(bytes.NewReader(msg))
					if err != nil {
						t.Fatalf("a binary frame that is not zlib: %v", err)
					}
					if msg, err = io.ReadAll(z); err != nil {
						t.Fatal(err)
					}
				}
				var fr struct {
					T string `json:"t"`
					D struct {
						Content string `json:"content"`
					} `json:"d"`
				}
				if err := json.Unmarshal(msg, &fr); err != nil {
					t.Fatalf("frame %q: %v", msg, err)
				}
				switch fr.T {
				case "READY":
					for _, text := range []string{short, long} {
						if _, err := w.fake.PostMessage(w.text, w.alice, text); err != nil {
							t.Fatal(err)
						}
					}
				case "MESSAGE_CREATE":
					kinds[fr.D.Content] = kind
				}
			}
			if kinds[short] != c.short || kinds[long] != c.long {
				t.Fatalf("message kinds: short %d, long %d; want %d, %d (text %d, binary %d)",
					kinds[short], kinds[long], c.short, c.long, websocket.TextMessage, websocket.BinaryMessage)
			}
		})
	}
}

// TestGatewayShards: each shard's session gets the GUILD_CREATEs and events of its guilds only,
// by (guild_id >> 22) % num_shards.
func TestGatewayShards(t *testing.T) {
	t.Parallel()
	f := New(Options{})
	t.Cleanup(f.Close)
	// ids whose shard under 2 shards is 0 and 1
	even, odd := strconv.FormatUint(2<<22, 10), strconv.FormatUint(3<<22, 10)
	f.AddGuild(GuildSpec{ID: even, Name: "even"})
	f.AddGuild(GuildSpec{ID: odd, Name: "odd"})
	for shard, want := range []string{even, odd} {
		s := f.Session()
		s.ShardID, s.ShardCount = shard, 2
		ev := events(s)
		open(t, s)
		r := decoded[discordgo.Ready](t, next(t, ev, "READY"))
		if len(r.Guilds) != 1 || r.Guilds[0].ID != want {
			t.Fatalf("shard %d READY guilds = %+v", shard, r.Guilds)
		}
		if g := decoded[discordgo.GuildCreate](t, next(t, ev, "GUILD_CREATE")); g.ID != want {
			t.Fatalf("shard %d got guild %s", shard, g.ID)
		}
	}
}
