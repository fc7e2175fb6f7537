package tasks

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// joinBodies strips the fence repairs Chunk added and joins the rest.
func joinBodies(t *testing.T, chunks []PostChunk) string {
	t.Helper()
	var b strings.Builder
	for i, c := range chunks {
		if !strings.HasPrefix(c.Content, c.reopen) || !strings.HasSuffix(c.Content, c.closed) {
			t.Fatalf("chunk %d: repairs %q/%q are not at its ends: %q", i, c.reopen, c.closed, c.Content)
		}
		b.WriteString(strings.TrimSuffix(strings.TrimPrefix(c.Content, c.reopen), c.closed))
	}
	return b.String()
}

// head and tail quote the first or last n bytes of chunk i, if it exists.
func head(chunks []PostChunk, i, n int) string {
	if i >= len(chunks) {
		return "(no chunk)"
	}
	return chunks[i].Content[:min(n, len(chunks[i].Content))]
}

func tail(chunks []PostChunk, i, n int) string {
	if i >= len(chunks) {
		return "(no chunk)"
	}
	c := chunks[i].Content
	return c[max(0, len(c)-n):]
}

// fenceBalanced: a chunk holds an even number of ``` (Discord reads
// them anywhere in the text).
func fenceBalanced(content string) bool { return strings.Count(content, "```")%2 == 0 }

func TestChunkSizes(t *testing.T) {
	words := func(n int) string { // n code points of 9-letter words and spaces
		return strings.Repeat("abcdefghi ", n/10) + strings.Repeat("x", n%10)
	}
	tests := []struct {
		name    string
		content string
		want    []int // code points of each chunk
		blank   bool  // a chunk of only whitespace is left out
	}{
		{"one character", "a", []int{1}, false},
		{"exactly 2,000", strings.Repeat("a", 2000), []int{2000}, false},
		{"2,001 without spaces is cut at the limit", strings.Repeat("a", 2001), []int{2000, 1}, false},
		{"2,001 of words is cut after the last space", words(2001), []int{2000, 1}, false},
		{"60,000 is 30 chunks", strings.Repeat("a", 60000), slices.Repeat([]int{2000}, 30), false},
		{"60,000 of words is 30 chunks", words(60000), slices.Repeat([]int{2000}, 30), false},
		{"emoji count one each", strings.Repeat("😀", 2001), []int{2000, 1}, false},
		{"flag emoji are two code points", strings.Repeat("🇩🇪", 1000) + "x", []int{2000, 1}, false},
		{"CJK", strings.Repeat("漢字", 1500), []int{2000, 1000}, false},
		{"paragraph before line", strings.Repeat("a", 1500) + "\n\n" + strings.Repeat("b", 200) + "\n" + strings.Repeat("c", 400), []int{1502, 601}, false},
		{"line before word", strings.Repeat("a", 1500) + "\n" + strings.Repeat("b", 200) + " " + strings.Repeat("c", 400), []int{1501, 601}, false},
		{"a chunk of only whitespace is left out", "a" + strings.Repeat(" ", 4500) + "b", []int{2000, 502}, true},
		{"an early paragraph break loses to a late line break", strings.Repeat("a", 100) + "\n\n" + strings.Repeat("b", 1700) + "\n" + strings.Repeat("c", 400), []int{1803, 400}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := Chunk(Post{ChannelID: 1, Content: tt.content})
			var got []int
			for i, c := range chunks {
				got = append(got, utf8.RuneCountInString(c.Content))
				if !utf8.ValidString(c.Content) {
					t.Errorf("chunk %d is not valid UTF-8", i)
				}
				if c.Index != i || c.Total != len(chunks) {
					t.Errorf("chunk %d says %d/%d", i, c.Index, c.Total)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("chunk sizes %v, want %v", got, tt.want)
			}
			j, want := joinBodies(t, chunks), tt.content
			if tt.blank {
				j, want = strings.Join(strings.Fields(j), " "), strings.Join(strings.Fields(want), " ")
				if len(joinBodies(t, chunks)) >= len(tt.content) {
					t.Errorf("no whitespace chunk was left out")
				}
			}
			if j != want {
				t.Errorf("chunks do not join back to the content")
			}
		})
	}
}

func TestChunkCodeFence(t *testing.T) {
	code := strings.Repeat("fmt.Println(1)\n", 200) // 3,000 code points
	content := "Before\n```go\n" + code + "```\nAfter"
	chunks := Chunk(Post{ChannelID: 1, Content: content})
	if len(chunks) != 2 {
		t.Fatalf("%d chunks, want 2", len(chunks))
	}
	first, second := chunks[0].Content, chunks[1].Content
	if !strings.HasSuffix(first, "\n```") || !strings.HasPrefix(first, "Before\n```go\n") {
		t.Errorf("first chunk does not close the block: ...%q", first[len(first)-20:])
	}
	if !strings.HasPrefix(second, "```go\nfmt.Println(1)\n") || !strings.HasSuffix(second, "```\nAfter") {
		t.Errorf("second chunk does not reopen the block with its language: %q...", second[:20])
	}
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c.Content); n > MaxChunk {
			t.Errorf("chunk %d is %d code points", i, n)
		}
		if !fenceBalanced(c.Content) {
			t.Errorf("chunk %d leaves a code block open", i)
		}
	}
	if joinBodies(t, chunks) != content {
		t.Error("chunks do not join back to the content")
	}

	// Discord reads ``` anywhere, not only at a line's start: a block
	// opened inside a line is repaired too.
	inline := "see ```py\n" + strings.Repeat("print(1) ", 300) + "``` done"
	chunks = Chunk(Post{Content: inline})
	if len(chunks) != 2 || !strings.HasSuffix(chunks[0].Content, "\n```") || !strings.HasPrefix(chunks[1].Content, "```py\nprint(1)") {
		t.Errorf("inline block not repaired: %d chunks", len(chunks))
	}
	for i, c := range chunks {
		if !fenceBalanced(c.Content) {
			t.Errorf("chunk %d leaves an inline block open", i)
		}
	}

	// A cut that would leave a block empty in its chunk moves before the
	// opening delimiter.
	late := strings.Repeat("w ", 990) + "```go\n" + strings.Repeat("x", 100) + "```"
	chunks = Chunk(Post{Content: late})
	if len(chunks) != 2 || chunks[0].closed != "" || !strings.HasPrefix(chunks[1].Content, "```go\nxxx") {
		t.Errorf("a chunk opens an empty block: %q / %q", tail(chunks, 0, 12), head(chunks, 1, 8))
	}

	// A cut never splits a delimiter (nor an opening one's language).
	for _, n := range []int{1999, 1998, 1996, 1995} { // the cut at 2,000 falls in ``` , in go, before \n
		split := strings.Repeat("a", n) + "```go\ncode```"
		chunks = Chunk(Post{Content: split})
		want := split[:strings.Index(split, "`")]
		if len(chunks) != 2 || chunks[0].Content != want || chunks[1].Content != strings.TrimPrefix(split, want) {
			t.Errorf("a cut splits a delimiter: %q / %q", tail(chunks, 0, 6), head(chunks, 1, 20))
		}
	}

	// A block that ends before the cut is not repaired.
	plain := "```\nx\n```\n" + strings.Repeat("w ", 1500)
	for i, c := range Chunk(Post{Content: plain}) {
		if c.reopen != "" || c.closed != "" {
			t.Errorf("chunk %d repaired a closed block: %q/%q", i, c.reopen, c.closed)
		}
	}

	// A block without a language reopens as a bare fence; the closing
	// fence fits even when the chunk is cut right at the limit.
	bare := "```\n" + strings.Repeat("y", 4000) + "\n```"
	chunks = Chunk(Post{Content: bare})
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c.Content); n > MaxChunk {
			t.Errorf("chunk %d is %d code points", i, n)
		}
		if !fenceBalanced(c.Content) {
			t.Errorf("chunk %d leaves a code block open: %q", i, c.Content)
		}
	}
	if len(chunks) < 2 || !strings.HasPrefix(chunks[1].Content, "```\ny") {
		t.Errorf("second chunk does not reopen a bare fence: %q", head(chunks, 1, 10))
	}
}

func TestChunkAttachesEmbedFilesAndMentions(t *testing.T) {
	post := Post{
		ChannelID: 7,
		Content:   strings.Repeat("a", 4500),
		Embed:     &Embed{Title: "t"},
		Files:     []Attachment{{Name: "a.txt", Data: []byte("x")}},
		Mentions:  Mentions{Users: []uint64{11}, Roles: []uint64{22}},
	}
	chunks := Chunk(post)
	if len(chunks) != 3 {
		t.Fatalf("%d chunks, want 3", len(chunks))
	}
	for i, c := range chunks {
		if (c.Embed != nil) != (i == 0) || (len(c.Files) > 0) != (i == 0) {
			t.Errorf("chunk %d: embed %v, files %d; want them on the first chunk only", i, c.Embed, len(c.Files))
		}
		am := c.AllowedMentions
		if am.Parse == nil || len(am.Parse) != 0 || !slices.Equal(am.Users, []uint64{11}) || !slices.Equal(am.Roles, []uint64{22}) {
			t.Errorf("chunk %d: allowed mentions %+v", i, am)
		}
		if c.ChannelID != 7 {
			t.Errorf("chunk %d to channel %d", i, c.ChannelID)
		}
	}
}

func TestNeutralize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hi @everyone and @here!", "hi @\u200deveryone and @\u200dhere!"},
		{"@everyone@here", "@\u200deveryone@\u200dhere"},
		{"mail me@here.org", "mail me@\u200dhere.org"},
		{"<@123> <@&456> stay", "<@123> <@&456> stay"},
		{"@someone", "@someone"},
	}
	for _, tt := range tests {
		if got := Neutralize(tt.in); got != tt.want {
			t.Errorf("Neutralize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	chunks := Chunk(Post{Content: "Good morning @everyone, and @here too"})
	if c := chunks[0].Content; strings.Contains(c, "@everyone") || strings.Contains(c, "@here") {
		t.Errorf("chunk still pings: %q", c)
	}
}

func TestOutputValidate(t *testing.T) {
	allowed := Allowed{Destinations: []uint64{100, 101}, Users: []uint64{5}, Roles: []uint64{9}}
	ok := Post{ChannelID: 100, Content: "hello", Mentions: Mentions{Users: []uint64{5}, Roles: []uint64{9}}}
	with := func(f func(p *Post)) Output { p := ok; f(&p); return Output{Posts: []Post{p}} }
	tests := []struct {
		name string
		out  Output
		want []string // substrings of the error; none means valid
	}{
		{"valid", Output{Posts: []Post{ok}}, nil},
		{"60,000 characters", with(func(p *Post) { p.Content = strings.Repeat("é", 60000) }), nil},
		{"no posts", Output{}, []string{"tasks: the output has no posts"}},
		{"11 posts", Output{Posts: slices.Repeat([]Post{ok}, 11)}, []string{"11 posts, at most 10"}},
		{"other destination", with(func(p *Post) { p.ChannelID = 200 }), []string{"post 1: channel 200 is not one of the task's destinations"}},
		{"unlisted user", with(func(p *Post) { p.Mentions.Users = []uint64{5, 6} }), []string{"user 6 may not be mentioned"}},
		{"unlisted role", with(func(p *Post) { p.Mentions.Roles = []uint64{8} }), []string{"role 8 may not be mentioned"}},
		{"empty content", with(func(p *Post) { p.Content = " \n" }), []string{"the content is empty"}},
		{"60,001 characters", with(func(p *Post) { p.Content = strings.Repeat("a", 60001) }), []string{"60001 characters, more than the 60000"}},
		{"invalid UTF-8", with(func(p *Post) { p.Content = "a\xffb" }), []string{"not valid UTF-8"}},
		{"bad file name", with(func(p *Post) { p.Files = []Attachment{{Name: "../x"}} }), []string{"attachment 1 has no valid file name"}},
		{"too many bytes", with(func(p *Post) { p.Files = []Attachment{{Name: "big", Data: make([]byte, MaxOutputFileBytes+1)}} }), []string{"more than the 26214400 bytes"}},
		{"embed URL", with(func(p *Post) { p.Embed = &Embed{Title: "t", URL: "javascript:alert(1)"} }), []string{"not an http or https address"}},
		{"embed title", with(func(p *Post) { p.Embed = &Embed{Title: strings.Repeat("t", 257)} }), []string{"embed title is 257 characters"}},
		{"empty embed", with(func(p *Post) { p.Embed = &Embed{} }), []string{"the embed is empty"}},
		{"every problem at once", with(func(p *Post) { p.ChannelID = 1; p.Mentions.Roles = []uint64{3} }), []string{"channel 1 is not", "role 3 may not"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.out.Validate(allowed)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted it, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestTemplateComposer(t *testing.T) {
	due := time.Date(2026, 12, 24, 23, 30, 0, 0, time.UTC) // Thursday in UTC
	c := TemplateComposer{
		Template: "{weekday} {date} {time}: {task} #{run} {x} {{date}}",
		Embed: &Embed{
			Title: "{task} on {date}", Description: "at {time}", URL: "https://example.org/{date}", Color: 0x3366ff,
			Fields: []EmbedField{{Name: "{weekday}", Value: "run {run}"}},
		},
		Files: []Attachment{{Name: "report.csv", Data: []byte("a,b")}},
	}
	tests := []struct {
		tz, content, title, field string
	}{
		{"Europe/Berlin", "Friday 2026-12-25 00:30: Digest @\u200deveryone #42 {x} {2026-12-25}", "Digest @everyone on 2026-12-25", "Friday"},
		{"America/Los_Angeles", "Thursday 2026-12-24 15:30: Digest @\u200deveryone #42 {x} {2026-12-24}", "Digest @everyone on 2026-12-24", "Thursday"},
		{"", "Thursday 2026-12-24 23:30: Digest @\u200deveryone #42 {x} {2026-12-24}", "Digest @everyone on 2026-12-24", "Thursday"},
	}
	for _, tt := range tests {
		t.Run(tt.tz, func(t *testing.T) {
			run := RunContext{Task: "Digest @everyone", Run: "42", Due: due, Timezone: tt.tz,
				Allowed: Allowed{Destinations: []uint64{1, 2}, Users: []uint64{5}, Roles: []uint64{9}}}
			out, err := c.Compose(context.Background(), run)
			if err != nil {
				t.Fatalf("Compose: %v", err)
			}
			if len(out.Posts) != 2 || out.Posts[0].ChannelID != 1 || out.Posts[1].ChannelID != 2 {
				t.Fatalf("posts %+v, want one to each destination", out.Posts)
			}
			p := out.Posts[0]
			if got := Chunk(p)[0].Content; got != tt.content {
				t.Errorf("content %q, want %q", got, tt.content)
			}
			if p.Embed.Title != tt.title || p.Embed.Fields[0].Name != tt.field || p.Embed.Fields[0].Value != "run 42" || p.Embed.Color != 0x3366ff {
				t.Errorf("embed %+v", p.Embed)
			}
			if !slices.Equal(p.Mentions.Users, []uint64{5}) || !slices.Equal(p.Mentions.Roles, []uint64{9}) || len(p.Files) != 1 {
				t.Errorf("post %+v", p)
			}
		})
	}
	// The template's embed is not changed by composing.
	if c.Embed.Title != "{task} on {date}" || c.Embed.Fields[0].Name != "{weekday}" {
		t.Errorf("Compose changed the template: %+v", c.Embed)
	}

	// Values are not expanded again.
	if out, err := (TemplateComposer{Template: "{task} {run}"}).Compose(context.Background(), RunContext{Task: "{date}", Run: "{time}", Due: due, Allowed: Allowed{Destinations: []uint64{1}}}); err != nil || out.Posts[0].Content != "{date} {time}" {
		t.Errorf("a placeholder in a value was expanded: %+v, %v", out, err)
	}
	if _, err := c.Compose(context.Background(), RunContext{Timezone: "Mars/Olympus", Allowed: Allowed{Destinations: []uint64{1}}}); err == nil || !strings.Contains(err.Error(), `unknown time zone "Mars/Olympus"`) {
		t.Errorf("Compose in an unknown zone: %v", err)
	}
	if _, err := (TemplateComposer{Template: "{task}"}).Compose(context.Background(), RunContext{Allowed: Allowed{Destinations: []uint64{1}}}); err == nil || !strings.Contains(err.Error(), "the content is empty") {
		t.Errorf("Compose of an empty message: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Compose(ctx, RunContext{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Compose after cancel: %v", err)
	}
}

func TestLogLine(t *testing.T) {
	tests := []struct {
		task, outcome, detail, want string
	}{
		{"Digest", "completed", "2 posts sent", "Task Digest: completed. 2 posts sent"},
		{"Digest", "failed", "", "Task Digest: failed."},
	}
	for _, tt := range tests {
		if got := LogLine(tt.task, tt.outcome, tt.detail); got != tt.want {
			t.Errorf("LogLine = %q, want %q", got, tt.want)
		}
	}
	long := LogLine("Digest", "failed", strings.Repeat("漢", 5000))
	if n := utf8.RuneCountInString(long); n != MaxLogLine || !utf8.ValidString(long) || !strings.HasPrefix(long, "Task Digest: failed. 漢") {
		t.Errorf("long log line: %d code points, valid %v", n, utf8.ValidString(long))
	}
}
