package discord

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
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
	c := newFrameConn(client, func(v frameVerdict) { dropped = append(dropped, v) })
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
		{"other ops pass", wsFrame(wsOpText, []byte(`{"op":9,"t":"GUILD_CREATE","d":null}`)), wsFrame(wsOpText, []byte(`{"op":9,"t":"GUILD_CREATE","d":null}`)), nil},
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
