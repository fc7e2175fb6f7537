package fakediscord

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Gateway close codes the fake sends.
const (
	CloseUnknownError         = 4000
	CloseUnknownOpcode        = 4001
	CloseDecodeError          = 4002
	CloseNotAuthenticated     = 4003
	CloseAuthenticationFailed = 4004
	CloseAlreadyAuthenticated = 4005
	CloseInvalidSeq           = 4007
	CloseRateLimited          = 4008
	CloseSessionTimedOut      = 4009
	CloseInvalidShard         = 4010
	CloseShardingRequired     = 4011
	CloseInvalidAPIVersion    = 4012
	CloseInvalidIntents       = 4013
	CloseDisallowedIntents    = 4014
)

// closeReasons are Discord's close-frame texts.
var closeReasons = map[int]string{
	CloseUnknownError: "Unknown error.", CloseUnknownOpcode: "Unknown opcode.", CloseDecodeError: "Decode error.",
	CloseNotAuthenticated: "Not authenticated.", CloseAuthenticationFailed: "Authentication failed.",
	CloseAlreadyAuthenticated: "Already authenticated.", CloseInvalidSeq: "Invalid seq.", CloseRateLimited: "Rate limited.",
	CloseSessionTimedOut: "Session timed out.", CloseInvalidShard: "Invalid shard.", CloseShardingRequired: "Sharding required.",
	CloseInvalidAPIVersion: "Invalid API version.", CloseInvalidIntents: "Invalid intent(s).", CloseDisallowedIntents: "Disallowed intent(s).",
}

// resumable says whether a session survives a close with this code (Discord's table).
func resumable(code int) bool {
	switch code {
	case CloseAuthenticationFailed, CloseInvalidSeq, CloseSessionTimedOut, CloseInvalidShard, CloseShardingRequired,
		CloseInvalidAPIVersion, CloseInvalidIntents, CloseDisallowedIntents:
		return false
	}
	return true
}

const replayLimit = 4096

type gatewayState struct {
	sessions   map[string]*gwSession
	conns      []*gwConn
	stopAck    bool
	identifies int
	intents    []discordgo.Intent // each Identify's intents, in order
	resumes    int
	heartbeats int
	flap       int // close code sent right after each READY and RESUMED (0: none)
	starts     startLimit
}

// startLimit is the session start limit gateway/bot reports: each
// Identify spends one, and the window resets (on the fake's clock)
// ResetAfter after it began.
type startLimit struct {
	total, remaining int
	window           time.Duration
	resetAt          time.Time
}

// DefaultSessionStarts is the session start limit a fake starts with
// (Discord's usual): 1,000 a day.
const DefaultSessionStarts = 1000

type gwSession struct {
	id       string
	intents  discordgo.Intent
	shard    [2]int
	compress bool
	seq      int64
	replay   []replayed // the last frames sent, for Resume (bounded)
	conn     *gwConn    // nil while disconnected
}

type replayed struct {
	seq   int64
	frame []byte
}

type gwConn struct {
	ws         *websocket.Conn
	wmu        sync.Mutex
	zs         *zlibStream // transport compression (compress=zlib-stream), nil without
	sess       *gwSession
	identified bool
	closed     bool
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// gwFrame is a gateway payload as the fake reads it from a client.
type gwFrame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  string          `json:"t"`
}

type identifyData struct {
	Token      string           `json:"token"`
	Intents    discordgo.Intent `json:"intents"`
	Shard      *[2]int          `json:"shard"`
	Compress   bool             `json:"compress"`
	Properties map[string]any   `json:"properties"`
}

type resumeData struct {
	Token     string `json:"token"`
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
}

// decodeClientFrame decodes one client payload and its op's data, as the gateway does; a decode
// error closes the connection with 4002. It is what FuzzDecodeClientPayload drives.
func decodeClientFrame(b []byte) (gwFrame, any, error) {
	var f gwFrame
	if err := json.Unmarshal(b, &f); err != nil {
		return f, nil, err
	}
	switch f.Op {
	case 1:
		var seq *int64
		if len(f.D) > 0 {
			if err := json.Unmarshal(f.D, &seq); err != nil {
				return f, nil, err
			}
		}
		return f, seq, nil
	case 2:
		var id identifyData
		if err := json.Unmarshal(f.D, &id); err != nil {
			return f, nil, err
		}
		return f, &id, nil
	case 6:
		var r resumeData
		if err := json.Unmarshal(f.D, &r); err != nil {
			return f, nil, err
		}
		return f, &r, nil
	case 3, 4, 8:
		var m map[string]any
		if err := json.Unmarshal(f.D, &m); err != nil {
			return f, nil, err
		}
		return f, m, nil
	}
	return f, nil, nil
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	if v := r.URL.Query().Get("v"); v != "" && v != "9" && v != "10" {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err == nil {
			c := &gwConn{ws: ws}
			c.closeWith(CloseInvalidAPIVersion)
		}
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gwConn{ws: ws}
	if r.URL.Query().Get("compress") == "zlib-stream" {
		c.zs = newZlibStream()
	}
	s.mu.Lock()
	s.gw.conns = append(s.gw.conns, c)
	s.notify()
	hello, _ := json.Marshal(map[string]any{"op": 10, "d": map[string]int64{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()}})
	c.write(hello, false)
	s.mu.Unlock()
	defer s.dropConn(c)
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return
		}
		f, d, err := decodeClientFrame(msg)
		if err != nil {
			c.closeWith(CloseDecodeError)
			return
		}
		if !s.onClientFrame(c, f, d) {
			return
		}
	}
}

// onClientFrame handles one client payload; false ends the connection.
func (s *Server) onClientFrame(c *gwConn, f gwFrame, d any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify() // the counters (GatewayStats), a session identified or resumed
	switch f.Op {
	case 1: // heartbeat
		s.gw.heartbeats++
		if !s.gw.stopAck {
			c.write([]byte(`{"op":11}`), false)
		}
		return true
	case 2:
		if c.identified {
			c.closeWith(CloseAlreadyAuthenticated)
			return false
		}
		return s.identify(c, d.(*identifyData))
	case 6:
		if c.identified {
			c.closeWith(CloseAlreadyAuthenticated)
			return false
		}
		return s.resume(c, d.(*resumeData))
	case 3, 4:
		if !c.identified {
			c.closeWith(CloseNotAuthenticated)
			return false
		}
		return true
	case 8:
		if !c.identified {
			c.closeWith(CloseNotAuthenticated)
			return false
		}
		s.memberChunk(c, d.(map[string]any))
		return true
	}
	c.closeWith(CloseUnknownOpcode)
	return false
}

func (s *Server) tokenOK(t string) bool {
	return strings.TrimPrefix(t, "Bot ") == s.opts.Token
}

const privileged = discordgo.IntentGuildMembers | discordgo.IntentGuildPresences | discordgo.IntentMessageContent

// identify answers an Identify: READY, then one GUILD_CREATE per guild of the shard. Each
// spends a session start; with none left Discord refuses the token (4004, as after the reset
// it does past the limit). s.mu held.
func (s *Server) identify(c *gwConn, id *identifyData) bool {
	s.gw.identifies++
	s.gw.intents = append(s.gw.intents, id.Intents)
	st := s.sessionStarts()
	if st.remaining == 0 {
		c.closeWith(CloseAuthenticationFailed)
		return false
	}
	st.remaining--
	if !s.tokenOK(id.Token) {
		c.closeWith(CloseAuthenticationFailed)
		return false
	}
	if id.Intents < 0 || id.Intents >= 1<<26 {
		c.closeWith(CloseInvalidIntents)
		return false
	}
	if id.Intents&privileged&^*s.opts.AllowedIntents != 0 {
		c.closeWith(CloseDisallowedIntents)
		return false
	}
	shard := [2]int{0, 1}
	if id.Shard != nil {
		shard = *id.Shard
		if shard[1] < 1 || shard[0] < 0 || shard[0] >= shard[1] {
			c.closeWith(CloseInvalidShard)
			return false
		}
	}
	sess := &gwSession{id: strconv.FormatUint(s.lastID, 16) + "fake" + strconv.Itoa(s.gw.identifies), intents: id.Intents, shard: shard, compress: id.Compress}
	s.newID()
	s.gw.sessions[sess.id] = sess
	c.sess, sess.conn, c.identified = sess, c, true
	guilds := []map[string]any{}
	for _, gid := range s.gorder {
		if sess.covers(gid) {
			guilds = append(guilds, map[string]any{"id": gid, "unavailable": true})
		}
	}
	s.send(sess, "READY", map[string]any{
		"v": 10, "user": s.bot, "guilds": guilds, "session_id": sess.id,
		"resume_gateway_url": s.GatewayURL(), "shard": shard,
		"application": map[string]any{"id": s.opts.AppID, "flags": s.app.Flags},
	})
	for _, gid := range s.gorder {
		if sess.covers(gid) {
			s.send(sess, "GUILD_CREATE", s.guildCreate(s.guilds[gid], sess.intents))
		}
	}
	return s.flapAfter(c)
}

// flapAfter closes c with the flap code, if one is set, right after its READY or RESUMED
// (false: the connection ends). s.mu held.
func (s *Server) flapAfter(c *gwConn) bool {
	if s.gw.flap == 0 {
		return true
	}
	if !resumable(s.gw.flap) && c.sess != nil {
		delete(s.gw.sessions, c.sess.id)
	}
	c.closeWith(s.gw.flap)
	return false
}

// sessionStarts is the session start limit now, its window renewed once it ran out. s.mu held.
func (s *Server) sessionStarts() *startLimit {
	st := &s.gw.starts
	if st.window == 0 {
		st.total, st.remaining, st.window = DefaultSessionStarts, DefaultSessionStarts, 24*time.Hour
	}
	if now := s.opts.Now(); st.resetAt.IsZero() || !now.Before(st.resetAt) {
		st.remaining, st.resetAt = st.total, now.Add(st.window)
	}
	return st
}

// SetSessionStartLimit sets the session start limit gateway/bot reports: remaining of total
// left, the window resetting after resetAfter (on the fake's clock, Options.Now) and then every
// window (24 h if resetAfter is not positive). Each Identify spends one; with none left an
// Identify is closed with 4004.
func (s *Server) SetSessionStartLimit(total, remaining int, resetAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	window := resetAfter
	if window <= 0 {
		window = 24 * time.Hour
	}
	s.gw.starts = startLimit{total: total, remaining: min(max(remaining, 0), total), window: window, resetAt: s.opts.Now().Add(window)}
}

// SessionStarts returns the session start limit as gateway/bot would report it now.
func (s *Server) SessionStarts() (total, remaining int, resetAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessionStarts()
	return st.total, st.remaining, st.resetAt.Sub(s.opts.Now())
}

// FlapGateway makes the gateway close every connection with code right after its READY or
// RESUMED (a flapping gateway); with a code that is not resumable the session is forgotten too,
// so the next Resume gets Invalid Session. 0 stops it.
func (s *Server) FlapGateway(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.flap = code
}

// resume answers a Resume: the missed frames, then RESUMED; or Invalid Session (op 9, d false).
func (s *Server) resume(c *gwConn, r *resumeData) bool {
	s.gw.resumes++
	sess := s.gw.sessions[r.SessionID]
	if !s.tokenOK(r.Token) {
		c.closeWith(CloseAuthenticationFailed)
		return false
	}
	if sess == nil || r.Seq > sess.seq {
		c.write([]byte(`{"op":9,"d":false}`), false)
		return true
	}
	if sess.conn != nil && sess.conn != c {
		sess.conn.kill()
	}
	c.sess, sess.conn, c.identified = sess, c, true
	if r.Seq < sess.seq && (len(sess.replay) == 0 || sess.replay[0].seq > r.Seq+1) {
		c.write([]byte(`{"op":9,"d":false}`), false) // the missed frames are gone
		delete(s.gw.sessions, sess.id)
		return true
	}
	for _, fr := range sess.replay {
		if fr.seq > r.Seq {
			c.write(fr.frame, s.compressed(sess, fr.frame))
		}
	}
	s.send(sess, "RESUMED", map[string]any{})
	return s.flapAfter(c)
}

// covers says whether guildID belongs to the session's shard: (guild_id >> 22) % num_shards.
func (g *gwSession) covers(guildID string) bool {
	if g.shard[1] <= 1 {
		return true
	}
	n, _ := strconv.ParseUint(guildID, 10, 64)
	return int((n>>22)%uint64(g.shard[1])) == g.shard[0]
}

// guildCreate is a GUILD_CREATE payload: members only with the members intent (else just the
// bot), as Discord sends it.
func (s *Server) guildCreate(g *guild, intents discordgo.Intent) *discordgo.Guild {
	out := s.guildObject(g, true)
	if intents&discordgo.IntentGuildMembers == 0 {
		out.Members = []*discordgo.Member{g.members[s.opts.BotID]}
	}
	out.Presences = []*discordgo.Presence{}
	out.VoiceStates = []*discordgo.VoiceState{}
	return out
}

func (s *Server) memberChunk(c *gwConn, d map[string]any) {
	gid, _ := d["guild_id"].(string)
	g := s.guilds[gid]
	if g == nil || c.sess.intents&discordgo.IntentGuildMembers == 0 {
		return
	}
	members := []*discordgo.Member{}
	for _, id := range g.morder {
		members = append(members, g.members[id])
	}
	s.send(c.sess, "GUILD_MEMBERS_CHUNK", map[string]any{"guild_id": gid, "members": members, "chunk_index": 0, "chunk_count": 1, "nonce": d["nonce"]})
}

// eventIntent is the intent a dispatch needs (0: always sent). dm marks a message event outside
// a guild.
func eventIntent(event string, dm bool) discordgo.Intent {
	switch event {
	case "GUILD_CREATE", "GUILD_DELETE", "GUILD_UPDATE", "CHANNEL_CREATE", "CHANNEL_UPDATE", "CHANNEL_DELETE",
		"THREAD_CREATE", "THREAD_UPDATE", "THREAD_DELETE", "GUILD_ROLE_CREATE", "GUILD_ROLE_UPDATE", "GUILD_ROLE_DELETE", "CHANNEL_PINS_UPDATE":
		return discordgo.IntentGuilds
	case "GUILD_MEMBER_ADD", "GUILD_MEMBER_UPDATE", "GUILD_MEMBER_REMOVE":
		return discordgo.IntentGuildMembers
	case "GUILD_BAN_ADD", "GUILD_BAN_REMOVE", "GUILD_AUDIT_LOG_ENTRY_CREATE":
		return discordgo.IntentGuildModeration
	case "INVITE_CREATE", "INVITE_DELETE":
		return discordgo.IntentGuildInvites
	case "MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK":
		if dm {
			return discordgo.IntentDirectMessages
		}
		return discordgo.IntentGuildMessages
	case "MESSAGE_REACTION_ADD", "MESSAGE_REACTION_REMOVE":
		if dm {
			return discordgo.IntentDirectMessageReactions
		}
		return discordgo.IntentGuildMessageReactions
	}
	return 0
}

// live are the sessions events are sent to: connected, or disconnected but resumable (their
// frames wait in the replay buffer).
func (s *Server) live() []*gwSession {
	out := make([]*gwSession, 0, len(s.gw.sessions))
	for _, sess := range s.gw.sessions {
		out = append(out, sess)
	}
	return out
}

// dispatchGuild sends an event to every session covering guildID whose intents include the
// event's. A nil GUILD_CREATE payload is built per session. s.mu held.
func (s *Server) dispatchGuild(guildID, event string, data any) {
	defer s.notify()
	need := eventIntent(event, guildID == "")
	var raw []byte
	for _, sess := range s.live() {
		if (guildID != "" && !sess.covers(guildID)) || (need != 0 && sess.intents&need == 0) {
			continue
		}
		if event == "GUILD_CREATE" && data == nil {
			s.send(sess, event, s.guildCreate(s.guilds[guildID], sess.intents))
			continue
		}
		if raw == nil {
			raw, _ = json.Marshal(data)
		}
		s.sendRaw(sess, event, raw)
	}
}

// dispatchMessage sends a message event; sessions without the message-content intent get the
// content, embeds, attachments and components stripped unless the message is the bot's, a DM,
// or mentions the bot (Discord's rule).
func (s *Server) dispatchMessage(event string, m *discordgo.Message) {
	defer s.notify()
	need := eventIntent(event, m.GuildID == "")
	var full, stripped []byte
	exempt := m.GuildID == "" || (m.Author != nil && m.Author.ID == s.opts.BotID)
	for _, u := range m.Mentions {
		exempt = exempt || u.ID == s.opts.BotID
	}
	for _, sess := range s.live() {
		if (m.GuildID != "" && !sess.covers(m.GuildID)) || sess.intents&need == 0 {
			continue
		}
		if exempt || sess.intents&discordgo.IntentMessageContent != 0 {
			if full == nil {
				full, _ = json.Marshal(wire(m))
			}
			s.sendRaw(sess, event, full)
			continue
		}
		if stripped == nil {
			c := *m
			c.Content, c.Embeds, c.Attachments, c.Components, c.Poll = "", []*discordgo.MessageEmbed{}, []*discordgo.MessageAttachment{}, []discordgo.MessageComponent{}, nil
			stripped, _ = json.Marshal(wire(&c))
		}
		s.sendRaw(sess, event, stripped)
	}
}

func (s *Server) send(sess *gwSession, event string, data any) {
	raw, _ := json.Marshal(data)
	s.sendRaw(sess, event, raw)
}

// sendRaw frames an op 0 dispatch with the session's next sequence, keeps it for Resume and
// writes it if the session is connected. s.mu held.
func (s *Server) sendRaw(sess *gwSession, event string, raw []byte) {
	sess.seq++
	fr := make([]byte, 0, len(raw)+len(event)+40)
	fr = append(fr, `{"op":0,"s":`...)
	fr = strconv.AppendInt(fr, sess.seq, 10)
	fr = append(fr, `,"t":"`...)
	fr = append(fr, event...)
	fr = append(fr, `","d":`...)
	fr = append(fr, raw...)
	fr = append(fr, '}')
	if event != "READY" && event != "RESUMED" {
		sess.replay = append(sess.replay, replayed{seq: sess.seq, frame: fr})
		if len(sess.replay) > replayLimit {
			sess.replay = sess.replay[len(sess.replay)-replayLimit:]
		}
	}
	if sess.conn != nil {
		sess.conn.write(fr, s.compressed(sess, fr))
	}
}

// compressed reports whether a dispatch frame goes zlib-compressed on its own: the session asked
// for payload compression and the frame is at least Options.CompressMin bytes.
func (s *Server) compressed(sess *gwSession, frame []byte) bool {
	return sess.compress && len(frame) >= s.opts.CompressMin
}

// write sends one frame: on a zlib-stream connection through its one compression context (the
// per-payload compress is then moot), else zlib-compressed on its own in a binary frame when
// Identify asked for it, else as text.
func (c *gwConn) write(b []byte, compress bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if c.zs != nil {
		_ = c.ws.WriteMessage(websocket.BinaryMessage, c.zs.frame(b))
		return
	}
	if compress {
		var buf bytes.Buffer
		z := zlib.NewWriter(&buf)
		_, _ = z.Write(b)
		_ = z.Close()
		_ = c.ws.WriteMessage(websocket.BinaryMessage, buf.Bytes())
		return
	}
	_ = c.ws.WriteMessage(websocket.TextMessage, b)
}

// closeWith sends a close frame with code and Discord's reason, then drops the connection.
func (c *gwConn) closeWith(code int) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, closeReasons[code]), time.Now().Add(5*time.Second))
	_ = c.ws.Close()
}

// kill drops the TCP connection without a close frame (a network failure: 1006 at the client).
func (c *gwConn) kill() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.closed = true
	_ = c.ws.Close()
}

func (s *Server) dropConn(c *gwConn) {
	c.kill()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	for i, x := range s.gw.conns {
		if x == c {
			s.gw.conns = append(s.gw.conns[:i], s.gw.conns[i+1:]...)
			break
		}
	}
	if c.sess != nil && c.sess.conn == c {
		c.sess.conn = nil
	}
}

func (s *Server) allConns() []*gwConn { return append([]*gwConn(nil), s.gw.conns...) }

// GatewayStats counts what the gateway has seen.
type GatewayStats struct {
	Connections, Identifies, Resumes, Heartbeats int
}

// GatewayStats returns the gateway's counters (Connections: open now).
func (s *Server) GatewayStats() GatewayStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return GatewayStats{Connections: len(s.gw.conns), Identifies: s.gw.identifies, Resumes: s.gw.resumes, Heartbeats: s.gw.heartbeats}
}

// IdentifyIntents returns the intents of every Identify received, in
// order (refused ones too).
func (s *Server) IdentifyIntents() []discordgo.Intent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gw.intents)
}

// StopHeartbeatACKs makes the gateway stop (true) or resume (false) answering heartbeats, so a
// client's zombie-connection detection can be tested.
func (s *Server) StopHeartbeatACKs(stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.stopAck = stop
}

// CloseGateway closes every gateway connection with code (4000-4014, or a websocket code) and
// Discord's reason. After a code that is not resumable the sessions are forgotten, so a Resume
// gets Invalid Session.
func (s *Server) CloseGateway(code int) {
	s.mu.Lock()
	conns := s.allConns()
	if !resumable(code) {
		for id := range s.gw.sessions {
			delete(s.gw.sessions, id)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.closeWith(code)
	}
}

// DropConnections cuts every gateway connection without a close frame; sessions stay
// resumable and keep collecting events for the replay.
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := s.allConns()
	s.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
}

// RequestReconnect sends op 7 (Reconnect) on every connection.
func (s *Server) RequestReconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.gw.conns {
		c.write([]byte(`{"op":7,"d":null}`), false)
	}
}

// InvalidateSessions sends op 9 (Invalid Session) with d=resumable on every connection; without
// resumable the sessions are forgotten and the client must identify again.
func (s *Server) InvalidateSessions(resumable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.gw.conns {
		c.write([]byte(`{"op":9,"d":`+strconv.FormatBool(resumable)+`}`), false)
		c.identified = false
		if !resumable && c.sess != nil {
			delete(s.gw.sessions, c.sess.id)
			c.sess = nil
		}
	}
}

// SetToken changes the accepted bot token (a token reset in the developer portal): later REST
// calls and identifies with the old one fail (401, 4004).
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Token = token
}

// SetAllowedIntents changes the privileged intents enabled for the application.
func (s *Server) SetAllowedIntents(i discordgo.Intent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.AllowedIntents = &i
	s.app.Flags = appFlags(i)
}

// Dispatch sends an arbitrary event to every session covering guildID ("" for all), for events
// the model does not produce itself. data is marshalled as the event's d.
func (s *Server) Dispatch(guildID, event string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("fakediscord: marshal dispatch: %w", err)
	}
	return s.DispatchRaw(guildID, event, raw)
}

// DispatchRaw is Dispatch for an already encoded payload, sent as given, unchecked: benchmarks
// use it so that the fake's own encoding is not measured, and a test may send a malformed
// payload to see how the client copes.
func (s *Server) DispatchRaw(guildID, event string, raw json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	need := eventIntent(event, guildID == "")
	for _, sess := range s.live() {
		if (guildID == "" || sess.covers(guildID)) && (need == 0 || sess.intents&need != 0) {
			s.sendRaw(sess, event, raw)
		}
	}
	return nil
}
