package fakediscord

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// zlibClient is a raw gateway client with transport compression: it buffers binary messages
// until one ends with the sync-flush suffix and inflates them through one zlib context for the
// whole connection, as Discord's documentation tells a client to.
type zlibClient struct {
	t      *testing.T
	ws     *websocket.Conn
	pw     *io.PipeWriter
	frames chan gwFrame
	// sizes are the compressed sizes of the messages read, in order.
	sizes chan int
}

func dialZlibStream(t *testing.T, f *Server) *zlibClient {
	t.Helper()
	ws, _, err := f.Dialer().Dial(f.GatewayURL()+"?v=10&encoding=json&compress=zlib-stream", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	pr, pw := io.Pipe()
	c := &zlibClient{t: t, ws: ws, pw: pw, frames: make(chan gwFrame, 64), sizes: make(chan int, 64)}
	t.Cleanup(func() { _ = ws.Close(); _ = pw.Close() })
	go func() { // inflate: one reader for the whole stream
		defer close(c.frames)
		z, err := zlib.NewReader(pr)
		if err != nil {
			return
		}
		dec := json.NewDecoder(z)
		for {
			var fr gwFrame
			if err := dec.Decode(&fr); err != nil {
				return
			}
			c.frames <- fr
		}
	}()
	go func() { // read websocket messages into the inflater
		var pending []byte
		for {
			kind, msg, err := ws.ReadMessage()
			if err != nil {
				_ = pw.CloseWithError(err)
				return
			}
			if kind != websocket.BinaryMessage {
				_ = pw.CloseWithError(io.ErrUnexpectedEOF)
				t.Errorf("a %d message on a zlib-stream connection, want binary: %q", kind, msg)
				return
			}
			if !bytes.HasSuffix(msg, zlibSuffix) {
				_ = pw.CloseWithError(io.ErrUnexpectedEOF)
				t.Errorf("a message that does not end with 00 00 ff ff: % x", msg[max(0, len(msg)-8):])
				return
			}
			c.sizes <- len(msg)
			pending = append(pending, msg...)
			if _, err := pw.Write(pending); err != nil {
				return
			}
			pending = pending[:0]
		}
	}()
	return c
}

// next is the next inflated payload (bounded wait); with event set, dispatches of other events
// and heartbeat ACKs are skipped.
func (c *zlibClient) next(op int, event string) gwFrame {
	c.t.Helper()
	for {
		fr, ok := <-c.frames
		if !ok {
			c.t.Fatalf("the stream ended before op %d %s", op, event)
		}
		if fr.Op == op && (event == "" || fr.T == event) {
			return fr
		}
	}
}

// TestGatewayZlibStream: with compress=zlib-stream every message, Hello first, is a binary
// message of one connection-wide zlib stream ending in 00 00 ff ff; a raw client inflates them
// all with one reader (so a later message needs the context of the earlier ones: only the first
// carries the zlib header, and a repeat of a payload compresses to far less than the first).
// Identify's per-payload compress is moot on such a connection.
func TestGatewayZlibStream(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	c := dialZlibStream(t, w.fake)
	hello := c.next(10, "")
	var h struct {
		Interval int64 `json:"heartbeat_interval"`
	}
	if err := json.Unmarshal(hello.D, &h); err != nil || h.Interval != 41250 {
		t.Fatalf("Hello d = %s (%v)", hello.D, err)
	}
	first := <-c.sizes
	identify, _ := json.Marshal(map[string]any{"op": 2, "d": map[string]any{"token": w.fake.Token(), "compress": true,
		"intents":    discordgo.IntentGuilds | discordgo.IntentGuildMessages | discordgo.IntentMessageContent,
		"properties": map[string]string{"os": "linux"}}})
	if err := c.ws.WriteMessage(websocket.TextMessage, identify); err != nil {
		t.Fatal(err)
	}
	ready := c.next(0, "READY")
	if !bytes.Contains(ready.D, []byte(`"session_id"`)) {
		t.Fatalf("READY d = %s", ready.D)
	}
	c.next(0, "GUILD_CREATE")
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(`{"op":1,"d":2}`)); err != nil {
		t.Fatal(err)
	}
	c.next(11, "")
	text := "the same long message, twice, so the second one compresses to a back-reference of the first"
	var sizes []int
	for range 2 {
		if _, err := w.fake.PostMessage(w.text, w.alice, text); err != nil {
			t.Fatal(err)
		}
		m := c.next(0, "MESSAGE_CREATE")
		var got discordgo.Message
		if err := json.Unmarshal(m.D, &got); err != nil || got.Content != text {
			t.Fatalf("MESSAGE_CREATE d = %s (%v)", m.D, err)
		}
	}
	// sizes in order: Hello (taken), READY, GUILD_CREATE, ACK, the two MESSAGE_CREATEs.
	for range 3 {
		<-c.sizes
	}
	sizes = append(sizes, <-c.sizes, <-c.sizes)
	if first < 2 || sizes[1]*2 > sizes[0] {
		t.Fatalf("compressed sizes: Hello %d, the message %d then %d: the repeat should reuse the context", first, sizes[0], sizes[1])
	}
}

// TestGatewayWithoutZlibStream: without the query parameter, frames stay text (discordgo's
// default), so the transport compression is opt-in.
func TestGatewayWithoutZlibStream(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	ws, _, err := w.fake.Dialer().Dial(w.fake.GatewayURL()+"?v=10&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	kind, msg, err := ws.ReadMessage()
	if err != nil || kind != websocket.TextMessage || !bytes.Contains(msg, []byte(`"op":10`)) {
		t.Fatalf("Hello: kind %d, %q, %v", kind, msg, err)
	}
}

// TestWatchNotifiesChanges: a subscriber is woken by user actions and by REST writes that
// dispatch nothing (an ephemeral interaction response); its channel closes with its context
// and with the fake. Interactions lists the channel's interactions with their responses.
func TestWatchNotifiesChanges(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	changed := w.fake.Watch(ctx)
	if _, err := w.fake.PostMessage(w.text, w.alice, "hello"); err != nil {
		t.Fatal(err)
	}
	recv(t, changed, "a change after a post")
	s := w.rest()
	if _, err := s.ApplicationCommandBulkOverwrite(w.fake.AppID(), w.guild, []*discordgo.ApplicationCommand{{Name: "ping", Description: "Ping."}}); err != nil {
		t.Fatal(err)
	}
	id, err := w.fake.RunCommand(w.text, w.alice, "ping")
	if err != nil {
		t.Fatal(err)
	}
	recv(t, changed, "a change after a command")
	// An ephemeral response dispatches nothing: the REST write itself must wake a watcher
	// that subscribed after the command.
	later := w.fake.Watch(ctx)
	in := w.fake.Interaction(id)
	err = s.InteractionRespond(&discordgo.Interaction{ID: id, AppID: w.fake.AppID(), Token: in.Token}, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource, Data: &discordgo.InteractionResponseData{Content: "pong", Flags: discordgo.MessageFlagsEphemeral}})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, later, "a change after an ephemeral response")
	if got := w.fake.Interactions(w.text); len(got) != 1 || got[0].ID != id || got[0].Original == nil || got[0].Original.Content != "pong" {
		t.Fatalf("Interactions = %+v", got)
	}
	cancel()
	for range changed {
	}
	other := w.fake.Watch(context.Background())
	w.fake.Close()
	for range other {
	}
}

// TestWatchNotifiesWhatTheFakeRecords: a watcher is woken by what the fake only records, so
// a test waiting on Requests or GatewayStats needs no timer — a refused read (its 404
// recorded, nothing changed), a gateway connection opened and closed, a payload the client
// sent (a heartbeat) — and when it is woken the record is already there.
func TestWatchNotifiesWhatTheFakeRecords(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := w.fake.Watch(ctx)
	if _, err := w.rest().Channel("999999999999999999"); err == nil {
		t.Fatal("a channel that does not exist was read")
	}
	recv(t, ch, "a wake-up after a refused read")
	reqs := w.fake.RequestsTo("GET /channels/{channel}")
	if len(reqs) != 1 || reqs[0].Status != http.StatusNotFound {
		t.Fatalf("recorded %+v, want the 404 once woken", reqs)
	}

	opened := w.fake.Watch(ctx)
	ws, _, err := w.fake.Dialer().Dial(w.fake.GatewayURL()+"?v=10&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	recv(t, opened, "a wake-up after a connection opened")
	if n := w.fake.GatewayStats().Connections; n != 1 {
		t.Fatalf("%d connections once woken, want 1", n)
	}
	if _, _, err := ws.ReadMessage(); err != nil { // Hello
		t.Fatal(err)
	}
	beat := w.fake.Watch(ctx)
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"op":1,"d":null}`)); err != nil {
		t.Fatal(err)
	}
	recv(t, beat, "a wake-up after a heartbeat")
	if n := w.fake.GatewayStats().Heartbeats; n != 1 {
		t.Fatalf("%d heartbeats once woken, want 1", n)
	}
	closed := w.fake.Watch(ctx)
	ws.Close()
	recv(t, closed, "a wake-up after the connection closed")
	if n := w.fake.GatewayStats().Connections; n != 0 {
		t.Fatalf("%d connections once woken, want 0", n)
	}
}
