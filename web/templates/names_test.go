package templates

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestNameRef: a known id shows as its name with the id in the title and
// the copy button; an unknown one as "unknown <kind> <digits>…", never a
// bare number; hostile names are escaped.
func TestNameRef(t *testing.T) {
	const id = "1323456789012345678"
	for _, tc := range []struct {
		name    string
		in      Name
		want    []string
		notWant []string
	}{
		{name: "channel with category", in: Name{Kind: KindChannel, ID: id, Known: true, Label: "general", Detail: "Text Channels"},
			want: []string{`<span class="name-text">#general</span>`, `title="#general in Text Channels · channel id ` + id + `"`,
				`data-copy="` + id + `"`, `data-testid="name-channel"`}},
		{name: "role with colour", in: Name{Kind: KindRole, ID: id, Known: true, Label: "Moderators", Color: "#3498db"},
			want: []string{`>@Moderators</span>`, `fill="#3498db"`, `title="@Moderators · role id ` + id + `"`}},
		{name: "role without colour has no dot", in: Name{Kind: KindRole, ID: id, Known: true, Label: "Crew"},
			want: []string{`>@Crew</span>`}, notWant: []string{`<svg`}},
		{name: "member with username", in: Name{Kind: KindMember, ID: id, Known: true, Label: "Ada", Detail: "ada.l"},
			want: []string{`<span class="name-text">Ada</span>`, `>@ada.l</span>`, `title="Ada (@ada.l) · member id ` + id + `"`}},
		{name: "guild with icon", in: Name{Kind: KindGuild, ID: id, Known: true, Label: "Kimi HQ", IconURL: "https://cdn.discordapp.com/icons/1/a.png"},
			want: []string{`<img class="name-icon" src="https://cdn.discordapp.com/icons/1/a.png"`, `>Kimi HQ</span>`}},
		{name: "guild icon off Discord's CDN is not shown", in: Name{Kind: KindGuild, ID: id, Known: true, Label: "G", IconURL: "https://evil.example/x.png"},
			notWant: []string{`<img`}},
		{name: "unknown channel", in: Name{Kind: KindChannel, ID: id},
			want:    []string{`class="name name-channel name-unknown"`, `>unknown channel 1323…</span>`, `title="channel id ` + id + `"`, `data-copy="` + id + `"`},
			notWant: []string{`>` + id + `<`}},
		{name: "unknown member", in: Name{Kind: KindMember, ID: "42"}, want: []string{`>unknown member 42</span>`}},
		{name: "hostile name escaped", in: Name{Kind: KindMember, ID: id, Known: true, Label: `<script>alert(1)</script>`, Detail: `"><img src=x>`},
			want:    []string{`&lt;script&gt;alert(1)&lt;/script&gt;`, `@&#34;&gt;&lt;img src=x&gt;`},
			notWant: []string{`<script>`, `<img src=x>`}},
		{name: "empty id renders nothing", in: Name{Kind: KindChannel}, notWant: []string{`<span`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := NameRef(tc.in).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %s\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("has %s\n%s", w, got)
				}
			}
		})
	}
}
