package discord

import (
	"bytes"
	"testing"
)

// TestFrameConnPassesAFragmentedMessageWithALargeFirstFrame: the frames
// of a fragmented message whose first frame is larger than readFrame
// allocates at once (maxPrealloc) reach discordgo byte for byte (the held
// raw frames and the held payload must not share one buffer's spare
// capacity).
func TestFrameConnPassesAFragmentedMessageWithALargeFirstFrame(t *testing.T) {
	cases := []struct {
		name  string
		first int // the first frame's payload length
	}{
		{"first frame at the bound", maxPrealloc},
		{"first frame past the bound", maxPrealloc + 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head := []byte(`{"op":0,"s":1,"t":"TYPING_START","d":{"a":"`)
			tail := []byte(`"}}`)
			pad := tc.first - len(head)
			payload := append(append(head, bytes.Repeat([]byte("x"), pad+20)...), tail...)
			first := wsFrame(wsOpText, payload[:tc.first])
			first[0] &^= 0x80 // not final
			rest := wsFrame(wsOpContinuation, payload[tc.first:])
			in := cat([]byte(upgrade101), first, rest)
			out, dropped := throughFilter(t, in)
			if len(dropped) != 0 {
				t.Errorf("dropped %v", dropped)
			}
			if !bytes.Equal(out, in) {
				i := 0
				for i < min(len(out), len(in)) && out[i] == in[i] {
					i++
				}
				t.Errorf("the stream differs from byte %d of %d (got %d bytes)", i, len(in), len(out))
			}
		})
	}
}
