package guildcfg

import (
	"slices"
	"testing"
)

// changedLines is the hunks' changed lines as "-text" and "+text".
func changedLines(hunks []Hunk) []string {
	var out []string
	for _, h := range hunks {
		for _, l := range h.Lines {
			if l.Op != DiffContext {
				out = append(out, string(l.Op)+l.Text)
			}
		}
	}
	return out
}

// TestDiffDocuments: the diff compares the parsed documents in canonical
// key order, so keys a module only re-serialised in another order (at any
// depth) are no change, a real change is shown alone, and a document that
// does not parse is compared as text.
func TestDiffDocuments(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          []string // the changed lines, in order
		wantCanonical bool
	}{
		{name: "reordered top-level keys", wantCanonical: true,
			before: "---\nbot_active: true\nstaff_role_ids: [1, 2]\nproposal_channel_id: 5\n---\n",
			after:  "---\nproposal_channel_id: 5\nbot_active: true\nstaff_role_ids: [1, 2]\n---\n"},
		{name: "reordered nested keys", wantCanonical: true,
			before: "---\ntasks:\n  max: 3\n  allowed: [a]\nlimit: 7\n---\nbody\n",
			after:  "---\nlimit: 7\ntasks:\n  allowed: [a]\n  max: 3\n---\nbody\n"},
		{name: "reordered keys and one real change", wantCanonical: true,
			before: "---\na: 1\nb: two\nc: true\n---\n",
			after:  "---\nc: true\nb: three\na: 1\n---\n",
			want:   []string{"-b: two", "+b: three"}},
		{name: "a key added among reordered ones", wantCanonical: true,
			before: "---\nz: 1\ny: 2\n---\n",
			after:  "---\ny: 2\nx: 0\nz: 1\n---\n",
			want:   []string{"+x: 0"}},
		{name: "a changed body", wantCanonical: true,
			before: "---\nb: 1\na: 2\n---\nold text\n",
			after:  "---\na: 2\nb: 1\n---\nnew text\n",
			want:   []string{"-old text", "+new text"}},
		{name: "a new document", wantCanonical: true,
			before: "",
			after:  "---\nb: 1\na: 2\n---\n",
			want:   []string{"+---", "+a: 2", "+b: 1", "+---"}},
		{name: "a list's order is a change", wantCanonical: true,
			before: "---\nids: [1, 2]\n---\n",
			after:  "---\nids: [2, 1]\n---\n",
			want:   []string{"-ids: [1, 2]", "+ids: [2, 1]"}},
		{name: "an unparsable side is compared as text",
			before: "---\nb: 1\na: 2\n---\n",
			after:  "---\na: 2\nb: [1\n---\n",
			want:   []string{"-b: 1", "+b: [1"}}, // a: 2 stays put: text order
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hunks, canonical := DiffDocuments(tt.before, tt.after)
			if canonical != tt.wantCanonical {
				t.Errorf("canonical = %v, want %v", canonical, tt.wantCanonical)
			}
			if got := changedLines(hunks); !slices.Equal(got, tt.want) {
				t.Errorf("changed lines = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCanonicalDocument: the canonical text orders keys, keeps comments,
// styles and the body, and is a fixed point.
func TestCanonicalDocument(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "no frontmatter", in: "just text\n", want: "just text\n"},
		{name: "empty frontmatter", in: "---\n---\nbody\n", want: "---\n---\nbody\n"},
		{name: "keys sorted, comment and quotes kept", in: "---\nz: \"quoted\" # why\na: [1, 2]\n---\nbody\n",
			want: "---\na: [1, 2]\nz: \"quoted\" # why\n---\nbody\n"},
		{name: "nested", in: "---\nm:\n    y: 1\n    x: 2\n---\n", want: "---\nm:\n  x: 2\n  y: 1\n---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := CanonicalDocument(tt.in)
			if !ok || got != tt.want {
				t.Fatalf("CanonicalDocument = %q, %v; want %q", got, ok, tt.want)
			}
			if again, _ := CanonicalDocument(got); again != got {
				t.Errorf("not a fixed point: %q → %q", got, again)
			}
		})
	}
}

// TestChangedKeys: the keys a write added, changed and removed, compared
// as parsed (a reordered or re-quoted key is no change), and the body.
func TestChangedKeys(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          KeyChanges
		bad           bool
	}{
		{name: "created", before: "", after: "---\nb: 1\na: x\n---\n", want: KeyChanges{Added: []string{"a", "b"}, Body: false}},
		{name: "reordered and re-quoted", before: "---\na: x\nb: 1\n---\n", after: "---\nb: 1\na: \"x\"\n---\n"},
		{name: "one of each", before: "---\na: 1\nb: 2\nc: 3\n---\nold\n", after: "---\nd: 4\nb: 2\na: 9\n---\nnew\n",
			want: KeyChanges{Added: []string{"d"}, Changed: []string{"a"}, Removed: []string{"c"}, Body: true}},
		{name: "unparsable", before: "---\na: [\n---\n", after: "---\na: 1\n---\n", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ChangedKeys(tt.before, tt.after)
			if ok == tt.bad {
				t.Fatalf("ok = %v, want %v", ok, !tt.bad)
			}
			if !slices.Equal(got.Added, tt.want.Added) || !slices.Equal(got.Changed, tt.want.Changed) ||
				!slices.Equal(got.Removed, tt.want.Removed) || got.Body != tt.want.Body {
				t.Errorf("ChangedKeys = %+v, want %+v", got, tt.want)
			}
		})
	}
}
