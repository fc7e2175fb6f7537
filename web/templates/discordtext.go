package templates

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/a-h/templ"
)

// Discord message text as the admin shows it: mentions as chips with
// names, and (in the demo chat) Discord's markdown. The renderer escapes
// every character of the text itself and emits only the elements and
// attributes below, built from constants, ids it parsed as digits and
// names it escaped; that is why its output, and only its output, is
// written with templ.Raw.

// Mentions names what message text mentions: a user, channel or role by
// id (Color 0xRRGGBB, 0 for none). A nil Mentions, or one that does not
// know the id, shows it as unknown.
type Mentions interface {
	MentionUser(id uint64) (name string, ok bool)
	MentionChannel(id uint64) (name string, ok bool)
	MentionRole(id uint64) (name string, color int, ok bool)
}

// DiscordText is message text with its mentions shown as names, every
// other character as typed (the caller's element keeps line breaks).
func DiscordText(text string, m Mentions) templ.Component {
	return templ.Raw(DiscordHTML(text, m, false))
}

// DiscordMarkdown is message text as Discord shows it: mentions as names
// and its markdown (bold, italics, underline, strike-through, inline code,
// code blocks, quotes, lists); links stay text.
func DiscordMarkdown(text string, m Mentions) templ.Component {
	return templ.Raw(DiscordHTML(text, m, true))
}

// DiscordHTML renders text as escaped HTML: mentions always, Discord's
// markdown when markdown is set.
func DiscordHTML(text string, m Mentions, markdown bool) string {
	// A form's textarea sends CRLF line breaks.
	text = strings.ReplaceAll(text, "\r\n", "\n")
	r := discordRenderer{m: m, md: markdown}
	if !markdown {
		r.inline(text)
		return r.b.String()
	}
	r.blocks(text)
	return r.b.String()
}

type discordRenderer struct {
	b  strings.Builder
	m  Mentions
	md bool
}

// blocks renders markdown text: code blocks first (nothing inside them is
// markdown), the text around them as quotes, lists and paragraphs.
func (r *discordRenderer) blocks(text string) {
	for text != "" {
		i := indexFence(text)
		if i < 0 {
			r.lines(text)
			return
		}
		end := strings.Index(text[i+3:], "```")
		body := ""
		if end >= 0 {
			body = codeBlockBody(text[i+3 : i+3+end])
		}
		if end < 0 || body == "" { // unterminated or empty: text
			r.lines(text)
			return
		}
		r.lines(strings.TrimSuffix(text[:i], "\n"))
		r.b.WriteString(`<pre class="dt-pre"><code>`)
		r.b.WriteString(html.EscapeString(body))
		r.b.WriteString(`</code></pre>`)
		text = strings.TrimPrefix(text[i+3+end+3:], "\n")
	}
}

// indexFence is the first ``` not escaped by a backslash, or -1.
func indexFence(s string) int {
	for i := 0; i+3 <= len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "```") {
			return i
		}
	}
	return -1
}

// codeBlockBody drops a code block's language line and its blank edges.
func codeBlockBody(s string) string {
	if nl := strings.IndexByte(s, '\n'); nl > 0 && isLanguage(s[:nl]) {
		s = s[nl+1:]
	}
	return strings.Trim(s, "\n")
}

func isLanguage(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+-.#", c) >= 0) {
			return false
		}
	}
	return true
}

// lines renders text without code blocks: runs of "> " lines as a quote
// (">>> " quotes the rest), runs of "- ", "* " or "1. " lines as a list,
// the others as lines of a paragraph.
func (r *discordRenderer) lines(text string) {
	if text == "" {
		return
	}
	ls := strings.Split(text, "\n")
	for i := 0; i < len(ls); {
		switch {
		case strings.HasPrefix(ls[i], ">>> "):
			rest := append([]string{strings.TrimPrefix(ls[i], ">>> ")}, ls[i+1:]...)
			r.b.WriteString(`<blockquote class="dt-quote">`)
			r.para(rest)
			r.b.WriteString(`</blockquote>`)
			return
		case quoteLine(ls[i]):
			j := i
			var q []string
			for ; j < len(ls) && quoteLine(ls[j]); j++ {
				q = append(q, strings.TrimPrefix(strings.TrimPrefix(ls[j], ">"), " "))
			}
			r.b.WriteString(`<blockquote class="dt-quote">`)
			r.para(q)
			r.b.WriteString(`</blockquote>`)
			i = j
		case listItem(ls[i]) != "":
			tag := listItem(ls[i])
			r.b.WriteString("<" + tag + ` class="dt-list">`)
			for ; i < len(ls) && listItem(ls[i]) == tag; i++ {
				r.b.WriteString(`<li>`)
				r.inline(listText(ls[i]))
				r.b.WriteString(`</li>`)
			}
			r.b.WriteString("</" + tag + ">")
		default:
			j := i
			for j < len(ls) && !quoteLine(ls[j]) && listItem(ls[j]) == "" && !strings.HasPrefix(ls[j], ">>> ") {
				j++
			}
			r.b.WriteString(`<div class="dt-p">`)
			r.para(ls[i:j])
			r.b.WriteString(`</div>`)
			i = j
		}
	}
}

func quoteLine(l string) bool { return l == ">" || strings.HasPrefix(l, "> ") }

// listItem is the list a line is an item of ("ul", "ol"), or "".
func listItem(l string) string {
	l = strings.TrimLeft(l, " ")
	if strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* ") {
		return "ul"
	}
	n := 0
	for n < len(l) && n < 9 && l[n] >= '0' && l[n] <= '9' {
		n++
	}
	if n > 0 && strings.HasPrefix(l[n:], ". ") {
		return "ol"
	}
	return ""
}

func listText(l string) string {
	l = strings.TrimLeft(l, " ")
	if strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* ") {
		return l[2:]
	}
	return l[strings.Index(l, ". ")+2:]
}

// para renders lines joined by line breaks.
func (r *discordRenderer) para(ls []string) {
	for i, l := range ls {
		if i > 0 {
			r.b.WriteString(`<br>`)
		}
		r.inline(l)
	}
}

// spans are the inline markers, longest first: the tag each opens.
var spans = []struct{ mark, tag string }{
	{"**", "strong"}, {"__", "u"}, {"~~", "s"}, {"*", "em"}, {"_", "em"},
}

// inline renders a line's mentions and (in markdown) its inline markers.
func (r *discordRenderer) inline(s string) {
	start := 0 // of the text not yet written
	flush := func(i int) {
		r.b.WriteString(html.EscapeString(s[start:i]))
	}
	for i := 0; i < len(s); {
		if s[i] == '<' {
			if n := r.mention(s[i:], func() { flush(i) }); n > 0 {
				i += n
				start = i
				continue
			}
		}
		if !r.md {
			i++
			continue
		}
		if s[i] == '\\' && i+1 < len(s) && isPunct(s[i+1]) {
			flush(i)
			start = i + 1 // the escaped character is text
			i += 2
			continue
		}
		if s[i] == '`' {
			if n, code := inlineCode(s[i:]); n > 0 {
				flush(i)
				r.b.WriteString(`<code class="dt-code">` + html.EscapeString(code) + `</code>`)
				i += n
				start = i
				continue
			}
		}
		if n, tag, inner := r.span(s, i); n > 0 {
			flush(i)
			r.b.WriteString("<" + tag + ">")
			r.inline(inner)
			r.b.WriteString("</" + tag + ">")
			i += n
			start = i
			continue
		}
		i++
	}
	flush(len(s))
}

// span matches an inline marker at s[i:]: its length, tag and inner text.
func (r *discordRenderer) span(s string, i int) (int, string, string) {
	for _, sp := range spans {
		if !strings.HasPrefix(s[i:], sp.mark) {
			continue
		}
		rest := s[i+len(sp.mark):]
		j := closing(rest, sp.mark, i > 0 && isWord(s[i-1]))
		if j > 0 {
			return len(sp.mark)*2 + j, sp.tag, rest[:j]
		}
	}
	return 0, "", ""
}

// closing is where rest's closing mark is (0: none), as Discord reads it:
// "*" opens before a non-space and does not close before another "*";
// "_" needs word boundaries outside; doubled marks end at the last of a
// run of their character ("***a***" is bold around italics).
func closing(rest, mark string, wordBefore bool) int {
	c := mark[0]
	switch mark {
	case "*":
		if rest == "" || rest[0] == ' ' || rest[0] == '*' {
			return 0
		}
	case "_":
		if wordBefore || rest == "" || rest[0] == '_' {
			return 0
		}
	}
	for j := 1; j < len(rest); j++ {
		switch {
		case rest[j] == '\\':
			j++
		case len(mark) == 1 && j+1 < len(rest) && rest[j] == c && rest[j+1] == c:
			j++ // a doubled mark inside a single one is its own span
		case strings.HasPrefix(rest[j:], mark):
			after := j + len(mark)
			if len(mark) == 2 {
				for after < len(rest) && rest[after] == c {
					j, after = j+1, after+1
				}
				return j
			}
			if mark == "*" && rest[j-1] == ' ' {
				continue
			}
			if mark == "_" && after < len(rest) && isWord(rest[after]) {
				return 0
			}
			return j
		}
	}
	return 0
}

// inlineCode matches code between runs of one or two backticks at s: its
// length and the code.
func inlineCode(s string) (int, string) {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	if n > 2 {
		return 0, ""
	}
	mark := s[:n]
	for j := n; j < len(s); j++ {
		if strings.HasPrefix(s[j:], mark) && (j+n == len(s) || s[j+n] != '`') && s[j-1] != '`' && j > n {
			return j + n, s[n:j]
		}
	}
	return 0, ""
}

// mention renders a mention or custom emoji at s (before writes the text
// before it): its length, 0 when s starts with none.
func (r *discordRenderer) mention(s string, before func()) int {
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return 0
	}
	body := s[1:end]
	if strings.HasPrefix(body, ":") || strings.HasPrefix(body, "a:") {
		parts := strings.Split(strings.TrimPrefix(body, "a"), ":")
		if len(parts) != 3 || parts[1] == "" || !isName(parts[1]) || !digits(parts[2]) {
			return 0
		}
		before()
		r.b.WriteString(`<span class="dt-emoji" title="` + parts[2] + `">:` + parts[1] + `:</span>`)
		return end + 1
	}
	kind, id := "", ""
	switch {
	case strings.HasPrefix(body, "@&"):
		kind, id = "role", body[2:]
	case strings.HasPrefix(body, "@!"):
		kind, id = "user", body[2:]
	case strings.HasPrefix(body, "@"):
		kind, id = "user", body[1:]
	case strings.HasPrefix(body, "#"):
		kind, id = "channel", body[1:]
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if kind == "" || !digits(id) || err != nil {
		return 0
	}
	before()
	r.chip(kind, id, n)
	return end + 1
}

// chip writes a mention: its name, or "unknown user 1323…", the id as its
// title.
func (r *discordRenderer) chip(kind, id string, n uint64) {
	name, color, ok := "", 0, false
	if r.m != nil {
		switch kind {
		case "user":
			name, ok = r.m.MentionUser(n)
		case "channel":
			name, ok = r.m.MentionChannel(n)
		case "role":
			name, color, ok = r.m.MentionRole(n)
		}
	}
	sigil := "@"
	if kind == "channel" {
		sigil = "#"
	}
	class := "mention"
	if !ok || name == "" {
		class, name = "mention mention-unknown", "unknown "+kind+" "+shortID(id)
	}
	r.b.WriteString(`<span class="` + class + `" title="` + id + `" data-testid="mention-` + kind + `">`)
	if kind == "role" && ok && color > 0 && color <= 0xffffff {
		r.b.WriteString(fmt.Sprintf(`<svg class="mention-dot" viewBox="0 0 2 2" aria-hidden="true" focusable="false"><circle cx="1" cy="1" r="1" fill="#%06x"></circle></svg>`, color))
	}
	r.b.WriteString(sigil + html.EscapeString(name) + `</span>`)
}

// shortID is an id's first four digits and an ellipsis.
func shortID(id string) string {
	if len(id) <= 5 {
		return id
	}
	return id[:4] + "…"
}

func digits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isName(s string) bool {
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// isWord says a byte is a word character for "_"'s boundaries (a letter,
// digit, "_" or part of a multi-byte character).
func isWord(c byte) bool {
	return c >= utf8.RuneSelf || c == '_' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}

func isPunct(c byte) bool {
	return c < utf8.RuneSelf && unicode.IsPunct(rune(c)) || strings.IndexByte("`*_~|<>#-+=", c) >= 0
}
