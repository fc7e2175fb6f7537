package discord

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"

	"github.com/bwmarrin/discordgo"
)

// Gateway frame filter. discordgo dispatches each gateway event in its read
// goroutine and dereferences parts of some payloads with no nil checks and
// no recover: one malformed dispatch (GUILD_CREATE {}, a null member user,
// a null role, ...) panics there and kills the process. Discord does not
// send such frames, but a proxy, a bug or an attacker on the path can.
// discordgo's *websocket.Conn cannot be wrapped, so Kimi filters below it:
// the net.Conn the dialer hands gorilla/websocket is wrapped (frameConn),
// each server message is decoded as discordgo will decode it (the same
// types, the same encoding/json, zlib for Identify's per-payload
// compression), and a dispatch whose payload discordgo would dereference
// through nil is replaced by a harmless dispatch carrying the same sequence
// number, so discordgo's sequence tracking and resume still work. The
// same filter takes the hot dispatches itself (hot.go).

// droppedFrameType is the event type a malformed dispatch is rewritten to:
// known to discordgo (no "unknown event" warning), ignored by its state and
// by Kimi's handlers.
const droppedFrameType = "PRESENCES_REPLACE"

// frameCheck returns why discordgo cannot handle payload d ("" it can).
type frameCheck func(d json.RawMessage) string

// frameChecks are the dispatch types whose payloads discordgo dereferences
// unchecked, each checked on discordgo's own type for exactly the pointers
// discordgo's handling (setGuildIds, State.GuildAdd, createMemberMap,
// RoleAdd, onVoiceStateUpdate, State.onReady) follows.
var frameChecks = map[string]frameCheck{
	"READY":                decoded(checkReady),
	"GUILD_CREATE":         decoded(func(ev *discordgo.GuildCreate) string { return checkGuild(ev.Guild) }),
	"GUILD_UPDATE":         decoded(func(ev *discordgo.GuildUpdate) string { return checkGuild(ev.Guild) }),
	"GUILD_DELETE":         decoded(func(ev *discordgo.GuildDelete) string { return present(ev.Guild, "no guild object") }),
	"GUILD_ROLE_CREATE":    decoded(func(ev *discordgo.GuildRoleCreate) string { return checkGuildRole(ev.GuildRole) }),
	"GUILD_ROLE_UPDATE":    decoded(func(ev *discordgo.GuildRoleUpdate) string { return checkGuildRole(ev.GuildRole) }),
	"GUILD_MEMBER_ADD":     decoded(func(ev *discordgo.GuildMemberAdd) string { return checkMember(ev.Member) }),
	"GUILD_MEMBER_REMOVE":  decoded(func(ev *discordgo.GuildMemberRemove) string { return checkMember(ev.Member) }),
	"CHANNEL_CREATE":       decoded(func(ev *discordgo.ChannelCreate) string { return present(ev.Channel, "no channel object") }),
	"CHANNEL_UPDATE":       decoded(func(ev *discordgo.ChannelUpdate) string { return present(ev.Channel, "no channel object") }),
	"CHANNEL_DELETE":       decoded(func(ev *discordgo.ChannelDelete) string { return present(ev.Channel, "no channel object") }),
	"THREAD_CREATE":        decoded(func(ev *discordgo.ThreadCreate) string { return present(ev.Channel, "no channel object") }),
	"THREAD_UPDATE":        decoded(func(ev *discordgo.ThreadUpdate) string { return present(ev.Channel, "no channel object") }),
	"THREAD_DELETE":        decoded(func(ev *discordgo.ThreadDelete) string { return present(ev.Channel, "no channel object") }),
	"THREAD_MEMBER_UPDATE": decoded(func(ev *discordgo.ThreadMemberUpdate) string { return present(ev.ThreadMember, "no thread member") }),
	"VOICE_STATE_UPDATE":   decoded(func(ev *discordgo.VoiceStateUpdate) string { return present(ev.VoiceState, "no voice state") }),
}

// decoded is the check of a dispatch decoded into discordgo's type T, as
// discordgo decodes it: a partial decode is dispatched too, so the
// decoding error is not a verdict.
func decoded[T any](check func(*T) string) frameCheck {
	return func(d json.RawMessage) string {
		var ev T
		_ = json.Unmarshal(d, &ev)
		return check(&ev)
	}
}

// present refuses a nil object discordgo dereferences, with reason.
func present[T any](p *T, reason string) string {
	if p == nil {
		return reason
	}
	return ""
}

// checkMember refuses a member dispatch without its member or its user
// (the state reads t.Member.GuildID and the member's user id).
func checkMember(m *discordgo.Member) string {
	if m == nil || m.User == nil {
		return "member without user"
	}
	return ""
}

func checkGuild(g *discordgo.Guild) string {
	switch {
	case g == nil:
		return "no guild object"
	case g.ID == "":
		return "guild without id"
	}
	if why := checkGuildLists(g); why != "" {
		return why
	}
	for _, c := range g.Threads {
		if c == nil {
			return "null thread"
		}
	}
	for _, r := range g.Roles {
		if r == nil {
			return "null role"
		}
	}
	return ""
}

// checkGuildLists refuses a guild's null channel, member without user or
// null voice state: what both GUILD_CREATE and READY's guilds dereference.
func checkGuildLists(g *discordgo.Guild) string {
	for _, c := range g.Channels {
		if c == nil {
			return "null channel"
		}
	}
	for _, m := range g.Members {
		if m == nil || m.User == nil {
			return "member without user"
		}
	}
	for _, v := range g.VoiceStates {
		if v == nil {
			return "null voice state"
		}
	}
	return ""
}

// checkReady refuses a READY whose guilds or private channels discordgo
// dereferences through nil: setGuildIds walks each guild's channels,
// members and voice states, State.onReady each guild's id, members' users
// and channels, and each private channel. A guild without id, "user":null
// and "guilds":null pass: discordgo v0.29.0 handles them.
func checkReady(r *discordgo.Ready) string {
	for _, g := range r.Guilds {
		if g == nil {
			return "null guild"
		}
		if why := checkGuildLists(g); why != "" {
			return why
		}
	}
	for _, c := range r.PrivateChannels {
		if c == nil {
			return "null private channel"
		}
	}
	return ""
}

func checkGuildRole(r *discordgo.GuildRole) string {
	if r == nil || r.Role == nil {
		return "no role object"
	}
	return ""
}

// frameVerdict is what the filter found in one server message.
type frameVerdict struct {
	event  string // the dispatch's type
	seq    int64
	reason string // "" the message passes as it is
}

// inspectMessage decodes one websocket message as discordgo's onEvent does
// and checks a dispatch against frameChecks. A message discordgo cannot
// decode passes: discordgo drops it itself.
func inspectMessage(binaryMsg bool, payload []byte) frameVerdict {
	msg, ok := inflate(binaryMsg, payload)
	if !ok {
		return frameVerdict{}
	}
	return inspectPayload(msg)
}

// inflate is a message's JSON as discordgo's onEvent reads it: a binary
// message zlib-inflated (as far as it inflates, as discordgo decodes it);
// false for one that is no zlib stream (discordgo drops it).
func inflate(binaryMsg bool, payload []byte) ([]byte, bool) {
	if !binaryMsg {
		return payload, true
	}
	z, err := zlib.NewReader(bytes.NewReader(payload))
	if err != nil {
		return nil, false
	}
	msg, _ := io.ReadAll(z)
	_ = z.Close()
	return msg, true
}

// inspectPayload is inspectMessage of an inflated message.
func inspectPayload(msg []byte) frameVerdict {
	if !mayBeChecked(msg) {
		return frameVerdict{}
	}
	var e *discordgo.Event
	if err := json.NewDecoder(bytes.NewReader(msg)).Decode(&e); err != nil || e == nil || e.Operation != 0 {
		return frameVerdict{}
	}
	check, ok := frameChecks[e.Type]
	if !ok {
		return frameVerdict{}
	}
	return frameVerdict{event: e.Type, seq: e.Sequence, reason: check(e.RawData)}
}

// checkedNames are frameChecks' types as bytes.
var checkedNames = func() [][]byte {
	var out [][]byte
	for t := range frameChecks {
		out = append(out, []byte(t))
	}
	return out
}()

// mayBeChecked reports whether msg can be a dispatch of a checked type, so
// that the frames of other types (almost all) skip the decoding: a JSON
// string spells a letter or '_' only literally or as a \u escape, so such
// a dispatch holds its type's name or a \u.
func mayBeChecked(msg []byte) bool {
	if bytes.Contains(msg, []byte(`\u`)) {
		return true
	}
	for _, t := range checkedNames {
		if bytes.Contains(msg, t) {
			return true
		}
	}
	return false
}

// droppedFrame is the text frame that replaces a malformed dispatch.
func droppedFrame(seq int64) []byte {
	payload := []byte(`{"op":0,"s":` + strconv.FormatInt(seq, 10) + `,"t":"` + droppedFrameType + `","d":[]}`)
	return wsFrame(wsOpText, payload)
}

// WebSocket opcodes (RFC 6455 §5.2).
const (
	wsOpContinuation = 0x0
	wsOpText         = 0x1
	wsOpBinary       = 0x2
	wsOpClose        = 0x8
)

// wsFrame encodes one unmasked final frame (a server's).
func wsFrame(op byte, payload []byte) []byte {
	hdr := []byte{0x80 | op, 0}
	switch n := len(payload); {
	case n < 126:
		hdr[1] = byte(n)
	case n <= 0xffff:
		hdr[1] = 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] = 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	return append(hdr, payload...)
}

// frameHooks are what a frameConn reports to the bot.
type frameHooks struct {
	// dropped is called for each malformed dispatch replaced.
	dropped func(frameVerdict)
	// invalidated is called for each Invalid Session (op 9) the filter
	// turned into the end of the connection (frames_session.go), with the
	// frame's d: whether the session may be resumed.
	invalidated func(resumable bool)
	// identified is called for each Identify (op 2) written.
	identified func()
	// hot takes the dispatches of hotTypes (hot.go); nil leaves them all
	// to discordgo.
	hot hotSink
}

// frameConn is a client connection whose incoming websocket messages pass
// inspectMessage: the HTTP upgrade response and every frame are handed on
// byte for byte, except a malformed dispatch, which is replaced by
// droppedFrame, and an Invalid Session, which ends the stream
// (errInvalidSession). Writes are handed on untouched and watched for
// Identify (outScan).
type frameConn struct {
	net.Conn
	r        *bufio.Reader
	hooks    frameHooks
	wmu      sync.Mutex
	scan     outScan // the outgoing frames (under wmu)
	out      []byte  // bytes ready for Read
	err      error   // the read error to return once out is empty
	upgrade  bool    // the upgrade response has been passed
	raw      bool    // not a websocket (a refused upgrade): pass everything
	held     []byte  // the raw frames of a fragmented message
	heldMsg  []byte  // its payload so far
	heldBin  bool
	hotBuf   []byte // a hot dispatch's d when json.Unmarshal read the envelope (reused)
	hotTaken bool   // a hot dispatch was taken and no droppedFrame handed on for it yet
	hotSeq   int64  // the last taken one's sequence
}

func newFrameConn(c net.Conn, hooks frameHooks) *frameConn {
	return &frameConn{Conn: c, r: bufio.NewReaderSize(c, 64<<10), hooks: hooks}
}

// Read hands on the next bytes of the (filtered) stream.
func (c *frameConn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		c.out, c.err = c.next()
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// next reads the next unit of the stream: a line of the upgrade response,
// or a frame (a fragmented message's frames are held until its last). The
// hot dispatches the filter took (hot.go) while more of the stream was
// already buffered are handed on as one droppedFrame of the last one's
// sequence, ahead of the next unit it hands on: discordgo then decodes
// one small frame per burst instead of one per dispatch, and has every
// sequence before it reads another byte from the network (the filter goes
// on only while the next frame is wholly buffered: one only partly there
// would wait on the network, and a connection that stalls there is closed
// and resumed with discordgo's sequence).
func (c *frameConn) next() ([]byte, error) {
	for {
		out, err := c.unit()
		if c.hotTaken && (out != nil || err != nil || !c.frameBuffered()) {
			c.hotTaken = false
			out = append(droppedFrame(c.hotSeq), out...)
		}
		if out != nil || err != nil {
			return out, err
		}
	}
}

// frameBuffered reports whether the next frame is wholly in c.r's buffer,
// so that reading it does not wait on the network.
func (c *frameConn) frameBuffered() bool {
	have := c.r.Buffered()
	if have < 2 {
		return false
	}
	h, _ := c.r.Peek(2)
	need, n := 2, uint64(h[1]&0x7f)
	switch n {
	case 126:
		need += 2
	case 127:
		need += 8
	}
	if h[1]&0x80 != 0 {
		need += 4
	}
	if have < need {
		return false
	}
	h, _ = c.r.Peek(need)
	switch n {
	case 126:
		n = uint64(binary.BigEndian.Uint16(h[2:]))
	case 127:
		n = binary.BigEndian.Uint64(h[2:])
	}
	return n <= uint64(have-need)
}

// unit reads one unit of the stream; nil and no error for a fragment held
// or a hot dispatch taken.
func (c *frameConn) unit() ([]byte, error) {
	if c.raw {
		b := make([]byte, 4096)
		n, err := c.r.Read(b)
		return b[:n], err
	}
	if !c.upgrade {
		line, err := c.r.ReadBytes('\n')
		if bytes.HasPrefix(line, []byte("HTTP/")) && !bytes.HasPrefix(line[min(len(line), 9):], []byte("101")) {
			c.raw = true // a refused upgrade: its body is no websocket
		}
		if string(line) == "\r\n" {
			c.upgrade = true
		}
		return line, err
	}
	raw, op, fin, payload, err := c.readFrame()
	if err != nil {
		return raw, err
	}
	switch {
	case op >= wsOpClose || payload == nil: // control frame, or masked (gorilla refuses it)
		return raw, nil
	case op == wsOpText || op == wsOpBinary:
		if c.held != nil { // a new message inside a fragmented one: gorilla refuses it
			raw = append(c.held, raw...)
			c.held, c.heldMsg = nil, nil
			return raw, nil
		}
		if !fin {
			// payload is raw's tail: clipped, so that appending to one
			// never writes into the other's spare capacity.
			c.held, c.heldMsg, c.heldBin = raw, payload[:len(payload):len(payload)], op == wsOpBinary
			return nil, nil
		}
		return c.judge(op == wsOpBinary, payload, raw)
	case op == wsOpContinuation && c.held != nil:
		c.held = append(c.held, raw...)
		c.heldMsg = append(c.heldMsg, payload...)
		if !fin {
			return nil, nil
		}
		out, err := c.judge(c.heldBin, c.heldMsg, c.held)
		c.held, c.heldMsg = nil, nil
		return out, err
	}
	return raw, nil
}

// judge returns raw, or droppedFrame for a malformed dispatch, or nil for
// a dispatch the hot path took (next hands its droppedFrame on), or
// errInvalidSession for an Invalid Session.
func (c *frameConn) judge(binaryMsg bool, payload, raw []byte) ([]byte, error) {
	msg, ok := inflate(binaryMsg, payload)
	if !ok {
		return raw, nil
	}
	if invalid, resumable := invalidSession(msg); invalid {
		if c.hooks.invalidated != nil {
			c.hooks.invalidated(resumable)
		}
		return nil, errInvalidSession
	}
	if c.hooks.hot != nil {
		env, kind, ok := decodeHot(msg, &c.hotBuf)
		if ok && c.hooks.hot(env.T, kind, env.D) {
			c.hotTaken, c.hotSeq = true, env.S
			return nil, nil
		}
	}
	v := inspectPayload(msg)
	if v.reason == "" {
		return raw, nil
	}
	if c.hooks.dropped != nil {
		c.hooks.dropped(v)
	}
	return droppedFrame(v.seq), nil
}

// maxPrealloc is the largest payload readFrame allocates at once from the
// length a frame's header claims.
const maxPrealloc = 1 << 20

// readFrame reads one frame: its raw bytes, opcode, FIN bit and payload
// (nil for a masked frame, which is passed unread by the filter).
func (c *frameConn) readFrame() (raw []byte, op byte, fin bool, payload []byte, err error) {
	raw = make([]byte, 2, 14)
	if n, err := io.ReadFull(c.r, raw); err != nil {
		return raw[:n], 0, false, nil, err
	}
	fin, op = raw[0]&0x80 != 0, raw[0]&0x0f
	masked := raw[1]&0x80 != 0
	n := uint64(raw[1] & 0x7f)
	ext := 0
	switch n {
	case 126:
		ext = 2
	case 127:
		ext = 8
	}
	if masked {
		ext += 4
	}
	if ext > 0 {
		raw = raw[:2+ext]
		if n, err := io.ReadFull(c.r, raw[2:]); err != nil {
			return raw[:2+n], 0, false, nil, err
		}
		switch n {
		case 126:
			n = uint64(binary.BigEndian.Uint16(raw[2:]))
		case 127:
			n = binary.BigEndian.Uint64(raw[2:])
		}
	}
	if n <= maxPrealloc {
		// A length a frame may have: read into a buffer of its size.
		body := make([]byte, len(raw)+int(n))
		copy(body, raw)
		if k, err := io.ReadFull(c.r, body[len(raw):]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return body[:len(raw)+k], 0, false, nil, err
		}
		if masked {
			return body, op, fin, nil, nil
		}
		return body, op, fin, body[len(raw):], nil
	}
	// A larger one is read as it arrives, never allocated by the length the
	// header claims (gorilla's reader does not either).
	var buf bytes.Buffer
	buf.Write(raw)
	if n > math.MaxInt64 {
		return buf.Bytes(), 0, false, nil, fmt.Errorf("discord: read gateway frame: length %d", n)
	}
	start := len(raw)
	_, err = io.CopyN(&buf, c.r, int64(n))
	body := buf.Bytes()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return body, 0, false, nil, err
	}
	if masked {
		return body, op, fin, nil, nil
	}
	return body, op, fin, body[start:], nil
}

// Write hands p on and reports each Identify in it.
func (c *frameConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n, err := c.Conn.Write(p)
	c.scan.feed(p[:n], c.hooks.identified)
	return n, err
}

// frameDropped logs and counts one dispatch the filter replaced.
func (b *Bot) frameDropped(v frameVerdict) {
	b.dropped.Add(1)
	b.log.Warn("malformed gateway event dropped", "event", v.event, "seq", v.seq, "reason", v.reason)
}
