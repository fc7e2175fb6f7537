package discord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/bwmarrin/discordgo"
)

// The decode-once path of the gateway's hot dispatches.
//
// discordgo decodes a MESSAGE_CREATE about four times: its json.Decoder
// reads the envelope (scanning the whole frame, copying d), then
// json.Unmarshal validates d and hands it to MessageCreate.UnmarshalJSON,
// which json.Unmarshals it into the Message, whose UnmarshalJSON validates
// and decodes it once more into an alias beside its components. Every
// field is decoded, the components, reactions, stickers, thread and poll
// Kimi never reads included. That was more than half the CPU of a busy
// guild's ingest.
//
// The frame filter (frames.go) already sees every frame on discordgo's
// read goroutine, before discordgo does, so it takes the dispatches of
// hotTypes there: the envelope is decoded once (d copied into the
// connection's buffer), d once into Kimi's narrow types (gwMessage, the
// fields the ingest and the assistant read), the handlers discordgo would
// have called for the event run with discordgo's types built from them
// (Bot.hotSink: the same functions, in discordgo's registration order),
// and discordgo is handed droppedFrame(seq) in place of the frame, so its
// sequence tracking and resume still count the dispatch. Handlers run
// where they ran before: on the read goroutine, in frame order, the
// frames before fully handled (gorilla asks for the next frame's bytes
// only once discordgo handled the last, SyncEvents).
//
// discordgo's state takes nothing from these events as Kimi configures it
// (State.MaxMessageCount 0, TrackMembers false; reactions have no case in
// State.OnInterface), so guilds, channels and roles stay discordgo's, as
// TestHotPathMatchesDiscordgo checks on a recorded stream. A frame the
// narrow decode refuses (a malformed d, trailing bytes, a d that is no
// object) is left to discordgo, which handles it as before.

// hotKind is how the filter takes a hot dispatch.
type hotKind uint8

const (
	hotMessageCreate hotKind = iota + 1
	hotMessageUpdate
	hotMessageDelete
	hotMemberUpdate
	hotReaction // no handler: nothing to decode
)

// hotTypes are the dispatches the filter decodes itself.
var hotTypes = map[string]hotKind{
	"MESSAGE_CREATE":                hotMessageCreate,
	"MESSAGE_UPDATE":                hotMessageUpdate,
	"MESSAGE_DELETE":                hotMessageDelete,
	"GUILD_MEMBER_UPDATE":           hotMemberUpdate,
	"MESSAGE_REACTION_ADD":          hotReaction,
	"MESSAGE_REACTION_REMOVE":       hotReaction,
	"MESSAGE_REACTION_REMOVE_ALL":   hotReaction,
	"MESSAGE_REACTION_REMOVE_EMOJI": hotReaction,
}

// hotSink takes one hot dispatch: its type, kind and d. False leaves the
// frame to discordgo (d did not decode).
type hotSink func(event string, kind hotKind, d []byte) bool

// hotEnvelope is a dispatch's envelope as discordgo's Event reads it (the
// same keys, the same encoding/json).
type hotEnvelope struct {
	Op int             `json:"op"`
	S  int64           `json:"s"`
	T  string          `json:"t"`
	D  json.RawMessage `json:"d"`
}

// mayBeHot reports whether msg can be a dispatch of a hot type: a JSON
// string spells a letter or '_' literally or as a \u escape.
func mayBeHot(msg []byte) bool {
	return bytes.Contains(msg, []byte(`MESSAGE_`)) || bytes.Contains(msg, []byte(`GUILD_MEMBER_UPDATE`)) ||
		bytes.Contains(msg, []byte(`\u`))
}

// decodeHot returns msg's hot dispatch: its envelope and kind. env.D is
// msg's own bytes (fastEnvelope) or *buf's storage, which json.Unmarshal
// reuses and decodeHot keeps up to maxHotBuf. ok is false for any other
// message, and for one discordgo could read differently (a decoding
// error, trailing bytes: json.Unmarshal refuses what discordgo's Decoder
// would stop short of).
func decodeHot(msg []byte, buf *[]byte) (env hotEnvelope, kind hotKind, ok bool) {
	if fast, fastOK := fastEnvelope(msg); fastOK {
		env = fast
	} else {
		if !mayBeHot(msg) {
			return env, 0, false
		}
		env.D = (*buf)[:0]
		err := json.Unmarshal(msg, &env)
		if cap(env.D) <= maxHotBuf {
			*buf = env.D[:0]
		}
		if err != nil || env.Op != 0 {
			return env, 0, false
		}
	}
	kind, ok = hotTypes[env.T]
	if !ok {
		return env, 0, false
	}
	if d := bytes.TrimSpace(env.D); len(d) == 0 || d[0] != '{' {
		return env, 0, false // null, absent or no object: discordgo's handling
	}
	return env, kind, true
}

// maxHotBuf bounds the d buffer a connection keeps between frames.
const maxHotBuf = 64 << 10

// fastEnvelope reads the envelope of a dispatch as Discord writes it in
// one pass over msg: exactly the keys "op" (0), "s" (a sequence number),
// "t" (an ASCII string without escapes) and "d" (an object, spanned, not
// validated: its narrow decode validates it), each once, in any order, and
// nothing after. Anything else (another key, an escape, a duplicate, a
// number of another form) is not ok, and json.Unmarshal reads it instead:
// when fastEnvelope is ok and d is valid JSON, json.Unmarshal reads the
// same envelope (FuzzFastEnvelope). encoding/json's scanner costs two
// passes over the frame here (validation, then the skip of d).
func fastEnvelope(msg []byte) (env hotEnvelope, ok bool) {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return env, false
	}
	var seen uint8
	for i++; ; {
		i = skipSpace(msg, i)
		if i >= len(msg) || msg[i] != '"' {
			return env, false
		}
		end := plainString(msg, i)
		if end < 0 {
			return env, false
		}
		key := msg[i+1 : end-1]
		if i = skipSpace(msg, end); i >= len(msg) || msg[i] != ':' {
			return env, false
		}
		i = skipSpace(msg, i+1)
		var bit uint8
		switch string(key) {
		case "op":
			bit = 1
			if i >= len(msg) || msg[i] != '0' {
				return env, false
			}
			i++
		case "s":
			bit = 2
			var n int
			if env.S, n = sequence(msg[i:]); n == 0 {
				return env, false
			}
			i += n
		case "t":
			bit = 4
			if i >= len(msg) || msg[i] != '"' {
				return env, false
			}
			if end = plainString(msg, i); end < 0 {
				return env, false
			}
			env.T, i = string(msg[i+1:end-1]), end
		case "d":
			bit = 8
			if end = objectEnd(msg, i); end < 0 {
				return env, false
			}
			env.D, i = msg[i:end], end
		default:
			return env, false
		}
		if seen&bit != 0 {
			return env, false
		}
		seen |= bit
		if i = skipSpace(msg, i); i >= len(msg) {
			return env, false
		}
		if msg[i] == ',' {
			i++
			continue
		}
		if msg[i] != '}' {
			return env, false
		}
		i++
		break
	}
	return env, seen == 15 && skipSpace(msg, i) == len(msg)
}

// skipSpace is the index of the first non-whitespace byte from i.
func skipSpace(msg []byte, i int) int {
	for i < len(msg) && (msg[i] == ' ' || msg[i] == '\n' || msg[i] == '\r' || msg[i] == '\t') {
		i++
	}
	return i
}

// plainString is the index after the string starting at msg[i] (a '"'),
// -1 when it holds an escape, a control character or a byte past ASCII
// (encoding/json would replace an invalid UTF-8 sequence), or does not
// end.
func plainString(msg []byte, i int) int {
	for j := i + 1; j < len(msg); j++ {
		switch c := msg[j]; {
		case c == '"':
			return j + 1
		case c == '\\' || c < 0x20 || c >= 0x80:
			return -1
		}
	}
	return -1
}

// sequence reads a sequence number at the start of b: 0 or digits without
// a leading zero, fitting an int64, followed by a delimiter. n is 0 when
// there is none.
func sequence(b []byte) (v int64, n int) {
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		if n == 18 || (n > 0 && b[0] == '0') {
			return 0, 0 // past 18 digits (safely within int64), or a leading zero
		}
		v = v*10 + int64(b[n]-'0')
		n++
	}
	if n == 0 || (n < len(b) && b[n] != ',' && b[n] != '}' && b[n] != ' ' && b[n] != '\n' && b[n] != '\r' && b[n] != '\t') {
		return 0, 0
	}
	return v, n
}

// objectEnd is the index after the object starting at msg[i] (a '{'),
// found by its brackets outside strings; -1 when it does not end. It does
// not validate the object.
func objectEnd(msg []byte, i int) int {
	if i >= len(msg) || msg[i] != '{' {
		return -1
	}
	depth := 0
	for ; i < len(msg); i++ {
		switch msg[i] {
		case '"':
			// The string's end: the next quote not escaped (after an even
			// run of backslashes).
			for j := i + 1; ; {
				q := bytes.IndexByte(msg[j:], '"')
				if q < 0 {
					return -1
				}
				q += j
				k := q
				for k > i+1 && msg[k-1] == '\\' {
					k--
				}
				if (q-k)%2 == 0 {
					i = q
					break
				}
				j = q + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// gwMessage is what Kimi reads of a gateway message (MESSAGE_CREATE,
// MESSAGE_UPDATE, MESSAGE_DELETE, a referenced message): the fields the
// ingest's snapshots and the assistant's gates read, and no others. The
// nested types are discordgo's that decode plainly (no UnmarshalJSON).
type gwMessage struct {
	ID                string                         `json:"id"`
	ChannelID         string                         `json:"channel_id"`
	GuildID           string                         `json:"guild_id"`
	Content           string                         `json:"content"`
	Timestamp         time.Time                      `json:"timestamp"`
	EditedTimestamp   *time.Time                     `json:"edited_timestamp"`
	Type              discordgo.MessageType          `json:"type"`
	Pinned            bool                           `json:"pinned"`
	Author            *discordgo.User                `json:"author"`
	Member            *discordgo.Member              `json:"member"`
	Mentions          []*discordgo.User              `json:"mentions"`
	Attachments       []*discordgo.MessageAttachment `json:"attachments"`
	Embeds            []*discordgo.MessageEmbed      `json:"embeds"`
	MessageReference  *discordgo.MessageReference    `json:"message_reference"`
	ReferencedMessage *gwMessage                     `json:"referenced_message"`
}

// message is m as discordgo's type, the fields gwMessage carries set.
func (m *gwMessage) message() *discordgo.Message {
	if m == nil {
		return nil
	}
	return &discordgo.Message{
		ID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, Content: m.Content,
		Timestamp: m.Timestamp, EditedTimestamp: m.EditedTimestamp, Type: m.Type, Pinned: m.Pinned,
		Author: m.Author, Member: m.Member, Mentions: m.Mentions, Attachments: m.Attachments, Embeds: m.Embeds,
		MessageReference: m.MessageReference, ReferencedMessage: m.ReferencedMessage.message(),
	}
}

// decodeMessage decodes a message dispatch's d.
func decodeMessage(d []byte) (*discordgo.Message, bool) {
	var m gwMessage
	if err := json.Unmarshal(d, &m); err != nil {
		return nil, false
	}
	return m.message(), true
}

// hotSink is the Bot's taker of s's hot dispatches: it calls what
// discordgo would call for them, in its order (newSession registers the
// ingest's handlers before onAssistantMessage). A panic is the event's
// only: logged, the event dropped.
func (b *Bot) hotSink(s *discordgo.Session) hotSink {
	return func(event string, kind hotKind, d []byte) (taken bool) {
		defer func() {
			if p := recover(); p != nil {
				b.log.Error("gateway event handler panicked; event dropped", "event", event,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				taken = true
			}
		}()
		return takeHot(b.ing, s, kind, d, b.onAssistantMessage)
	}
}

// takeHot decodes one hot dispatch and hands it to in (and a created
// message to onCreate, when not nil). False when d does not decode.
func takeHot(in *ingest, s *discordgo.Session, kind hotKind, d []byte, onCreate func(*discordgo.Session, *discordgo.MessageCreate)) bool {
	switch kind {
	case hotMessageCreate:
		m, ok := decodeMessage(d)
		if !ok {
			return false
		}
		ev := &discordgo.MessageCreate{Message: m}
		in.handle(s, ev)
		if onCreate != nil {
			onCreate(s, ev)
		}
	case hotMessageUpdate:
		m, ok := decodeMessage(d)
		if !ok {
			return false
		}
		in.handle(s, &discordgo.MessageUpdate{Message: m})
	case hotMessageDelete:
		m, ok := decodeMessage(d)
		if !ok {
			return false
		}
		in.handle(s, &discordgo.MessageDelete{Message: m})
	case hotMemberUpdate:
		var m discordgo.Member
		if err := json.Unmarshal(d, &m); err != nil {
			return false
		}
		in.handle(s, &discordgo.GuildMemberUpdate{Member: &m})
	case hotReaction:
		// Kimi has no reaction topic and the state keeps no reactions.
	default:
		return false
	}
	return true
}
