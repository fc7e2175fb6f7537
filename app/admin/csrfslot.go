package admin

import (
	"bytes"
	"io"
)

// csrfSlot is rendered in place of the session's CSRF token when a page
// part is rendered once for every session and kept (a guild page's cards,
// the /results tables): the kept bytes hold the slot, and writeSpliced puts
// the requesting session's token in at each one. It is letters and digits
// only, so templ's escaping leaves it as it is in attributes and text, and
// no token (base64url of random bytes) can contain it.
const csrfSlot = "kimiCSRFslot0f4e2a91"

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
