package discord

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
)

// Session starts under Kimi's control. Discord allows a bot a daily
// number of session starts (gateway/bot's session_start_limit; 1,000 is
// usual) and resets the token of a bot that exceeds it. Every Identify is a
// session start, so Kimi's reconnect loop must decide each one
// (startbudget.go). discordgo sends one by itself: its onEvent answers an
// Invalid Session (op 9, also the answer to a failed resume) with an
// Identify at once, with no wait and no way to refuse. The frame filter
// therefore ends the connection at an op 9 instead (errInvalidSession),
// before discordgo sees it, and tells the bot whether the session may be
// resumed; the loop then resumes or identifies, after its backoff and
// within the budget. The filter also watches the client's own frames and
// reports each Identify actually written, so the count covers every one,
// whoever sent it.

// errInvalidSession ends a gateway connection whose server sent Invalid
// Session (op 9).
var errInvalidSession = errors.New("discord: the gateway invalidated the session (op 9)")

// invalidSession reports whether msg is an Invalid Session and its d
// (whether the session may be resumed).
func invalidSession(msg []byte) (invalid, resumable bool) {
	if !mayBeOp9(msg) {
		return false, false
	}
	var e struct {
		Op *int            `json:"op"`
		D  json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(msg, &e); err != nil || e.Op == nil || *e.Op != 9 {
		return false, false
	}
	return true, string(bytes.TrimSpace(e.D)) == "true"
}

// mayBeOp9 reports whether msg can be a payload with op 9, so that other
// messages (almost all) skip the decoding: a JSON key is spelled with
// literal quotes, so such a payload holds "op", a colon and a 9 (or a \u
// escape spells the key).
func mayBeOp9(msg []byte) bool {
	if bytes.Contains(msg, []byte(`\u`)) {
		return true
	}
	for rest := msg; ; {
		i := bytes.Index(rest, []byte(`"op"`))
		if i < 0 {
			return false
		}
		rest = rest[i+4:]
		v := bytes.TrimLeft(rest, " \t\r\n")
		if len(v) > 0 && v[0] == ':' {
			v = bytes.TrimLeft(v[1:], " \t\r\n")
			if len(v) > 0 && v[0] == '9' {
				return true
			}
		}
	}
}

// identifyPrefix is how discordgo's Identify payload opens (identifyOp
// marshalled by encoding/json).
var identifyPrefix = []byte(`{"op":2,`)

// outScan follows the frames a client writes (RFC 6455 §5.2: masked) across
// Write calls, after the HTTP upgrade request they start with, and reports
// each message that opens as an Identify (its opening bytes may span
// fragments). Frames compressed by
// permessage-deflate (RSV1) would not be recognised; Kimi's dialer never
// negotiates it.
type outScan struct {
	request int    // bytes of the request's closing "\r\n\r\n" seen (4: the frames begin)
	hdr     []byte // the current frame's header so far
	left    uint64 // payload bytes of the current frame still to come
	inBody  bool   // the header is complete and the payload is being read
	mask    [4]byte
	pos     uint64 // payload bytes of the current frame seen
	fin     bool   // the current frame ends its message
	control bool   // the current frame is a control frame (inside a message or not)
	reading bool   // a message's opening bytes are still being collected
	head    []byte // its first unmasked payload bytes (up to len(identifyPrefix))
}

// feed reads the next bytes written; identified is called once per
// Identify.
func (s *outScan) feed(p []byte, identified func()) {
	for len(p) > 0 && s.request < 4 {
		switch {
		case p[0] == "\r\n\r\n"[s.request]:
			s.request++
		case p[0] == '\r':
			s.request = 1
		default:
			s.request = 0
		}
		p = p[1:]
	}
	for len(p) > 0 {
		if !s.inBody {
			s.hdr = append(s.hdr, p[0])
			p = p[1:]
			if need := s.headerLen(); need == 0 || len(s.hdr) < need {
				continue
			}
			s.startFrame()
			if s.left == 0 {
				s.endFrame()
			}
			continue
		}
		k := uint64(len(p))
		if k > s.left {
			k = s.left
		}
		if s.reading && !s.control {
			for i := uint64(0); i < k && len(s.head) < len(identifyPrefix); i++ {
				s.head = append(s.head, p[i]^s.mask[(s.pos+i)%4])
			}
			if len(s.head) == len(identifyPrefix) {
				s.reading = false
				if bytes.Equal(s.head, identifyPrefix) && identified != nil {
					identified()
				}
			}
		}
		p, s.left, s.pos = p[k:], s.left-k, s.pos+k
		if s.left == 0 {
			s.endFrame()
		}
	}
}

// endFrame closes the current frame: a message's last frame ends the
// collecting of its opening bytes.
func (s *outScan) endFrame() {
	s.inBody = false
	if s.fin && !s.control {
		s.reading = false
	}
}

// headerLen is the current frame's header length once its first two bytes
// are in (0 before).
func (s *outScan) headerLen() int {
	if len(s.hdr) < 2 {
		return 0
	}
	n := 2
	switch s.hdr[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if s.hdr[1]&0x80 != 0 {
		n += 4
	}
	return n
}

// startFrame decodes the complete header in s.hdr and starts its payload.
func (s *outScan) startFrame() {
	h := s.hdr
	op := h[0] & 0x0f
	n := uint64(h[1] & 0x7f)
	i := 2
	switch n {
	case 126:
		n, i = uint64(binary.BigEndian.Uint16(h[2:])), 4
	case 127:
		n, i = binary.BigEndian.Uint64(h[2:]), 10
	}
	s.mask = [4]byte{}
	if h[1]&0x80 != 0 {
		copy(s.mask[:], h[i:i+4])
	}
	s.left, s.pos, s.inBody = n, 0, true
	s.fin, s.control = h[0]&0x80 != 0, op >= wsOpClose
	if op == wsOpText || op == wsOpBinary {
		s.reading, s.head = true, s.head[:0]
	}
	s.hdr = s.hdr[:0]
}
