package discord

import (
	"bytes"
	"errors"
	"net"
	"sync/atomic"
	"testing"
)

// stallConn is a net.Conn that hands its data in one Read and then
// stalls: the next Read reports errStalled and marks stalled, as a
// connection that stops mid-frame does (the read would block; discordgo
// may close it on a missed heartbeat ACK and resume with its sequence).
type stallConn struct {
	net.Conn
	data    []byte
	stalled atomic.Bool
}

var errStalled = errors.New("the network has no more bytes yet")

func (c *stallConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		c.stalled.Store(true)
		return 0, errStalled
	}
	n := copy(p, c.data)
	c.data = c.data[n:]
	return n, nil
}

func (c *stallConn) Close() error { return nil }

// TestTakenSequenceHandedOnBeforeTheFilterWaitsOnTheNetwork: a hot
// dispatch taken while only part of the next frame is buffered reaches
// discordgo as its droppedFrame before the filter waits for the rest from
// the network. Otherwise its handlers have run but discordgo's sequence
// does not count it while the connection stalls, and a resume after the
// stall (discordgo closes on a missed heartbeat ACK, then drops what it
// reads) has Discord send it again: handled twice.
func TestTakenSequenceHandedOnBeforeTheFilterWaitsOnTheNetwork(t *testing.T) {
	next := hotFrame(2, "MESSAGE_CREATE", `{"id":"b"}`)
	frags := wsFragments(wsOpText, []byte(`{"op":0,"s":3,"t":"GUILD_UPDATE","d":{"id":"1"}}`), 3)
	cases := []struct {
		name string
		in   []byte
	}{
		{"part of the next frame's header", cat(hotFrame(1, "MESSAGE_CREATE", `{"id":"a"}`), next[:1])},
		{"part of the next frame", cat(hotFrame(1, "MESSAGE_CREATE", `{"id":"a"}`), next[:len(next)-3])},
		{"part of a fragmented message", cat(hotFrame(1, "MESSAGE_CREATE", `{"id":"a"}`), frags[:len(frags)-5])},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := &stallConn{data: append([]byte(upgrade101), tc.in...)}
			c := newFrameConn(conn, frameHooks{hot: func(string, hotKind, []byte) bool { return true }})
			want := append([]byte(upgrade101), droppedFrame(1)...)
			var got []byte
			buf := make([]byte, 4096)
			for !bytes.HasPrefix(got, want) {
				n, err := c.Read(buf)
				got = append(got, buf[:n]...)
				if bytes.HasPrefix(got, want) && conn.stalled.Load() {
					t.Fatalf("the filter read from the network before handing on the taken dispatch's sequence")
				}
				if err != nil {
					t.Fatalf("read: %v (got %q)", err, got)
				}
			}
		})
	}
}
