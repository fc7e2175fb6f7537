package tasks

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kimiapp/kimi/app/internal/chunk"
)

// FuzzChunk: Chunk never panics; every chunk is at most MaxChunk code
// points and never splits a code point of valid input; the chunks are
// numbered in order; without the fence repairs they join back to the
// neutralised content; a repair is only ever a closing ``` at the end and
// a reopening ```lang at the start of the next chunk.
func FuzzChunk(f *testing.F) {
	seeds := []string{
		"",
		"a",
		strings.Repeat("a", 2000),
		strings.Repeat("a", 2001),
		strings.Repeat("😀", 2500),
		strings.Repeat("漢字 ", 900),
		"```go\n" + strings.Repeat("x := 1\n", 600) + "```\nafter",
		"```\n" + strings.Repeat("y", 5000),
		strings.Repeat("```py\nprint(1)\n```\n\n", 300),
		"@everyone " + strings.Repeat("@here ", 700),
		"```" + strings.Repeat("l", 3000) + "\ncode\n```",
		strings.Repeat("para\n\n", 800),
		"\xff\xfe" + strings.Repeat("\xe6\xbc", 1500),
		strings.Repeat(" ", 2100),
		strings.Repeat("\n", 2100),
		strings.Repeat("`", 4100),
	}
	for _, s := range seeds {
		f.Add(s, uint16(0))
	}
	f.Fuzz(func(t *testing.T, s string, repeat uint16) {
		if repeat > 0 && len(s) > 0 {
			s = strings.Repeat(s, 1+int(repeat)%(70000/len(s)+1))
		}
		chunks := Chunk(Post{ChannelID: 3, Content: s})
		pieces := chunk.Split(Neutralize(s), MaxChunk)
		var all, kept strings.Builder
		for _, p := range pieces {
			all.WriteString(p.Body)
			if len(pieces) == 1 || p.Reopen != "" || strings.TrimSpace(p.Body) != "" {
				kept.WriteString(p.Body)
			}
		}
		if kept.Len() == 0 { // all whitespace: the first piece stands
			kept.WriteString(pieces[0].Body)
		}
		if all.String() != Neutralize(s) {
			t.Fatal("the pieces do not join back to the content, in order")
		}
		if len(chunks) == 0 {
			t.Fatal("no chunks")
		}
		var joined strings.Builder
		for i, c := range chunks {
			if c.Index != i || c.Total != len(chunks) {
				t.Fatalf("chunk %d says %d/%d", i, c.Index, c.Total)
			}
			if n := utf8.RuneCountInString(c.Content); n > MaxChunk {
				t.Fatalf("chunk %d is %d code points", i, n)
			}
			if utf8.ValidString(s) && !utf8.ValidString(c.Content) {
				t.Fatalf("chunk %d splits a code point", i)
			}
			if !strings.HasPrefix(c.Content, c.reopen) || !strings.HasSuffix(c.Content, c.closed) {
				t.Fatalf("chunk %d: repairs not at its ends", i)
			}
			if c.closed != "" && c.closed != "```" && c.closed != "\n```" {
				t.Fatalf("chunk %d closed with %q", i, c.closed)
			}
			if (c.closed != "") != (i+1 < len(chunks) && chunks[i+1].reopen != "") {
				t.Fatalf("chunk %d closes %q but the next reopens differently", i, c.closed)
			}
			if c.reopen != "" && (i == 0 || !strings.HasPrefix(c.reopen, "```") || !strings.HasSuffix(c.reopen, "\n")) {
				t.Fatalf("chunk %d reopened with %q", i, c.reopen)
			}
			if len(chunks) > 1 && strings.TrimSpace(c.Content) == "" {
				t.Fatalf("chunk %d is only whitespace", i)
			}
			if (c.Embed != nil || c.Files != nil) && i > 0 {
				t.Fatalf("chunk %d carries the embed or files", i)
			}
			joined.WriteString(strings.TrimSuffix(strings.TrimPrefix(c.Content, c.reopen), c.closed))
		}
		if joined.String() != kept.String() {
			t.Fatal("the chunks are not the pieces less those of only whitespace, in order")
		}
	})
}
