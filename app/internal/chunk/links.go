package chunk

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// WrapLinks wraps every bare http(s) link of s in <…>, so Discord shows no
// preview for it (reference assistant.md §6). Links in code (a ``` block
// or a ` or “ span), links already in <…>, the targets of Markdown links
// ("](…)") and links glued to a preceding word are left alone. Trailing
// prose punctuation and unbalanced closing brackets stay outside.
func WrapLinks(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	code := codeRanges(s)
	var b strings.Builder
	last, ci := 0, 0
	for i := 0; i < len(s); {
		for ci < len(code) && code[ci][1] <= i {
			ci++
		}
		if ci < len(code) && code[ci][0] <= i {
			i = code[ci][1]
			continue
		}
		n := linkAt(s, i)
		if n == 0 {
			i++
			continue
		}
		if ci < len(code) && i+n > code[ci][0] { // a link running into code
			n = code[ci][0] - i
		}
		b.WriteString(s[last:i])
		b.WriteString("<" + s[i:i+n] + ">")
		last, i = i+n, i+n
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// linkAt returns the length of the bare link starting at byte i of s, 0
// when none starts there.
func linkAt(s string, i int) int {
	rest := s[i:]
	var scheme int
	switch {
	case hasPrefixFold(rest, "https://"):
		scheme = len("https://")
	case hasPrefixFold(rest, "http://"):
		scheme = len("http://")
	default:
		return 0
	}
	if i > 0 {
		prev, _ := utf8.DecodeLastRuneInString(s[:i])
		if prev == '<' || unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == '(' && i > 1 && s[i-2] == ']' {
			return 0
		}
	}
	n := scheme
	for n < len(rest) {
		r, w := utf8.DecodeRuneInString(rest[n:])
		if unicode.IsSpace(r) || r == '<' || r == '>' || r == '`' || r == utf8.RuneError || unicode.IsControl(r) {
			break
		}
		n += w
	}
	for n > scheme {
		c := rest[n-1]
		switch {
		case strings.IndexByte(".,;:!?'\"*_~", c) >= 0:
		case c == ')' && strings.Count(rest[:n], "(") < strings.Count(rest[:n], ")"):
		case c == ']' && strings.Count(rest[:n], "[") < strings.Count(rest[:n], "]"):
		case c == '}' && strings.Count(rest[:n], "{") < strings.Count(rest[:n], "}"):
		default:
			if n == scheme {
				return 0
			}
			return n
		}
		n--
	}
	return 0
}

func hasPrefixFold(s, p string) bool { return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) }

// codeRanges returns the byte ranges of s that are code, in order: ```
// blocks (an unclosed one runs to the end) and, between them, ` and “
// spans (a run of backticks closed by the next run of the same length).
func codeRanges(s string) [][2]int {
	var out [][2]int
	fs := fenceMarks(s)
	prose := 0
	for i := 0; i < len(fs); i++ {
		out = append(out, inlineCode(s, prose, fs[i].start)...)
		end := len(s)
		if i+1 < len(fs) {
			end = fs[i+1].end
		}
		out = append(out, [2]int{fs[i].start, end})
		prose = end
		i++
	}
	return append(out, inlineCode(s, prose, len(s))...)
}

func inlineCode(s string, from, to int) [][2]int {
	var out [][2]int
	for i := from; i < to; {
		if s[i] != '`' {
			i++
			continue
		}
		k := 1
		for i+k < to && s[i+k] == '`' {
			k++
		}
		closeAt := -1
		for j := i + k; j < to; {
			if s[j] != '`' {
				j++
				continue
			}
			m := 1
			for j+m < to && s[j+m] == '`' {
				m++
			}
			if m == k {
				closeAt = j + m
				break
			}
			j += m
		}
		if closeAt < 0 {
			i += k
			continue
		}
		out = append(out, [2]int{i, closeAt})
		i = closeAt
	}
	return out
}
