package discord

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestActSendDM: true when the DM was sent (no mentions), false when the
// user blocks DMs, is unknown, or the send fails any other way; the content
// and embed limits refuse before any request.
func TestActSendDM(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	mod := w.mod("kudos")
	const dmRoute = "POST /users/@me/channels"
	cases := []struct {
		name    string
		user    uint64
		content string
		embed   *sdk.OutgoingEmbed
		setup   func()
		want    bool
		wantErr string
		posts   int // message requests sent
	}{
		{name: "sent, no mentions", user: w.member, content: "hi <@" + idString(w.member2) + "> @everyone", embed: &sdk.OutgoingEmbed{Title: "card"}, want: true, posts: 1},
		{name: "the user blocks DMs", user: w.member2, content: "x", setup: func() { w.f.SetDMsBlocked(idString(w.member2), true) }, posts: 1},
		{name: "unknown user", user: 12345, content: "x"},
		{name: "the send fails", user: w.regular, content: "x", setup: func() {
			w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: 500, AfterHandling: true})
		}, posts: 1},
		{name: "content too long", user: w.member, content: strings.Repeat("x", 2001), wantErr: "discord: message content is 2001 characters, more than Discord's 2000"},
		{name: "embed too long", user: w.member, embed: &sdk.OutgoingEmbed{Title: strings.Repeat("t", 257)}, wantErr: "discord: embed title is longer than 256 characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			opens, posts := len(w.f.RequestsTo(dmRoute)), len(w.f.RequestsTo(postRoute))
			got, err := mod.SendDM(ctx, tc.user, tc.content, tc.embed)
			wantErr(t, err, tc.wantErr)
			if got != tc.want {
				t.Fatalf("SendDM = %v, want %v", got, tc.want)
			}
			sent := w.f.RequestsTo(postRoute)[posts:]
			if len(sent) != tc.posts {
				t.Fatalf("message requests = %d, want %d", len(sent), tc.posts)
			}
			if tc.wantErr != "" {
				if n := len(w.f.RequestsTo(dmRoute)) - opens; n != 0 {
					t.Fatalf("a refused DM opened a channel: %d requests", n)
				}
				return
			}
			if !tc.want {
				return
			}
			var body struct {
				AllowedMentions *struct {
					Parse []string `json:"parse"`
				} `json:"allowed_mentions"`
			}
			if err := json.Unmarshal(sent[0].Body, &body); err != nil || body.AllowedMentions == nil || body.AllowedMentions.Parse == nil || len(body.AllowedMentions.Parse) != 0 {
				t.Fatalf("body = %s, want allowed_mentions parse []", sent[0].Body)
			}
			msgs := w.f.Messages(w.f.DMChannel(idString(tc.user)))
			if len(msgs) != 1 || msgs[0].Content != tc.content || len(msgs[0].Embeds) != 1 || len(msgs[0].Mentions) != 0 || msgs[0].MentionEveryone {
				t.Fatalf("DM = %+v", msgs)
			}
		})
	}
}

// TestActCanViewPrivateThread: membership of a private thread is taken from
// the session state (THREAD_MEMBERS_UPDATE, no request) or fetched.
func TestActCanViewPrivateThread(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	mod := w.mod("digest")
	const route = "GET /channels/{channel}/thread-members/{user}"
	w.f.AddThreadMember(idString(w.private), idString(w.member), false) // quietly: only REST knows
	w.f.AddThreadMember(idString(w.private), idString(w.member2), true)
	deadline := time.Now().Add(actBound)
	for !actStateThreadMember(w.s, idString(w.private), idString(w.member2)) {
		if time.Now().After(deadline) {
			t.Fatal("the state never learnt the announced thread member")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cases := []struct {
		name     string
		user     uint64
		want     bool
		requests int
	}{
		{"a member, fetched", w.member, true, 1},
		{"a member, from the state", w.member2, true, 0},
		{"not a member", w.regular, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(w.f.RequestsTo(route))
			got, err := mod.CanViewChannel(ctx, w.guild, tc.user, w.private)
			if err != nil || got != tc.want {
				t.Fatalf("CanViewChannel = %v, %v; want %v", got, err, tc.want)
			}
			if n := len(w.f.RequestsTo(route)) - before; n != tc.requests {
				t.Fatalf("thread-member requests = %d, want %d", n, tc.requests)
			}
		})
	}
}

func actStateThreadMember(s *discordgo.Session, thread, user string) bool {
	c, err := s.State.Channel(thread)
	if err != nil {
		return false
	}
	s.State.RLock()
	defer s.State.RUnlock()
	return slices.ContainsFunc(c.Members, func(tm *discordgo.ThreadMember) bool { return tm.UserID == user })
}

// TestActFetchPublicThreads: the active threads of the state and of REST
// and the archived public ones, sorted by id, without private threads nor
// another channel's; when the active list fails the state's are kept.
func TestActFetchPublicThreads(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	add := func(name string, parent uint64) uint64 {
		return parseID(w.f.AddChannel(fakediscord.ChannelSpec{GuildID: idString(w.guild), Name: name,
			Type: discordgo.ChannelTypeGuildPublicThread, ParentID: idString(parent)}).ID)
	}
	archived := add("archived", w.text)
	restOnly := add("rest only", w.text)
	add("another channel's", w.hidden)
	w.f.ArchiveThread(idString(archived), true)
	deadline := time.Now().Add(actBound)
	for {
		_, err1 := w.s.State.Channel(idString(archived))
		_, err2 := w.s.State.Channel(idString(restOnly))
		if err1 == nil && err2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the state never held the new threads")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The session missed them: an archived thread is not in GUILD_CREATE,
	// and an active one may be unknown to the state.
	for _, id := range []uint64{archived, restOnly} {
		c, _ := w.s.State.Channel(idString(id))
		if err := w.s.State.ChannelRemove(c); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(got []sdk.ChannelSnapshot) []uint64 {
		var out []uint64
		for _, c := range got {
			out = append(out, c.ChannelID)
		}
		return out
	}
	got, err := w.mod("digest").FetchPublicThreads(ctx, w.guild, w.text)
	if want := []uint64{w.thread, archived, restOnly}; err != nil || !slices.Equal(ids(got), want) {
		t.Fatalf("threads = %v, %v; want %v (active of the state and REST, archived, by id)", ids(got), err, want)
	}
	w.f.InjectFault(fakediscord.Fault{Route: "GET /guilds/{guild}/threads/active", Status: 500})
	got, err = w.mod("digest").FetchPublicThreads(ctx, w.guild, w.text)
	if want := []uint64{w.thread, archived}; err != nil || !slices.Equal(ids(got), want) {
		t.Fatalf("threads without the active list = %v, %v; want %v", ids(got), err, want)
	}
}

// TestActFetchInvitesVanity: the vanity invite joins the guild's invites
// when the guild has one and Discord gives it; refused, the others are
// still returned.
func TestActFetchInvitesVanity(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	inv, err := w.s.ChannelInviteCreate(idString(w.text), discordgo.Invite{MaxUses: 5})
	if err != nil {
		t.Fatal(err)
	}
	setStateVanity := func(code string) {
		g, _ := w.s.State.Guild(idString(w.guild))
		w.s.State.Lock()
		g.VanityURLCode = code
		w.s.State.Unlock()
	}
	codes := func(got []sdk.InviteSnapshot) []string {
		var out []string
		for _, i := range got {
			out = append(out, i.Code)
		}
		return out
	}
	w.f.SetVanityURL(idString(w.guild), "kimi-fans", 42)
	setStateVanity("kimi-fans") // as GUILD_UPDATE would tell
	got, err := w.mod("digest").FetchInvites(ctx, w.guild)
	if err != nil || !slices.Equal(codes(got), []string{inv.Code, "kimi-fans"}) || got[1].Uses == nil || *got[1].Uses != 42 || got[1].GuildID != w.guild {
		t.Fatalf("invites = %+v, %v; want the invite and the vanity one with its 42 uses", got, err)
	}
	// The feature is gone (the state is behind): Discord refuses 403.
	w.f.SetVanityURL(idString(w.guild), "", 0)
	got, err = w.mod("digest").FetchInvites(ctx, w.guild)
	if err != nil || !slices.Equal(codes(got), []string{inv.Code}) {
		t.Fatalf("invites = %v, %v; want only the invite", codes(got), err)
	}
	if vs := w.f.RequestsTo("GET /guilds/{guild}/vanity-url"); len(vs) != 2 || vs[1].Status != 403 {
		t.Fatalf("vanity requests = %+v", vs)
	}
	// No vanity code: not asked.
	setStateVanity("")
	if _, err := w.mod("digest").FetchInvites(ctx, w.guild); err != nil || len(w.f.RequestsTo("GET /guilds/{guild}/vanity-url")) != 2 {
		t.Fatalf("the vanity invite was asked for a guild without one: %v", err)
	}
}

// TestActSamePathNotSerialised: a send waiting out a rate limit holds no
// lock a second send on the same path needs; the second waits on its own
// and its ctx ends its wait while the first keeps waiting.
func TestActSamePathNotSerialised(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	w.f.SetRateLimit(postRoute, 1, time.Hour)
	mod := w.mod("kudos")
	msg := sdk.OutgoingMessage{Content: "x"}
	if _, err := mod.SendMessage(context.Background(), w.text, msg); err != nil {
		t.Fatal(err)
	}
	waits := make(chan RateLimitEvent, 16)
	w.s.Client.Transport.(*transport).onLimit = func(ev RateLimitEvent) { waits <- ev }
	w.s.Client.Timeout = 0 // the sends' ctxs alone end their waits
	wait := func(what string) {
		t.Helper()
		select {
		case <-waits:
		case <-time.After(actBound):
			t.Fatal(what)
		}
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	doneA := make(chan error, 1)
	go func() { _, err := mod.SendMessage(ctxA, w.text, msg); doneA <- err }()
	wait("the first send never waited for the exhausted bucket")
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	doneB := make(chan error, 1)
	go func() { _, err := mod.SendMessage(ctxB, w.text, msg); doneB <- err }()
	wait("the second send on the same path never reached Kimi's limiter: it queued behind the first on discordgo's bucket lock")
	cancelB()
	select {
	case err := <-doneB:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("second send: %v, want context.Canceled", err)
		}
	case <-time.After(actBound):
		t.Fatal("the cancelled second send kept waiting")
	}
	select {
	case err := <-doneA:
		t.Fatalf("the first send ended with the second's ctx: %v", err)
	default:
	}
	cancelA()
	select {
	case err := <-doneA:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("first send: %v", err)
		}
	case <-time.After(actBound):
		t.Fatal("the cancelled first send kept waiting")
	}
	if got := statuses(w.f, postRoute); len(got) != 1 {
		t.Fatalf("statuses = %v, want only the first send", got)
	}
}

// actResetServer accepts connections, reads one whole request and resets
// the connection (RST) before answering.
func actResetServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					_, _ = io.Copy(io.Discard, req.Body)
				}
				_ = c.(*net.TCPConn).SetLinger(0)
				_ = c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// actRefusedAddr is a loopback address nothing listens on.
func actRefusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

type actRedirect struct {
	addr string
	base http.RoundTripper
}

func (r actRedirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host, req.Host = "http", r.addr, r.addr
	return r.base.RoundTrip(req)
}

// TestTransportNetworkErrorUncertainty: a changing request whose connection
// breaks after it was written is uncertain; one refused at the dial, and a
// GET, are not.
func TestTransportNetworkErrorUncertainty(t *testing.T) {
	reset, refused := actResetServer(t), actRefusedAddr(t)
	cases := []struct {
		name, method, addr string
		body               string
		uncertain          bool
	}{
		{"POST, reset after the write", http.MethodPost, reset, `{"content":"x"}`, true},
		{"DELETE without a body, reset after the write", http.MethodDelete, reset, "", true},
		{"GET, reset", http.MethodGet, reset, "", false},
		{"POST, dial refused", http.MethodPost, refused, `{"content":"x"}`, false},
		{"DELETE, dial refused", http.MethodDelete, refused, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTransport(actRedirect{addr: tc.addr, base: &http.Transport{DisableKeepAlives: true}}, nil)
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, _ := http.NewRequestWithContext(context.Background(), tc.method, "https://discord.com/api/v10/channels/1/messages", body)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				_ = resp.Body.Close()
				t.Fatal("no error")
			}
			if IsUncertain(err) != tc.uncertain {
				t.Fatalf("IsUncertain(%v) = %v, want %v", err, IsUncertain(err), tc.uncertain)
			}
		})
	}
	// Through an action: the safe message, uncertain underneath.
	w := newActWorld(t, fakediscord.Options{})
	w.s.Client = &http.Client{Transport: newTransport(actRedirect{addr: reset, base: &http.Transport{DisableKeepAlives: true}}, nil), Timeout: 20 * time.Second}
	_, err := w.mod("kudos").SendMessage(context.Background(), w.text, sdk.OutgoingMessage{Content: "maybe"})
	if err == nil || err.Error() != "sending the message failed" || !IsUncertain(err) {
		t.Fatalf("err = %v (uncertain %v), want the safe message over an uncertain outcome", err, IsUncertain(err))
	}
}
