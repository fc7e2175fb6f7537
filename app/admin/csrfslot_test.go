package admin

import (
	"bytes"
	"context"
	"io"
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
