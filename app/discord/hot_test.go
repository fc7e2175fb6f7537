package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Tests of the decode-once path (hot.go): the Bot with it against the
// Bot without it on one stream, the frame filter's batching, the fast
// envelope against encoding/json, the narrow decode against discordgo's.

const (
	hotUser2   = "300000000000000005"
	hotGuild2  = "100000000000000002" // not active
	hotChannel = "200000000000000002"
	hotThread  = "200000000000000003"
	hotRole    = "400000000000000003"
)

// hotStream is a gateway stream of every kind of dispatch the hot path
// takes, in the shapes Discord sends (full and partial updates, replies
// in a thread, components, reactions, stickers, polls, members with
// timeouts, an inactive guild) and malformed ones the narrow decode leaves
// to discordgo, between the guild, channel, thread and role dispatches
// discordgo's state takes.
var hotStream = []struct{ guild, event, d string }{
	{evGuild, "CHANNEL_CREATE", `{"id":"` + hotChannel + `","type":0,"guild_id":"` + evGuild + `","name":"second","position":2}`},
	{evGuild, "THREAD_CREATE", `{"id":"` + hotThread + `","type":11,"guild_id":"` + evGuild + `","parent_id":"` + evChannel + `","name":"a thread","owner_id":"` + evUser + `"}`},
	{evGuild, "GUILD_ROLE_CREATE", `{"guild_id":"` + evGuild + `","role":{"id":"` + hotRole + `","name":"gamma","position":3,"permissions":"0"}}`},
	{evGuild, "MESSAGE_CREATE", `{"id":"500000000000000001","type":0,"channel_id":"` + evChannel + `","guild_id":"` + evGuild + `","content":"hello <@` + fakeBotID + `> \"quoted\" \\ done",` +
		`"timestamp":"2025-06-01T12:00:00.000000+00:00","edited_timestamp":null,"tts":false,"mention_everyone":false,"mentions":[{"id":"` + fakeBotID + `","username":"kimi","bot":true}],"mention_roles":[],` +
		`"attachments":[{"id":"600000000000000001","filename":"a.png","size":1234,"url":"https://cdn.example/a.png","proxy_url":"https://media.example/a.png","content_type":"image/png","width":10,"height":10}],` +
		`"embeds":[{"type":"rich","title":"T","description":"D","url":"https://e.example","fields":[{"name":"n","value":"v","inline":true}],"footer":{"text":"f"},"image":{"url":"https://i.example/x.png","proxy_url":"https://p.example/x.png"}}],` +
		`"pinned":false,"author":{"id":"` + evUser + `","username":"ann","global_name":"Ann","discriminator":"0","avatar":null},` +
		`"member":{"roles":["` + evRoleA + `"],"joined_at":"2024-01-01T00:00:00.000000+00:00","nick":null,"deaf":false,"mute":false,"flags":0}}`},
	{evGuild, "MESSAGE_CREATE", `{"id":"500000000000000002","type":19,"channel_id":"` + hotThread + `","guild_id":"` + evGuild + `","content":"a reply é 🎉",` +
		`"timestamp":"2025-06-01T12:01:00.000000+00:00","edited_timestamp":null,"mentions":[],"attachments":[],"embeds":[],"pinned":true,` +
		`"author":{"id":"` + hotUser2 + `","username":"bob","global_name":null,"discriminator":"0"},` +
		`"member":{"roles":["` + evRoleB + `","` + evRoleA + `"],"joined_at":"2024-02-01T00:00:00+00:00","nick":"Bobby","communication_disabled_until":"2030-01-01T00:00:00+00:00"},` +
		`"message_reference":{"type":0,"message_id":"500000000000000001","channel_id":"` + hotThread + `","guild_id":"` + evGuild + `"},` +
		`"referenced_message":{"id":"500000000000000001","type":0,"channel_id":"` + hotThread + `","content":"hello","timestamp":"2025-06-01T12:00:00+00:00","author":{"id":"` + fakeBotID + `","username":"kimi","bot":true},"mentions":[],"attachments":[],"embeds":[]}}`},
	{evGuild, "MESSAGE_CREATE", `{"id":"500000000000000003","type":0,"channel_id":"` + evChannel + `","guild_id":"` + evGuild + `","content":"with parts",` +
		`"timestamp":"2025-06-01T12:02:00Z","author":{"id":"` + fakeBotID + `","username":"kimi","bot":true},` +
		`"components":[{"type":1,"components":[{"type":2,"style":1,"label":"Go","custom_id":"m:x:go"}]}],` +
		`"reactions":[{"count":2,"me":false,"emoji":{"id":null,"name":"👍"}}],"sticker_items":[{"id":"700000000000000001","name":"s","format_type":1}],` +
		`"poll":{"question":{"text":"q"},"answers":[],"allow_multiselect":false},"thread":{"id":"` + hotThread + `","type":11},"flags":0,"webhook_id":null}`},
	{evGuild, "MESSAGE_REACTION_ADD", `{"user_id":"` + evUser + `","channel_id":"` + evChannel + `","message_id":"500000000000000001","guild_id":"` + evGuild + `","emoji":{"id":null,"name":"🔥"}}`},
	{evGuild, "MESSAGE_UPDATE", `{"id":"500000000000000001","type":0,"channel_id":"` + evChannel + `","guild_id":"` + evGuild + `","content":"hello, edited",` +
		`"timestamp":"2025-06-01T12:00:00.000000+00:00","edited_timestamp":"2025-06-01T12:05:00.000000+00:00","mentions":[],"attachments":[],"embeds":[],` +
		`"author":{"id":"` + evUser + `","username":"ann","global_name":"Ann"},"member":{"roles":["` + evRoleA + `"],"joined_at":"2024-01-01T00:00:00Z"}}`},
	{evGuild, "MESSAGE_UPDATE", `{"id":"500000000000000002","channel_id":"` + hotThread + `","guild_id":"` + evGuild + `","content":"partial"}`},
	{evGuild, "MESSAGE_UPDATE", `{"id":"500000000000000003","channel_id":"` + evChannel + `","guild_id":"` + evGuild + `","embeds":[{"title":"unfurled"}]}`},
	{evGuild, "MESSAGE_REACTION_REMOVE", `{"user_id":"` + evUser + `","channel_id":"` + evChannel + `","message_id":"500000000000000001","guild_id":"` + evGuild + `","emoji":{"id":null,"name":"🔥"}}`},
	{evGuild, "MESSAGE_REACTION_REMOVE_ALL", `{"channel_id":"` + evChannel + `","message_id":"500000000000000001","guild_id":"` + evGuild + `"}`},
	{evGuild, "GUILD_MEMBER_UPDATE", `{"guild_id":"` + evGuild + `","roles":["` + evRoleA + `","` + hotRole + `"],"user":{"id":"` + evUser + `","username":"ann","global_name":"Ann"},` +
		`"nick":"annie","joined_at":"2024-01-01T00:00:00Z","communication_disabled_until":"2031-05-05T05:05:05Z","flags":0}`},
	{evGuild, "GUILD_MEMBER_UPDATE", `{"guild_id":"` + evGuild + `","roles":[],"user":{"id":"300000000000000099","username":"stranger"},"joined_at":"2024-01-01T00:00:00Z"}`},
	{evGuild, "GUILD_ROLE_UPDATE", `{"guild_id":"` + evGuild + `","role":{"id":"` + hotRole + `","name":"gamma renamed","position":3,"permissions":"0"}}`},
	{evGuild, "GUILD_MEMBER_UPDATE", `{"guild_id":"` + evGuild + `","roles":["` + evRoleA + `"],"user":{"id":"` + evUser + `","username":"ann","global_name":"Ann"},"nick":null,"joined_at":"2024-01-01T00:00:00Z"}`},
	{hotGuild2, "MESSAGE_CREATE", `{"id":"500000000000000009","type":0,"channel_id":"200000000000000009","guild_id":"` + hotGuild2 + `","content":"elsewhere","timestamp":"2025-06-01T12:00:00Z",` +
		`"author":{"id":"` + hotUser2 + `","username":"bob"},"member":{"roles":[],"joined_at":"2024-01-01T00:00:00Z"}}`},
	// Malformed: left to discordgo by the narrow decode, handled as before.
	{evGuild, "MESSAGE_CREATE", `null`},
	{evGuild, "MESSAGE_CREATE", `{"id":5,"channel_id":"` + evChannel + `","guild_id":"` + evGuild + `"}`},
	{evGuild, "MESSAGE_CREATE", `{"id":"500000000000000010","channel_id":"` + evChannel + `","guild_id":"` + evGuild + `","timestamp":"yesterday","author":{"id":"` + evUser + `"}}`},
	{evGuild, "MESSAGE_UPDATE", `[]`},
	{evGuild, "GUILD_MEMBER_UPDATE", `{"guild_id":"` + evGuild + `","user":null}`},
	{evGuild, "MESSAGE_DELETE", `{"id":"500000000000000002","channel_id":"` + hotThread + `","guild_id":"` + evGuild + `"}`},
	{evGuild, "MESSAGE_DELETE", `{"id":"500000000000000077","channel_id":"` + evChannel + `","guild_id":"` + evGuild + `"}`},
	{evGuild, "MESSAGE_DELETE_BULK", `{"ids":["500000000000000003","500000000000000001"],"channel_id":"` + evChannel + `","guild_id":"` + evGuild + `"}`},
	{evGuild, "THREAD_DELETE", `{"id":"` + hotThread + `","type":11,"guild_id":"` + evGuild + `","parent_id":"` + evChannel + `"}`},
	{evGuild, "CHANNEL_DELETE", `{"id":"` + hotChannel + `","type":0,"guild_id":"` + evGuild + `"}`},
	{evGuild, "GUILD_MEMBER_REMOVE", `{"guild_id":"` + evGuild + `","user":{"id":"` + hotUser2 + `","username":"bob"}}`},
}

// fakeBotID is fakediscord's default bot user id (Options.BotID).
const fakeBotID = "900000000000000002"

// hotRig is a Bot on f with its own store, bus and module seeing every
// discord.* event.
type hotRig struct {
	b   *Bot
	got chan sdk.Event
}

func newHotRig(t *testing.T, f *fakediscord.Server, hotOff bool) *hotRig {
	t.Helper()
	bus := events.New(events.Options{Workers: 1, QueueSize: 4096, Logger: discardLogger()})
	t.Cleanup(func() { bus.Close(5 * time.Second) })
	r := &hotRig{got: make(chan sdk.Event, 4096)}
	mod := bus.Module(context.Background(), "hotmod", sdk.Permissions{EventTopics: []string{"discord.*"}}, nil)
	if _, err := mod.Subscribe("discord.*", func(_ context.Context, ev sdk.Event) error {
		r.got <- ev
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The members intent, so that member dispatches come.
	st := connStore(t)
	if err := settings.SaveDiscordIntents(context.Background(), st, true, false, settings.Actor{Name: "test", IP: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{Store: st, Bus: bus, Guilds: evGuilds{parseID(evGuild): true}, Logger: discardLogger(),
		Token: "Bot " + f.Token(), TokenSource: "test", Transport: f.Transport(), Dialer: f.Dialer()})
	if err != nil {
		t.Fatal(err)
	}
	b.hotOff = hotOff
	t.Cleanup(func() { _ = b.Close() })
	startReady(t, b)
	r.b = b
	return r
}

// until returns the events the module got up to the message with id
// (excluded).
func (r *hotRig) until(t *testing.T, id string) []sdk.Event {
	t.Helper()
	var out []sdk.Event
	deadline := time.After(connWait)
	for {
		select {
		case ev := <-r.got:
			if m, ok := ev.Payload.(sdk.MessageEvent); ok && m.Message.Ref.MessageID == parseID(id) {
				return out
			}
			out = append(out, sdk.Event{Topic: ev.Topic, Payload: ev.Payload})
		case <-deadline:
			t.Fatalf("message %s never reached the module; got %d events", id, len(out))
			return nil
		}
	}
}

// stateJSON is the session's state of guilds (and private channels) as
// JSON.
func (r *hotRig) stateJSON(t *testing.T) string {
	t.Helper()
	s, err := r.b.session()
	if err != nil {
		t.Fatal(err)
	}
	s.State.RLock()
	defer s.State.RUnlock()
	b, err := json.Marshal(struct {
		Guilds  []*discordgo.Guild
		Private []*discordgo.Channel
	}{s.State.Guilds, s.State.PrivateChannels})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cacheDump is everything Kimi's cache holds, in its order.
func cacheDump(c *Cache) string {
	var b strings.Builder
	c.memMu.Lock()
	for i := c.members.head; i >= 0; i = c.members.entries[i].next {
		fmt.Fprintf(&b, "member %+v\n", c.members.entries[i].cachedMember)
	}
	c.memMu.Unlock()
	c.msgMu.Lock()
	ids := slices.Sorted(func(yield func(uint64) bool) {
		for id := range c.msgs.m {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		fmt.Fprintf(&b, "message %d %+v\n", id, c.msgs.m[id])
	}
	fmt.Fprintf(&b, "ring %v next %d bot %v\n", c.msgs.ring[:16], c.msgs.next, c.bot.m)
	c.msgMu.Unlock()
	return b.String()
}

// TestHotPathMatchesDiscordgo: the Bot taking the hot dispatches itself
// and a Bot leaving them to discordgo, on one fake and one stream,
// publish the same events in the same order and end with the same cache,
// directory revisions, dropped-frame count and discordgo state (guilds,
// channels, threads, roles, member counts).
func TestHotPathMatchesDiscordgo(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	f.AddGuild(fakediscord.GuildSpec{ID: evGuild, Name: "Guild"})
	f.AddGuild(fakediscord.GuildSpec{ID: hotGuild2, Name: "Other"})
	f.AddRole(evGuild, discordgo.Role{ID: evRoleA, Name: "alpha"})
	f.AddRole(evGuild, discordgo.Role{ID: evRoleB, Name: "beta"})
	f.AddChannel(fakediscord.ChannelSpec{ID: evChannel, GuildID: evGuild, Name: "general"})
	f.AddUser(discordgo.User{ID: evUser, Username: "ann"})
	f.AddMember(evGuild, evUser, evRoleA)
	hot := newHotRig(t, f, false)
	ref := newHotRig(t, f, true)

	for _, fr := range hotStream {
		if err := f.DispatchRaw(fr.guild, fr.event, json.RawMessage(fr.d)); err != nil {
			t.Fatal(err)
		}
	}
	end, err := f.PostMessage(evChannel, evUser, "end of the stream")
	if err != nil {
		t.Fatal(err)
	}
	gotHot, gotRef := hot.until(t, end.ID), ref.until(t, end.ID)

	if len(gotRef) < 12 {
		t.Fatalf("the reference published %d events; the stream should give more", len(gotRef))
	}
	if !reflect.DeepEqual(gotHot, gotRef) {
		for i := range max(len(gotHot), len(gotRef)) {
			var h, r any
			if i < len(gotHot) {
				h = gotHot[i]
			}
			if i < len(gotRef) {
				r = gotRef[i]
			}
			if !reflect.DeepEqual(h, r) {
				t.Errorf("event %d:\n hot path  %+v\n discordgo %+v", i, h, r)
			}
		}
	}
	if h, r := cacheDump(hot.b.cache), cacheDump(ref.b.cache); h != r {
		t.Errorf("caches differ:\n hot path\n%s discordgo\n%s", h, r)
	}
	if h, r := hot.stateJSON(t), ref.stateJSON(t); h != r {
		t.Errorf("discordgo states differ:\n hot path  %s\n discordgo %s", h, r)
	}
	for _, g := range []string{evGuild, hotGuild2} {
		if h, r := hot.b.DirectoryRevision(parseID(g)), ref.b.DirectoryRevision(parseID(g)); h != r {
			t.Errorf("guild %s directory revision %d, discordgo's %d", g, h, r)
		}
	}
	if h, r := hot.b.Status().FramesDropped, ref.b.Status().FramesDropped; h != r {
		t.Errorf("frames dropped %d, discordgo's %d", h, r)
	}
	// The stream reached the state: the channel and thread came and went,
	// the role stayed renamed.
	s, _ := hot.b.session()
	if r, err := s.State.Role(evGuild, hotRole); err != nil || r.Name != "gamma renamed" {
		t.Errorf("role = %+v, %v", r, err)
	}
}

// hotCase is a frame through frameConn with a hot sink.
func throughHotFilter(t *testing.T, in []byte) (out []byte, taken []string) {
	t.Helper()
	server, client := net.Pipe()
	go func() {
		_, _ = server.Write(in) // one write: the frames arrive together
		_ = server.Close()
	}()
	c := newFrameConn(client, frameHooks{hot: func(event string, _ hotKind, d []byte) bool {
		var m struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(d, &m) != nil || m.ID == "refuse" {
			return false
		}
		taken = append(taken, event+" "+m.ID)
		return true
	}})
	defer c.Close()
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return out, taken
}

func hotFrame(seq int, event, d string) []byte {
	return wsFrame(wsOpText, fmt.Appendf(nil, `{"op":0,"s":%d,"t":"%s","d":%s}`, seq, event, d))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestFrameConnBatchesHotDispatches: the hot dispatches taken while more
// of the stream is buffered reach discordgo as one droppedFrame of the
// last one's sequence, ahead of the next frame handed on; one refused
// passes as it came, after its predecessors' droppedFrame.
func TestFrameConnBatchesHotDispatches(t *testing.T) {
	m := func(id string) string { return `{"id":"` + id + `"}` }
	ack := wsFrame(wsOpText, []byte(`{"op":11}`))
	guild := hotFrame(5, "GUILD_UPDATE", `{"id":"1"}`)
	cases := []struct {
		name  string
		in    []byte
		want  []byte
		taken []string
	}{
		{"one", hotFrame(1, "MESSAGE_CREATE", m("a")), droppedFrame(1), []string{"MESSAGE_CREATE a"}},
		{"a burst", cat(hotFrame(1, "MESSAGE_CREATE", m("a")), hotFrame(2, "MESSAGE_UPDATE", m("b")), hotFrame(3, "MESSAGE_REACTION_ADD", m("c"))),
			droppedFrame(3), []string{"MESSAGE_CREATE a", "MESSAGE_UPDATE b", "MESSAGE_REACTION_ADD c"}},
		{"before other frames", cat(hotFrame(1, "MESSAGE_CREATE", m("a")), hotFrame(2, "MESSAGE_DELETE", m("b")), guild, ack, hotFrame(6, "GUILD_MEMBER_UPDATE", m("c"))),
			cat(droppedFrame(2), guild, ack, droppedFrame(6)), []string{"MESSAGE_CREATE a", "MESSAGE_DELETE b", "GUILD_MEMBER_UPDATE c"}},
		{"a refused one passes", cat(hotFrame(1, "MESSAGE_CREATE", m("a")), hotFrame(2, "MESSAGE_CREATE", m("refuse")), hotFrame(3, "MESSAGE_CREATE", m("c"))),
			cat(droppedFrame(1), hotFrame(2, "MESSAGE_CREATE", m("refuse")), droppedFrame(3)), []string{"MESSAGE_CREATE a", "MESSAGE_CREATE c"}},
		{"no object passes", hotFrame(1, "MESSAGE_CREATE", `null`), hotFrame(1, "MESSAGE_CREATE", `null`), nil},
		{"compressed", cat(wsFrame(wsOpBinary, zlibbed([]byte(`{"t":"MESSAGE_CREATE","s":4,"op":0,"d":{"id":"z"}}`))), ack),
			cat(droppedFrame(4), ack), []string{"MESSAGE_CREATE z"}},
		{"fragmented", cat(wsFragments(wsOpText, []byte(`{"op":0,"s":7,"t":"MESSAGE_CREATE","d":{"id":"f"}}`), 3), ack),
			cat(droppedFrame(7), ack), []string{"MESSAGE_CREATE f"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, taken := throughHotFilter(t, append([]byte(upgrade101), tc.in...))
			if want := append([]byte(upgrade101), tc.want...); !bytes.Equal(out, want) {
				t.Errorf("stream = %q\nwant     %q", out, want)
			}
			if !slices.Equal(taken, tc.taken) {
				t.Errorf("taken = %q, want %q", taken, tc.taken)
			}
		})
	}
}

// TestFastEnvelope: the envelopes fastEnvelope reads, and those it leaves
// to encoding/json.
func TestFastEnvelope(t *testing.T) {
	cases := []struct {
		msg  string
		ok   bool
		seq  int64
		t, d string
	}{
		{`{"op":0,"s":12,"t":"MESSAGE_CREATE","d":{"a":"}\"{"}}`, true, 12, "MESSAGE_CREATE", `{"a":"}\"{"}`},
		{` { "t" : "X" , "s" : 0 , "op" : 0 , "d" : {"x":[{},"\\"]} } `, true, 0, "X", `{"x":[{},"\\"]}`},
		{`{"t":"X","s":1,"op":0,"d":{"a":"\\\""}}`, true, 1, "X", `{"a":"\\\""}`},
		{`{"op":0,"s":1,"t":"X"}`, false, 0, "", ""},                          // no d
		{`{"op":0,"s":1,"t":"X","d":{},"d":{}}`, false, 0, "", ""},            // duplicate
		{`{"op":1,"s":1,"t":"X","d":{}}`, false, 0, "", ""},                   // another op
		{`{"op":0,"s":01,"t":"X","d":{}}`, false, 0, "", ""},                  // leading zero
		{`{"op":0,"s":1.5,"t":"X","d":{}}`, false, 0, "", ""},                 // no integer
		{`{"op":0,"s":1,"t":"\u0058","d":{}}`, false, 0, "", ""},              // escape
		{`{"OP":0,"s":1,"t":"X","d":{}}`, false, 0, "", ""},                   // another key
		{`{"op":0,"s":1,"t":"X","d":{}} x`, false, 0, "", ""},                 // trailing
		{`{"op":0,"s":1,"t":"X","d":null}`, false, 0, "", ""},                 // no object
		{`{"op":0,"s":1,"t":"X","d":{"a":"}`, false, 0, "", ""},               // unterminated
		{`{"op":0,"s":1234567890123456789,"t":"X","d":{}}`, false, 0, "", ""}, // 19 digits
	}
	for _, tc := range cases {
		env, ok := fastEnvelope([]byte(tc.msg))
		if ok != tc.ok || (ok && (env.S != tc.seq || env.T != tc.t || string(env.D) != tc.d)) {
			t.Errorf("fastEnvelope(%s) = %+v (d %s), %v", tc.msg, env, env.D, ok)
		}
	}
}

// FuzzFastEnvelope: whenever fastEnvelope reads an envelope whose d is
// valid JSON, encoding/json reads msg as the same envelope (so the hot
// path and discordgo agree on the type, sequence and payload).
func FuzzFastEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"op":0,"s":12,"t":"MESSAGE_CREATE","d":{"a":"}\"{"}}`,
		`{"t":"MESSAGE_UPDATE","s":3,"op":0,"d":{"x":[{},"\\"],"y":"\u00e9"}}`,
		`{"op":0,"s":1,"t":"X","d":{}}`,
		`{"op":0 ,"s": 9,"t":"GUILD_MEMBER_UPDATE" ,"d":{"roles":[]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		env, ok := fastEnvelope(msg)
		if !ok || !json.Valid(env.D) {
			return
		}
		var want hotEnvelope
		if err := json.Unmarshal(msg, &want); err != nil {
			t.Fatalf("fastEnvelope read %q, encoding/json refuses it: %v", msg, err)
		}
		if want.Op != 0 || want.S != env.S || want.T != env.T || !bytes.Equal(want.D, env.D) {
			t.Fatalf("fastEnvelope %+v (d %s), encoding/json %+v (d %s)", env, env.D, want, want.D)
		}
	})
}

// TestNarrowMessageFieldsAreDiscordgos: every gwMessage field is the
// discordgo.Message field of the same name, type and JSON key, so the
// narrow decode reads each as discordgo does.
func TestNarrowMessageFieldsAreDiscordgos(t *testing.T) {
	mt := reflect.TypeFor[discordgo.Message]()
	nt := reflect.TypeFor[gwMessage]()
	for i := range nt.NumField() {
		nf := nt.Field(i)
		df, ok := mt.FieldByName(nf.Name)
		switch {
		case !ok:
			t.Errorf("gwMessage.%s is no discordgo.Message field", nf.Name)
		case nf.Tag.Get("json") != strings.TrimSuffix(df.Tag.Get("json"), ",omitempty"):
			t.Errorf("gwMessage.%s's key %q, discordgo's %q", nf.Name, nf.Tag.Get("json"), df.Tag.Get("json"))
		case nf.Name == "ReferencedMessage":
		case nf.Type != df.Type:
			t.Errorf("gwMessage.%s is %s, discordgo's %s", nf.Name, nf.Type, df.Type)
		}
	}
}

// narrowFields is m's fields that gwMessage carries (the referenced
// message's too).
func narrowFields(m *discordgo.Message) *discordgo.Message {
	if m == nil {
		return nil
	}
	var g gwMessage
	gv, mv := reflect.ValueOf(&g).Elem(), reflect.ValueOf(m).Elem()
	for i := range gv.NumField() {
		if name := gv.Type().Field(i).Name; name != "ReferencedMessage" {
			gv.Field(i).Set(mv.FieldByName(name))
		}
	}
	out := g.message()
	out.ReferencedMessage = narrowFields(m.ReferencedMessage)
	return out
}

// FuzzNarrowMessageDecode: a message payload discordgo decodes without an
// error decodes narrowly to the same fields.
func FuzzNarrowMessageDecode(f *testing.F) {
	for _, fr := range hotStream {
		if strings.HasPrefix(fr.event, "MESSAGE_") {
			f.Add([]byte(fr.d))
		}
	}
	f.Add([]byte(evBenchMessage(1)))
	f.Fuzz(func(t *testing.T, d []byte) {
		var full discordgo.MessageCreate
		if err := json.Unmarshal(d, &full); err != nil || full.Message == nil {
			return
		}
		narrow, ok := decodeMessage(d)
		if !ok {
			t.Fatalf("discordgo decodes %q, the narrow decode does not", d)
		}
		if want := narrowFields(full.Message); !reflect.DeepEqual(narrow, want) {
			t.Fatalf("narrow %+v\ndiscordgo %+v", narrow, want)
		}
	})
}
