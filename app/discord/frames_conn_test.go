package discord

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

// Byte-level tests of frameConn: what gorilla reads through the filter.

const upgrade101 = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"

// wsFragments is payload as an unmasked message of op split into n frames.
func wsFragments(op byte, payload []byte, n int) []byte {
	var out []byte
	step := (len(payload) + n - 1) / n
	for i := 0; i < n; i++ {
		part := payload[min(i*step, len(payload)):min((i+1)*step, len(payload))]
		fop := byte(wsOpContinuation)
		if i == 0 {
			fop = op
		}
		fr := wsFrame(fop, part)
		if i < n-1 {
			fr[0] &^= 0x80
		}
		out = append(out, fr...)
	}
	return out
}

func zlibbed(b []byte) []byte {
	var buf bytes.Buffer
	z := zlib.NewWriter(&buf)
	_, _ = z.Write(b)
	_ = z.Close()
	return buf.Bytes()
}

// throughFilter returns what a reader of frameConn over a stream of in
// sees, and the verdicts of the dropped messages.
func throughFilter(t *testing.T, in []byte) ([]byte, []frameVerdict) {
	t.Helper()
	server, client := net.Pipe()
	go func() {
		_, _ = server.Write(in)
		_ = server.Close()
	}()
	var dropped []frameVerdict
	c := newFrameConn(client, frameHooks{dropped: func(v frameVerdict) { dropped = append(dropped, v) }})
	defer c.Close()
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return out, dropped
}

func TestFrameConnStream(t *testing.T) {
	bad := []byte(`{"op":0,"s":7,"t":"GUILD_CREATE","d":{}}`)
	good := []byte(`{"op":0,"s":8,"t":"GUILD_CREATE","d":{"id":"1","name":"` + strings.Repeat("x", 70000) + `"}}`)
	escaped := []byte(`{"op":0,"s":9,"t":"GUILD_\u0043REATE","d":null}`)
	ping := wsFrame(0x9, []byte("p"))
	closeFr := wsFrame(wsOpClose, []byte{0x0f, 0xa4})
	cases := []struct {
		name    string
		in      []byte
		want    []byte
		dropped []int64 // sequences of the replaced messages
	}{
		{"good text passes", wsFrame(wsOpText, good), wsFrame(wsOpText, good), nil},
		{"bad text replaced", wsFrame(wsOpText, bad), droppedFrame(7), []int64{7}},
		{"bad compressed replaced", wsFrame(wsOpBinary, zlibbed(bad)), droppedFrame(7), []int64{7}},
		{"escaped type replaced", wsFrame(wsOpText, escaped), droppedFrame(9), []int64{9}},
		{"good fragments pass", wsFragments(wsOpText, good, 3), wsFragments(wsOpText, good, 3), nil},
		{"bad fragments replaced", wsFragments(wsOpBinary, zlibbed(bad), 2), droppedFrame(7), []int64{7}},
		{"control frames pass", append(append([]byte{}, ping...), closeFr...), append(append([]byte{}, ping...), closeFr...), nil},
		{"not json passes", wsFrame(wsOpText, []byte("{")), wsFrame(wsOpText, []byte("{")), nil},
		{"other ops pass", wsFrame(wsOpText, []byte(`{"op":11,"t":"GUILD_CREATE","d":null}`)), wsFrame(wsOpText, []byte(`{"op":11,"t":"GUILD_CREATE","d":null}`)), nil},
		{"op 9 inside a dispatch passes", wsFrame(wsOpText, []byte(`{"op":0,"s":3,"t":"X","d":{"op":9}}`)), wsFrame(wsOpText, []byte(`{"op":0,"s":3,"t":"X","d":{"op":9}}`)), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, dropped := throughFilter(t, append([]byte(upgrade101), tc.in...))
			want := append([]byte(upgrade101), tc.want...)
			if !bytes.Equal(out, want) {
				t.Errorf("stream = %.200q, want %.200q", out, want)
			}
			var seqs []int64
			for _, v := range dropped {
				seqs = append(seqs, v.seq)
			}
			if len(seqs) != len(tc.dropped) || (len(seqs) > 0 && seqs[0] != tc.dropped[0]) {
				t.Errorf("dropped %v, want %v", seqs, tc.dropped)
			}
		})
	}
}

func TestFrameConnRefusedUpgradePassesRaw(t *testing.T) {
	in := "HTTP/1.1 401 Unauthorized\r\nContent-Length: 5\r\n\r\n\x81\x7f\xff\xff\xff"
	out, dropped := throughFilter(t, []byte(in))
	if string(out) != in || len(dropped) != 0 {
		t.Fatalf("stream = %q, dropped %v", out, dropped)
	}
}

// BenchmarkInspectMessage is the filter's cost for a frame it passes (a
// MESSAGE_CREATE), beside discordgo's own decoding of the same frame.
func BenchmarkInspectMessage(b *testing.B) {
	msg := []byte(`{"op":0,"s":42,"t":"MESSAGE_CREATE","d":{"id":"1300000000000000001","channel_id":"` + evChannel +
		`","guild_id":"` + evGuild + `","author":{"id":"` + evUser + `","username":"ann","discriminator":"0"},` +
		`"member":{"roles":[],"joined_at":"2024-01-01T00:00:00Z"},"content":"` + strings.Repeat("hello ", 40) +
		`","timestamp":"2024-01-01T00:00:00Z","tts":false,"mention_everyone":false,"mentions":[],"mention_roles":[],` +
		`"attachments":[],"embeds":[],"pinned":false,"type":0}}`)
	b.Run("filter", func(b *testing.B) {
		for b.Loop() {
			if v := inspectMessage(false, msg); v.reason != "" {
				b.Fatal(v.reason)
			}
		}
	})
	b.Run("discordgo", func(b *testing.B) {
		for b.Loop() {
			var e *discordgo.Event
			if err := json.NewDecoder(bytes.NewReader(msg)).Decode(&e); err != nil {
				b.Fatal(err)
			}
			var m discordgo.MessageCreate
			if err := json.Unmarshal(e.RawData, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestFrameConnInvalidSessionEndsTheStream: an Invalid Session (op 9) is
// never handed to discordgo (which would identify at once, outside the
// session start budget): the stream ends with errInvalidSession after
// what came before it, and the hook hears whether it may be resumed.
func TestFrameConnInvalidSessionEndsTheStream(t *testing.T) {
	hello := wsFrame(wsOpText, []byte(`{"op":10,"d":{"heartbeat_interval":41250}}`))
	for _, tc := range []struct {
		name      string
		frame     []byte
		resumable bool
	}{
		{"not resumable", wsFrame(wsOpText, []byte(`{"op":9,"d":false}`)), false},
		{"resumable", wsFrame(wsOpText, []byte(`{"op":9,"d":true}`)), true},
		{"spaced, with s and t", wsFrame(wsOpText, []byte(`{ "t":null, "s":null, "op" : 9, "d" : true }`)), true},
		{"escaped key", wsFrame(wsOpText, []byte(`{"\u006fp":9,"d":false}`)), false},
		{"compressed", wsFrame(wsOpBinary, zlibbed([]byte(`{"op":9,"d":false}`))), false},
		{"fragmented", wsFragments(wsOpText, []byte(`{"op":9,"d":true}`), 3), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := net.Pipe()
			go func() {
				_, _ = server.Write(append(append([]byte(upgrade101), hello...), tc.frame...))
				_ = server.Close()
			}()
			var heard []bool
			c := newFrameConn(client, frameHooks{invalidated: func(r bool) { heard = append(heard, r) }})
			defer c.Close()
			out, err := io.ReadAll(c)
			if !errors.Is(err, errInvalidSession) {
				t.Fatalf("read error = %v, want errInvalidSession", err)
			}
			if want := append([]byte(upgrade101), hello...); !bytes.Equal(out, want) {
				t.Errorf("stream = %q, want the upgrade and Hello only", out)
			}
			if len(heard) != 1 || heard[0] != tc.resumable {
				t.Errorf("invalidated heard %v, want [%t]", heard, tc.resumable)
			}
		})
	}
}

// maskedFrame is payload as one masked client frame of op.
func maskedFrame(op byte, payload []byte, fin bool) []byte {
	key := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	fr := wsFrame(op, nil)[:1]
	if !fin {
		fr[0] &^= 0x80
	}
	switch n := len(payload); {
	case n < 126:
		fr = append(fr, 0x80|byte(n))
	case n <= 0xffff:
		fr = append(fr, 0x80|126, byte(n>>8), byte(n))
	default:
		fr = append(fr, 0x80|127, 0, 0, 0, 0, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	fr = append(fr, key[:]...)
	for i, c := range payload {
		fr = append(fr, c^key[i%4])
	}
	return fr
}

// TestOutScanCountsIdentifies: the client's own frames are followed, after
// its upgrade request, across any split into Write calls, and only the messages that open as
// an Identify are counted (not a heartbeat, a resume, a continuation or
// an identify's text inside another payload).
func TestOutScanCountsIdentifies(t *testing.T) {
	identify := []byte(`{"op":2,"d":{"token":"Bot x","properties":{"os":"linux"},"intents":513}}`)
	long := []byte(`{"op":2,"d":{"token":"Bot x","properties":{"os":"` + strings.Repeat("l", 300) + `"}}}`)
	stream := []byte("GET /gw/?v=9&encoding=json HTTP/1.1\r\nHost: gateway.discord.gg\r\nUpgrade: websocket\r\n\r\n")
	stream = append(stream, maskedFrame(wsOpText, []byte(`{"op":1,"d":null}`), true)...)
	stream = append(stream, maskedFrame(wsOpText, identify, true)...)
	stream = append(stream, maskedFrame(wsOpText, []byte(`{"op":6,"d":{"token":"Bot x","session_id":"s","seq":4}}`), true)...)
	stream = append(stream, maskedFrame(wsOpText, long, true)...)
	stream = append(stream, maskedFrame(wsOpText, []byte(`{"op":3,"d":{"x":"{\"op\":2,"}}`), true)...)
	stream = append(stream, maskedFrame(wsOpText, long[:5], false)...) // a fragmented identify
	stream = append(stream, maskedFrame(wsOpContinuation, long[5:], true)...)
	stream = append(stream, maskedFrame(wsOpContinuation, identify, true)...) // stray: not a message start
	stream = append(stream, maskedFrame(0x9, []byte("ping"), true)...)
	const want = 3
	for _, step := range []int{len(stream), 1, 2, 3, 7, 64} {
		var s outScan
		n := 0
		for i := 0; i < len(stream); i += step {
			s.feed(stream[i:min(i+step, len(stream))], func() { n++ })
		}
		if n != want {
			t.Errorf("written %d bytes at a time: %d identifies counted, want %d", step, n, want)
		}
	}
}
