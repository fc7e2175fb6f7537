package guildcfg

import (
	"bytes"
	"cmp"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CanonicalDocument is text with its frontmatter re-emitted in canonical
// key order: every mapping's keys in ascending byte order, at every level,
// as block YAML indented by two spaces, each value with its own style and
// comments, and the body after the closing "---" unchanged. Two documents
// that differ only in the order of their keys have the same canonical
// text. ok is false (text returned as it is) when the frontmatter does not
// parse by ParseFrontmatter's strict rules; a document without
// frontmatter is its own canonical text.
func CanonicalDocument(text string) (string, bool) {
	fm, err := ParseFrontmatter(text)
	if err != nil {
		return text, false
	}
	if !fm.Present {
		return text, true
	}
	yamlText, body, _, err := splitFrontmatter(text)
	if err != nil {
		return text, false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(yamlText), &doc); err != nil {
		return text, false
	}
	var out strings.Builder
	out.WriteString("---\n")
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode && len(doc.Content[0].Content) > 0 {
		sortKeys(doc.Content[0])
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return text, false
		}
		if err := enc.Close(); err != nil {
			return text, false
		}
		out.Write(buf.Bytes())
	}
	out.WriteString("---\n")
	out.WriteString(body)
	return out.String(), true
}

// sortKeys orders every mapping under n by key (a stable sort: the parser
// refuses duplicate keys, so the order is total).
func sortKeys(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		type pair struct{ k, v *yaml.Node }
		pairs := make([]pair, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			pairs = append(pairs, pair{n.Content[i], n.Content[i+1]})
		}
		slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(a.k.Value, b.k.Value) })
		n.Content = n.Content[:0]
		for _, p := range pairs {
			n.Content = append(n.Content, p.k, p.v)
		}
	}
	for _, c := range n.Content {
		sortKeys(c)
	}
}

// DiffDocuments compares two documents as parsed rather than as text: when
// both parse, both sides are their CanonicalDocument (canonical is true),
// so a key only moved elsewhere is no change and the hunks hold only what
// differs; otherwise it is Diff of the texts as they are.
func DiffDocuments(before, after string) (hunks []Hunk, canonical bool) {
	cb, okB := CanonicalDocument(before)
	ca, okA := CanonicalDocument(after)
	if !okB || !okA {
		return Diff(before, after), false
	}
	return Diff(cb, ca), true
}

// KeyChanges is what a write changed, by top-level frontmatter key.
type KeyChanges struct {
	Added, Changed, Removed []string
	// Body is true when the text after the frontmatter changed.
	Body bool
}

// ChangedKeys compares two documents' parsed frontmatter key by key (each
// list in ascending order); ok is false when either does not parse. A
// document that does not exist is "".
func ChangedKeys(before, after string) (KeyChanges, bool) {
	b, errB := ParseFrontmatter(before)
	a, errA := ParseFrontmatter(after)
	if errB != nil || errA != nil {
		return KeyChanges{}, false
	}
	var kc KeyChanges
	for k, av := range a.Values {
		bv, had := b.Values[k]
		switch {
		case !had:
			kc.Added = append(kc.Added, k)
		case !reflect.DeepEqual(av, bv):
			kc.Changed = append(kc.Changed, k)
		}
	}
	for k := range b.Values {
		if _, has := a.Values[k]; !has {
			kc.Removed = append(kc.Removed, k)
		}
	}
	slices.Sort(kc.Added)
	slices.Sort(kc.Changed)
	slices.Sort(kc.Removed)
	kc.Body = b.Body != a.Body
	return kc, true
}
