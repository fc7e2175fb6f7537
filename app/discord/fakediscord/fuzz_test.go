package fakediscord

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeClientPayload feeds arbitrary bytes to the fake's decoders of client payloads — the
// gateway frame, a message body, a command overwrite and an interaction callback's data. None
// may panic; a gateway frame is accepted only from valid JSON, and an accepted Identify or
// Resume carries its decoded data.
func FuzzDecodeClientPayload(f *testing.F) {
	for _, s := range []string{
		`{"op":2,"d":{"token":"Bot t","intents":513,"shard":[0,1],"compress":true,"properties":{"os":"linux"}}}`,
		`{"op":6,"d":{"token":"t","session_id":"s","seq":4}}`,
		`{"op":1,"d":12}`, `{"op":1,"d":null}`, `{"op":8,"d":{"guild_id":"1","query":"","limit":0}}`,
		`{"content":"hi","embeds":[{"title":"t","fields":[{"name":"n","value":"v"}]}],"components":[{"type":1,"components":[{"type":2,"custom_id":"a","style":1}]}]}`,
		`[{"name":"ping","description":"d","options":[{"name":"x","description":"y","type":3,"required":true}]}]`,
		`{"custom_id":"m","title":"T","components":[{"type":1,"components":[{"type":4,"custom_id":"b","label":"B","style":1}]}]}`,
		`{"embeds":[null]}`, `{"embeds":[{"fields":[null]}]}`, `[{"name":"a","description":"d","options":[null]}]`,
		`[{"name":"a","description":"d","options":[{"name":"s","description":"d","type":1,"options":[null]}]}]`,
		`{"op":2,"d":[]}`, `{"op":"2"}`, `null`, `[]`, ``, `{"components":[{"type":17,"components":[{"type":10,"content":"x"}]}],"flags":32768}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, d, err := decodeClientFrame(b)
		if err == nil {
			if !json.Valid(b) {
				t.Fatalf("accepted invalid JSON %q", b)
			}
			switch fr.Op {
			case 2:
				if _, ok := d.(*identifyData); !ok {
					t.Fatalf("identify decoded as %T", d)
				}
			case 6:
				if _, ok := d.(*resumeData); !ok {
					t.Fatalf("resume decoded as %T", d)
				}
			}
		}
		var mb messageBody
		if json.Unmarshal(b, &mb) == nil {
			_ = validateMessage(&mb, 0, true)
		}
		if cmds, ok := decodeCommands(b); ok {
			_ = validateCommands(cmds)
		}
		if rd, err := decodeResponseData(b); err == nil && rd == nil {
			t.Fatal("response data decoded to nil without an error")
		}
	})
}
