package chunk

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Message cuts an assistant reply into Discord messages: bare links are
// wrapped in <…> (WrapLinks), then a text of at most Max code points is
// one message as is; a longer one is Split with room for a "\n`(i/n)`"
// suffix on every message, pieces of only whitespace left out. Every
// message is at most Max code points. A reply of only whitespace is no
// message at all.
func Message(s string) []string {
	ps := messagePieces(WrapLinks(s))
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Text()
		if len(ps) > 1 {
			out[i] += suffix(i+1, len(ps))
		}
	}
	return out
}

func suffix(i, n int) string { return fmt.Sprintf("\n`(%d/%d)`", i, n) }

// messagePieces is Message's cut of s (links already wrapped), before the
// suffixes: the room left for them grows with the number of digits of n.
func messagePieces(s string) []Piece {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if utf8.RuneCountInString(s) <= Max {
		return []Piece{{Body: s}}
	}
	for digits := 1; ; digits++ {
		reserve := utf8.RuneCountInString(suffix(0, 0)) - 2 + 2*digits
		var kept []Piece
		for _, p := range Split(s, Max-reserve) {
			if p.Reopen != "" || strings.TrimSpace(p.Body) != "" {
				kept = append(kept, p)
			}
		}
		if len(fmt.Sprint(len(kept))) <= digits {
			return kept
		}
	}
}
