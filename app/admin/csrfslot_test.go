package admin

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a-h/templ"
)

// TestSplicedPutsTheTokenInEverySlot: kept bytes split at each csrfSlot are
// written back whole with the given token at every slot and nowhere else,
// for zero, one and several slots, at the ends and side by side.
func TestSplicedPutsTheTokenInEverySlot(t *testing.T) {
	tests := []struct {
		name, rendered, want string
	}{
		{"no slot", "<p>plain</p>", "<p>plain</p>"},
		{"one slot", `<input value="` + csrfSlot + `">`, `<input value="TOKEN">`},
		{"at both ends", csrfSlot + "mid" + csrfSlot, "TOKENmidTOKEN"},
		{"side by side", csrfSlot + csrfSlot, "TOKENTOKEN"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSpliced([]byte(tt.rendered))
			var buf bytes.Buffer
			if err := s.WriteTo(&buf, "TOKEN"); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Fatalf("wrote %q, want %q", buf.String(), tt.want)
			}
			if got := s.Len(len("TOKEN")); got != len(tt.want) {
				t.Fatalf("Len = %d, want %d", got, len(tt.want))
			}
		})
	}
}

// TestCSRFSlotSurvivesEscaping: templ leaves the slot as it is in an
// attribute and in text, so the kept bytes always hold it where the token
// goes.
func TestCSRFSlotSurvivesEscaping(t *testing.T) {
	var buf bytes.Buffer
	c := templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		_, err := io.WriteString(w, `<input value="`+templ.EscapeString(csrfSlot)+`">`+templ.EscapeString(csrfSlot))
		return err
	})
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), csrfSlot); n != 2 {
		t.Fatalf("the slot shows %d times after escaping, want 2: %s", n, buf.String())
	}
}

// TestCSRFSlotIsRandomPerProcess: the slot is drawn afresh (no one can
// write it into a document, a summary or a channel's name to have a
// viewer's token spliced there), of letters and digits templ's escaping
// keeps; text that looks like a slot — the fixed one of earlier builds —
// is shown as written on a kept page.
func TestCSRFSlotIsRandomPerProcess(t *testing.T) {
	a, b := newCSRFSlot(), newCSRFSlot()
	if a == b || len(a) < 24 {
		t.Fatalf("slots %q and %q: want two different random ones", a, b)
	}
	for _, r := range a {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			t.Fatalf("slot %q holds %q: letters and digits only", a, r)
		}
	}
	h := newHarness(t)
	h.createAdmin()
	const lookalike = "kimiCSRFslot0f4e2a91"
	h.writeDocument(guildT, "---\nbot_active: true\n---\nSay "+lookalike+" please.\n")
	c := h.newClient()
	c.login(testUser, testPassword)
	for range 2 { // rendered, then kept
		res := c.get("/guilds/42")
		m := csrfRE.FindStringSubmatch(res.body)
		if res.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("GET /guilds/42 = %d", res.StatusCode)
		}
		if !strings.Contains(res.body, "Say "+lookalike+" please.") || strings.Contains(res.body, "Say "+m[1]+" please.") {
			t.Fatal("the document's text is not shown as written on the kept page")
		}
	}
}
