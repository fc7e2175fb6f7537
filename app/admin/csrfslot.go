package admin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"io"

	"github.com/a-h/templ"
)

// csrfSlot is rendered in place of the session's CSRF token when a page
// part is rendered once for every session and kept (a guild page's cards,
// a proposal's page, the /results tables): the kept bytes hold the slot,
// and spliced.WriteTo puts the requesting session's token in at each one.
// It is random per process — page text others write (a document, a
// proposal's summary, a channel's name) cannot hold it, so no one can have
// a viewer's token spliced into what they wrote — and letters and digits
// only, so templ's escaping leaves it as it is in attributes and text.
var csrfSlot = newCSRFSlot()

// newCSRFSlot is "kimiCSRF" and 24 random base-32 letters and digits.
func newCSRFSlot() string {
	var b [15]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("admin: no randomness for the CSRF slot: " + err.Error())
	}
	return "kimiCSRF" + base32.StdEncoding.EncodeToString(b[:])
}

// spliced is rendered bytes that hold csrfSlot, split at each one: writing
// them is one Write per piece, with the token between, and no scan per
// request.
type spliced struct {
	parts [][]byte
}

// newSpliced splits rendered (which it keeps; the caller must not change it).
func newSpliced(rendered []byte) spliced {
	return spliced{parts: bytes.Split(rendered, []byte(csrfSlot))}
}

// Len is the bytes written with a token of tokenLen bytes.
func (s spliced) Len(tokenLen int) int {
	n := 0
	for _, p := range s.parts {
		n += len(p)
	}
	return n + (len(s.parts)-1)*tokenLen
}

// WriteTo writes the kept bytes with token at every slot.
func (s spliced) WriteTo(w io.Writer, token string) error {
	for i, p := range s.parts {
		if i > 0 {
			if _, err := io.WriteString(w, token); err != nil {
				return err
			}
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// Component is the kept bytes with token at every slot, as a component.
func (s spliced) Component(token string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error { return s.WriteTo(w, token) })
}
