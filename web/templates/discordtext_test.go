package templates

import (
	"regexp"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/net/html"
)

// testMentions knows ada (1), #general (10) and @Mods (20, red) and @Plain
// (21, no colour).
type testMentions struct{}

func (testMentions) MentionUser(id uint64) (string, bool) {
	if id == 1 {
		return "ada <b>", true
	}
	return "", false
}

func (testMentions) MentionChannel(id uint64) (string, bool) {
	if id == 10 {
		return "general", true
	}
	return "", false
}

func (testMentions) MentionRole(id uint64) (string, int, bool) {
	switch id {
	case 20:
		return "Mods", 0xe74c3c, true
	case 21:
		return "Plain", 0, true
	}
	return "", 0, false
}

const (
	chipAda     = `<span class="mention" title="1" data-testid="mention-user">@ada &lt;b&gt;</span>`
	chipGeneral = `<span class="mention" title="10" data-testid="mention-channel">#general</span>`
	chipMods    = `<span class="mention" title="20" data-testid="mention-role"><svg class="mention-dot" viewBox="0 0 2 2" aria-hidden="true" focusable="false"><circle cx="1" cy="1" r="1" fill="#e74c3c"></circle></svg>@Mods</span>`
	chipPlain   = `<span class="mention" title="21" data-testid="mention-role">@Plain</span>`
	chipUnknown = `<span class="mention mention-unknown" title="132345678901234567" data-testid="mention-user">@unknown user 1323…</span>`
)

func p(s string) string { return `<div class="dt-p">` + s + `</div>` }

func TestDiscordHTML(t *testing.T) {
	tests := []struct {
		name, in string
		markdown bool
		want     string
	}{
		// Mentions, in both modes.
		{"user", "hi <@1>!", false, "hi " + chipAda + "!"},
		{"user with !", "<@!1>", false, chipAda},
		{"channel", "in <#10>", false, "in " + chipGeneral},
		{"role with colour", "<@&20>", false, chipMods},
		{"role without colour", "<@&21>", false, chipPlain},
		{"unknown user", "<@132345678901234567>", false, chipUnknown},
		{"unknown channel", "<#99>", false, `<span class="mention mention-unknown" title="99" data-testid="mention-channel">#unknown channel 99</span>`},
		{"unknown role", "<@&123456>", false, `<span class="mention mention-unknown" title="123456" data-testid="mention-role">@unknown role 1234…</span>`},
		{"custom emoji", "<:party:123> <a:wave:45>", false, `<span class="dt-emoji" title="123">:party:</span> <span class="dt-emoji" title="45">:wave:</span>`},
		{"not a mention", "<@x> <@> <#1a> <@&> a < b > c", false, "&lt;@x&gt; &lt;@&gt; &lt;#1a&gt; &lt;@&amp;&gt; a &lt; b &gt; c"},
		{"overflowing id", "<@99999999999999999999>", false, "&lt;@99999999999999999999&gt;"},
		{"mentions mode leaves markdown", "**a** `b`", false, "**a** `b`"},
		{"mention in markdown", "**<@1>**", true, p("<strong>" + chipAda + "</strong>")},

		// Markdown.
		{"plain", "hello", true, p("hello")},
		{"bold", "a **b** c", true, p("a <strong>b</strong> c")},
		{"italics with stars", "*b*", true, p("<em>b</em>")},
		{"italics with underscores", "_b_", true, p("<em>b</em>")},
		{"snake_case is no italics", "snake_case_name", true, p("snake_case_name")},
		{"underline", "__b__", true, p("<u>b</u>")},
		{"strike", "~~b~~", true, p("<s>b</s>")},
		{"bold italics", "***b***", true, p("<strong><em>b</em></strong>")},
		{"nested", "**bold *it* __u__**", true, p("<strong>bold <em>it</em> <u>u</u></strong>")},
		{"star before space opens nothing", "a * b * c", true, p("a * b * c")},
		{"inline code", "run `**x** <@1>` now", true, p(`run <code class="dt-code">**x** &lt;@1&gt;</code> now`)},
		{"double backtick code", "``a`b``", true, p(`<code class="dt-code">a` + "`" + `b</code>`)},
		{"code block", "see\n```go\nfmt.Println(\"**x**\")\n```\nafter", true,
			p("see") + `<pre class="dt-pre"><code>fmt.Println(&#34;**x**&#34;)</code></pre>` + p("after")},
		{"one-line code block", "```<@1> _x_```", true, `<pre class="dt-pre"><code>&lt;@1&gt; _x_</code></pre>`},
		{"quote", "> one\n> **two**\nthree", true, `<blockquote class="dt-quote">one<br><strong>two</strong></blockquote>` + p("three")},
		{"quote the rest", ">>> a\nb", true, `<blockquote class="dt-quote">a<br>b</blockquote>`},
		{"bullet list", "- a\n- *b*", true, `<ul class="dt-list"><li>a</li><li><em>b</em></li></ul>`},
		{"numbered list", "1. a\n2. b", true, `<ol class="dt-list"><li>a</li><li>b</li></ol>`},
		{"line breaks", "a\n\nb", true, p("a<br><br>b")},
		{"CRLF line breaks", "a\r\n```\r\ncode\r\n```\r\n> q\r\n- i", true,
			p("a") + `<pre class="dt-pre"><code>code</code></pre><blockquote class="dt-quote">q</blockquote><ul class="dt-list"><li>i</li></ul>`},
		{"escaped marker", `\*not\*`, true, p("*not*")},
		{"links stay text", "[x](javascript:alert(1)) https://e.example/", true, p("[x](javascript:alert(1)) https://e.example/")},

		// Unterminated markers are text.
		{"unterminated bold", "**a", true, p("**a")},
		{"unterminated code", "`a", true, p("`a")},
		{"unterminated code block", "```a\n**b**", true, p("```a<br><strong>b</strong>")},
		{"unterminated underline", "__a_", true, p("__a_")},

		// Hostile input is text.
		{"script", "<script>alert(1)</script>", true, p("&lt;script&gt;alert(1)&lt;/script&gt;")},
		{"mention then tag", "<@1><img src=x onerror=alert(1)>", true, p(chipAda + "&lt;img src=x onerror=alert(1)&gt;")},
		{"quotes and ampersands", `"a" & 'b'`, false, "&#34;a&#34; &amp; &#39;b&#39;"},
		{"tag in code block", "```\n</code></pre><script>x</script>\n```", true, `<pre class="dt-pre"><code>&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;x&lt;/script&gt;</code></pre>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DiscordHTML(tt.in, testMentions{}, tt.markdown); got != tt.want {
				t.Errorf("DiscordHTML(%q, markdown=%v)\n got %s\nwant %s", tt.in, tt.markdown, got, tt.want)
			}
		})
	}
}

func TestDiscordHTMLNilMentions(t *testing.T) {
	got := DiscordHTML("<@132345678901234567>", nil, true)
	if want := p(chipUnknown); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// discordAllowed are the elements the renderer writes and their
// attributes.
var discordAllowed = map[string][]string{
	"div": {"class"}, "br": nil, "strong": nil, "em": nil, "u": nil, "s": nil,
	"code": {"class"}, "pre": {"class"}, "blockquote": {"class"}, "ul": {"class"}, "ol": {"class"}, "li": nil,
	"span": {"class", "title", "data-testid"}, "svg": {"class", "viewBox", "aria-hidden", "focusable"},
	"circle": {"cx", "cy", "r", "fill"},
}

var (
	digitsOnly = regexp.MustCompile(`^[0-9]+$`)
	hexColour  = regexp.MustCompile(`^#[0-9a-f]{6}$`)
)

var fenceLanguage = regexp.MustCompile("```[a-zA-Z0-9_+\\-.#]+\n")

func FuzzDiscordText(f *testing.F) {
	for _, s := range []string{
		"hello **world**", "<@1> <#10> <@&20> <@&21> <@999>", "```go\nx\n```", "> q\n- a\n1. b",
		"<script>alert(1)</script>", "<@1><img onerror=alert(1)>", "***a*** __u__ ~~s~~ `c` _i_",
		"**unterminated", "`", "```", "<:e:1>", `\*x\*`, ">>> a\nb", "a_b_c", "<@&20\">", "<svg onload=x>",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, in string, markdown bool) {
		out := DiscordHTML(in, testMentions{}, markdown)
		doc, err := html.Parse(strings.NewReader("<body>" + out))
		if err != nil {
			t.Fatalf("parse %q: %v", out, err)
		}
		var text strings.Builder
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			switch n.Type {
			case html.ElementNode:
				if n.Data != "html" && n.Data != "head" && n.Data != "body" {
					allowed, ok := discordAllowed[n.Data]
					if !ok {
						t.Fatalf("DiscordHTML(%q) wrote <%s>: %s", in, n.Data, out)
					}
					for _, a := range n.Attr {
						if !strings.Contains(" "+strings.Join(allowed, " ")+" ", " "+a.Key+" ") {
							t.Fatalf("DiscordHTML(%q) wrote <%s %s>: %s", in, n.Data, a.Key, out)
						}
						if (a.Key == "title" && !digitsOnly.MatchString(a.Val)) || (a.Key == "fill" && !hexColour.MatchString(a.Val)) {
							t.Fatalf("DiscordHTML(%q) wrote <%s %s=%q>: %s", in, n.Data, a.Key, a.Val, out)
						}
					}
				}
			case html.TextNode:
				text.WriteString(n.Data)
			case html.CommentNode, html.DoctypeNode:
				t.Fatalf("DiscordHTML(%q) wrote a comment or doctype: %s", in, out)
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(doc)
		// Every letter of the text is shown, in order (a code block's
		// language line is not, as in Discord).
		shown := []rune(text.String())
		k := 0
		for _, r := range fenceLanguage.ReplaceAllString(in, "") {
			if !unicode.IsLetter(r) {
				continue
			}
			for k < len(shown) && shown[k] != r {
				k++
			}
			if k == len(shown) {
				t.Fatalf("DiscordHTML(%q) lost %q: %s", in, r, out)
			}
			k++
		}
	})
}
