package chunk

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestWrapLinks: bare links get <…>; code, existing <…>, Markdown link
// targets and glued links do not; trailing punctuation and unbalanced
// brackets stay outside.
func TestWrapLinks(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"bare", "see https://example.com", "see <https://example.com>"},
		{"http", "http://a.b/c?d=e#f", "<http://a.b/c?d=e#f>"},
		{"case", "HTTPS://A.B", "<HTTPS://A.B>"},
		{"two", "https://a.b and https://c.d", "<https://a.b> and <https://c.d>"},
		{"trailing period", "go to https://a.b/x.", "go to <https://a.b/x>."},
		{"trailing punctuation", "https://a.b/x?!\",", "<https://a.b/x>?!\","},
		{"in parentheses", "(see https://a.b/x)", "(see <https://a.b/x>)"},
		{"balanced parentheses kept", "https://en.wikipedia.org/wiki/Go_(game)", "<https://en.wikipedia.org/wiki/Go_(game)>"},
		{"already wrapped", "<https://a.b>", "<https://a.b>"},
		{"markdown link", "[docs](https://a.b/docs)", "[docs](https://a.b/docs)"},
		{"inline code", "`https://a.b` and ``https://c.d``", "`https://a.b` and ``https://c.d``"},
		{"fenced code", "```\nhttps://a.b\n```\nhttps://c.d", "```\nhttps://a.b\n```\n<https://c.d>"},
		{"unclosed fence", "```sh\ncurl https://a.b", "```sh\ncurl https://a.b"},
		{"unmatched backtick is prose", "a ` https://a.b", "a ` <https://a.b>"},
		{"glued to a word", "xhttps://a.b", "xhttps://a.b"},
		{"scheme only", "https:// nothing", "https:// nothing"},
		{"no link", "plain text", "plain text"},
		{"link then code", "https://a.b`code`", "<https://a.b>`code`"},
		{"unicode", "voir https://exemple.fr/é — ok", "voir <https://exemple.fr/é> — ok"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := WrapLinks(tt.in); got != tt.want {
				t.Errorf("WrapLinks(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestMessage: a short reply is one message as is; a long one gets
// "(i/n)" suffixes within the limit, also past nine and ninety-nine
// chunks; code blocks are repaired per message; whitespace is no message.
func TestMessage(t *testing.T) {
	for _, tt := range []struct {
		name  string
		in    string
		check func([]string) string
	}{
		{"empty", " \n ", func(m []string) string {
			if len(m) != 0 {
				return fmt.Sprintf("%q", m)
			}
			return ""
		}},
		{"exactly the limit", strings.Repeat("a", Max), func(m []string) string {
			if len(m) != 1 || m[0] != strings.Repeat("a", Max) {
				return fmt.Sprintf("%d messages", len(m))
			}
			return ""
		}},
		{"one over the limit", strings.Repeat("a", Max+1), func(m []string) string {
			if len(m) != 2 || !strings.HasSuffix(m[0], "\n`(1/2)`") || !strings.HasSuffix(m[1], "\n`(2/2)`") {
				return fmt.Sprintf("%d messages, %q", len(m), m)
			}
			return ""
		}},
		{"ten chunks", strings.Repeat("word ", 3900), func(m []string) string {
			if len(m) < 10 || !strings.HasSuffix(m[9], fmt.Sprintf("\n`(10/%d)`", len(m))) {
				return fmt.Sprintf("%d messages, tenth ends %q", len(m), m[len(m)-1][len(m[len(m)-1])-12:])
			}
			return ""
		}},
		{"a code block cut", "```go\n" + strings.Repeat("x := 1\n", 500) + "```", func(m []string) string {
			if len(m) < 2 || !strings.HasPrefix(m[1], "```go\n") || !strings.Contains(m[0], "\n```\n`(1/") {
				return fmt.Sprintf("%.40q / %.40q", m[0][len(m[0])-30:], m[1])
			}
			return ""
		}},
		{"links wrapped", "see https://a.b " + strings.Repeat("z", 10), func(m []string) string {
			if len(m) != 1 || !strings.Contains(m[0], "<https://a.b>") {
				return fmt.Sprintf("%q", m)
			}
			return ""
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := Message(tt.in)
			for i, c := range m {
				if n := utf8.RuneCountInString(c); n > Max {
					t.Errorf("message %d is %d code points", i, n)
				}
			}
			if msg := tt.check(m); msg != "" {
				t.Error(msg)
			}
		})
	}
	// Past 99 chunks the suffix takes more room and every message still fits.
	m := Message(strings.Repeat("é", 101*Max))
	if len(m) < 100 || !strings.HasSuffix(m[99], fmt.Sprintf("(100/%d)`", len(m))) {
		t.Fatalf("%d messages", len(m))
	}
	for i, c := range m {
		if n := utf8.RuneCountInString(c); n > Max {
			t.Fatalf("message %d is %d code points", i, n)
		}
	}
}

func noSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// FuzzMessage: every message is at most Max code points; every message
// but the last has its ``` balanced, and the last too when the reply's
// are; without suffixes and fence repairs the messages hold all of the
// reply's (link-wrapped) text but whitespace, in order.
func FuzzMessage(f *testing.F) {
	for _, s := range []string{"", "hi https://a.b", strings.Repeat("a", 2001), "```go\n" + strings.Repeat("x\n", 1500) + "```", strings.Repeat("`", 4100), strings.Repeat("https://x.y/", 300), "```\n" + strings.Repeat("y ", 3000)} {
		f.Add(s, uint16(0))
	}
	f.Fuzz(func(t *testing.T, s string, repeat uint16) {
		if repeat > 0 && len(s) > 0 {
			s = strings.Repeat(s, 1+int(repeat)%(40000/len(s)+1))
		}
		msgs := Message(s)
		wrapped := WrapLinks(s)
		ps := messagePieces(wrapped)
		if len(ps) != len(msgs) {
			t.Fatalf("%d pieces, %d messages", len(ps), len(msgs))
		}
		var joined strings.Builder
		for i, m := range msgs {
			if n := utf8.RuneCountInString(m); n > Max {
				t.Fatalf("message %d of %d is %d code points", i, len(msgs), n)
			}
			if (i < len(msgs)-1 || strings.Count(wrapped, "```")%2 == 0) && strings.Count(m, "```")%2 != 0 {
				t.Fatalf("message %d has unbalanced fences", i)
			}
			if len(msgs) > 1 && !strings.HasSuffix(m, suffix(i+1, len(msgs))) {
				t.Fatalf("message %d lacks its suffix", i)
			}
			joined.WriteString(ps[i].Body)
		}
		if noSpace(joined.String()) != noSpace(wrapped) {
			t.Fatal("text lost or reordered")
		}
		if noSpace(strings.NewReplacer("<http", "http", ">", "").Replace(wrapped)) != noSpace(strings.ReplaceAll(s, ">", "")) && !strings.Contains(s, "<http") {
			t.Fatal("WrapLinks changed more than brackets")
		}
	})
}
