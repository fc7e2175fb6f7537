// Package chunk cuts text into Discord messages: 2,000 code points at
// most, code blocks closed at a cut and reopened with their language
// (Split), and, for the assistant's replies, bare links wrapped in <…> and
// "(i/n)" suffixes (Message). Scheduled tasks and the assistant share it.
package chunk

import (
	"slices"
	"strings"
	"unicode/utf8"
)

const (
	// Max is Discord's content limit for one bot message, in code points.
	Max = 2000
	// MaxFenceLanguage is the longest language word an opening ``` names.
	MaxFenceLanguage = 32
)

// Clip returns s cut to at most n code points.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return s[:runeStarts(s)[n]]
}

// Piece is one chunk of a Split: Reopen+Body+Closed is the message.
type Piece struct {
	// Reopen is the fence repair at the start ("```lang\n" reopening the
	// code block the previous piece closed, else ""); Closed the one at
	// the end ("```" or "\n```" closing a block cut here, else "").
	Reopen, Body, Closed string
}

// Text is the piece as sent: Reopen + Body + Closed.
func (p Piece) Text() string { return p.Reopen + p.Body + p.Closed }

// Split cuts s into pieces of at most limit code points each (limit at
// least 16), repairs included, whose bodies concatenate to s. It cuts at
// the last paragraph break (a blank line) in the second half of the room,
// else the last line break there, else the last space, else at the limit,
// and never inside a code point or a ``` delimiter. A cut inside a ```
// code block closes it at the end of the piece and reopens it, with its
// language, at the start of the next.
func Split(s string, limit int) []Piece {
	limit = max(limit, 16)
	starts := runeStarts(s) // byte offset of every code point, plus len(s)
	fences := fenceMarks(s)
	var out []Piece
	at := 0 // index into starts
	reopen := ""
	for {
		n := len(starts) - 1 - at // code points left
		room := limit - utf8.RuneCountInString(reopen)
		if n <= room {
			out = append(out, Piece{Reopen: reopen, Body: s[starts[at]:]})
			return out
		}
		cut := chooseCut(s, starts, fences, at, room)
		open, opener := fences.stateAt(starts[cut])
		if open && cut-at+len("\n```") > room {
			cut = chooseCut(s, starts, fences, at, room-len("\n```"))
			open, opener = fences.stateAt(starts[cut])
		}
		// A block this chunk only opens would be empty (Discord shows
		// its backticks): leave its delimiter to the next chunk.
		if open && opener.start > starts[at] && strings.TrimSpace(s[opener.end:starts[cut]]) == "" {
			cut = indexOf(starts, opener.start)
			open, opener = fences.stateAt(starts[cut])
		}
		body := s[starts[at]:starts[cut]]
		p := Piece{Reopen: reopen, Body: body}
		reopen = ""
		if open {
			p.Closed = "```"
			if !strings.HasSuffix(body, "\n") {
				p.Closed = "\n```"
			}
			reopen = "```" + opener.lang + "\n"
		}
		out = append(out, p)
		at = cut
	}
}

// chooseCut returns the index (into starts) where a chunk that begins at
// code point at and holds at most room code points ends; at < cut.
func chooseCut(s string, starts []int, fences fenceSet, at, room int) int {
	limit := at + room
	window := s[starts[at]:starts[limit]]
	half := starts[at+room/2] - starts[at]
	byteCut := -1
	if i := strings.LastIndex(window, "\n\n"); i >= half {
		byteCut = i + 2
	} else if i := strings.LastIndex(window, "\n"); i >= half {
		byteCut = i + 1
	} else if i := strings.LastIndex(window, " "); i > 0 {
		byteCut = i + 1
	}
	cut := limit
	if byteCut > 0 {
		cut = indexOf(starts, starts[at]+byteCut)
	}
	// Never cut through a delimiter: cut before it instead.
	if ls, ok := fences.delimiterContaining(starts[cut]); ok && ls > starts[at] {
		cut = indexOf(starts, ls)
	}
	return cut
}

// runeStarts returns the byte offset of every code point of s (an invalid
// byte counts as one), then len(s).
func runeStarts(s string) []int {
	starts := make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		starts = append(starts, i)
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return append(starts, len(s))
}

// indexOf finds byte offset b (a code point start) in starts.
func indexOf(starts []int, b int) int {
	i, _ := slices.BinarySearch(starts, b)
	return i
}

// fence is a ``` delimiter: [start, end) bytes; an opening one spans its
// language and newline too.
type fence struct {
	start, end int
	opens      bool
	lang       string
}

type fenceSet []fence

// fenceMarks finds the code block delimiters of s as Discord's markdown
// reads them: ``` anywhere in the text, not only at a line's start (Discord
// renders "a ```b``` c" as a block), opening and closing in turn; an
// opening ``` directly followed by a language word (letters, digits and
// _+-.#) and a newline names the block's language.
func fenceMarks(s string) fenceSet {
	var fs fenceSet
	open := false
	for i := 0; i+3 <= len(s); {
		if s[i:i+3] != "```" {
			i++
			continue
		}
		f := fence{start: i, end: i + 3, opens: !open}
		if f.opens {
			j := f.end
			for j < len(s) && isLangByte(s[j]) {
				j++
			}
			if j > f.end && j < len(s) && s[j] == '\n' && j-f.end <= MaxFenceLanguage {
				f.lang, f.end = s[f.end:j], j+1
			}
		}
		fs = append(fs, f)
		open = f.opens
		i = f.end
	}
	return fs
}

func isLangByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+-.#", c) >= 0
}

// stateAt reports whether byte offset b lies inside a code block (after an
// opening delimiter's start, before a closing one's) and the last opening
// delimiter.
func (fs fenceSet) stateAt(b int) (bool, fence) {
	open, last := false, fence{}
	for _, f := range fs {
		if f.start >= b {
			break
		}
		open = f.opens
		if f.opens {
			last = f
		}
	}
	return open, last
}

// delimiterContaining returns the start of the delimiter strictly containing
// byte offset b (b after its start and before its end).
func (fs fenceSet) delimiterContaining(b int) (int, bool) {
	for _, f := range fs {
		if f.start < b && b < f.end {
			return f.start, true
		}
	}
	return 0, false
}
