package guildcfg

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxDocumentBytes bounds a document's UTF-8 text, as the original bounds a
// proposed fragment (sdk.MaxProposalContentBytes).
const MaxDocumentBytes = 1_000_000

// maxYAMLDepth bounds nesting in frontmatter; the documents need three
// levels (a key, a policy mapping, a list).
const maxYAMLDepth = 16

// Frontmatter is a document split into its parsed YAML frontmatter and the
// text after it.
type Frontmatter struct {
	// Present reports whether the document starts with a "---" line.
	Present bool
	// Values holds the top-level keys: nil (YAML null), bool, json.Number
	// (a decimal integer, exactly as written), float64, string, []any or
	// map[string]any.
	Values map[string]any
	// Keys lists the top-level keys in document order.
	Keys []string
	// Lines maps each top-level key to its 1-based line in the document.
	Lines map[string]int
	// Body is the text after the closing "---" line (the whole text when
	// there is no frontmatter).
	Body string
}

// ParseFrontmatter checks a document's size and encoding and parses its
// frontmatter strictly: a mapping of text keys, no duplicate keys, no
// anchors, aliases, merge keys or tags, one YAML document. Scalars resolve
// by YAML 1.2's core schema, so only true/false are booleans ("yes" is
// text, where the original's YAML 1.1 reader took it as true: an unquoted
// yes in a boolean field is refused, never guessed). Problems are
// FieldErrors of DocumentField with the line, wrapped in a
// *ValidationError.
func ParseFrontmatter(text string) (Frontmatter, error) {
	fm := Frontmatter{Values: map[string]any{}, Lines: map[string]int{}}
	if len(text) > MaxDocumentBytes {
		return fm, invalid("", MsgTooLarge, []FieldError{{Message: MsgTooLarge}})
	}
	if !utf8.ValidString(text) {
		return fm, invalid("", MsgNotUTF8, []FieldError{{Message: MsgNotUTF8}})
	}
	yamlText, body, present, err := splitFrontmatter(text)
	if err != nil {
		return fm, err
	}
	fm.Present, fm.Body = present, body
	if !present {
		return fm, nil
	}
	// The frontmatter starts on the document's second line.
	p := &yamlWalker{lineOffset: 1}
	if err := p.parse(yamlText, &fm); err != nil {
		return fm, err
	}
	return fm, nil
}

func syntaxError(line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		msg = fmt.Sprintf("%s (line %d)", msg, line)
	}
	return invalid("", msg, []FieldError{{Line: line, Message: msg}})
}

// FrontmatterHasComments reports whether text's frontmatter holds YAML
// comments, which a form that renders the document anew would drop (the
// admin's setup form refuses such a document and points to the raw text).
func FrontmatterHasComments(text string) bool {
	y, _, present, err := splitFrontmatter(text)
	if err != nil || !present {
		return false
	}
	var n yaml.Node
	if yaml.Unmarshal([]byte(y), &n) != nil {
		return false
	}
	var walk func(*yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" {
			return true
		}
		for _, c := range n.Content {
			if walk(c) {
				return true
			}
		}
		return false
	}
	return walk(&n)
}

// splitFrontmatter finds "---\n<yaml>---\n<body>". A document that does not
// start with a "---" line has no frontmatter. Lines may end in "\r\n".
func splitFrontmatter(text string) (yamlText, body string, present bool, err error) {
	first, rest, _ := cutLine(text)
	if !isDelimiter(first) {
		return "", text, false, nil
	}
	for offset := 0; offset < len(rest); {
		line, after, _ := cutLine(rest[offset:])
		if isDelimiter(line) {
			return rest[:offset], after, true, nil
		}
		offset = len(rest) - len(after)
	}
	return "", "", true, syntaxError(1, "frontmatter is not closed by a '---' line")
}

// cutLine splits s after its first "\n"; found is false on the last line.
func cutLine(s string) (line, rest string, found bool) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

func isDelimiter(line string) bool { return strings.TrimRight(line, " \t\r") == "---" }

type yamlWalker struct {
	lineOffset int
	lines      []string // the YAML source, for the non-specific tag check
}

func (w *yamlWalker) line(n *yaml.Node) int {
	if n == nil || n.Line == 0 {
		return 0
	}
	return n.Line + w.lineOffset
}

func (w *yamlWalker) parse(src string, fm *Frontmatter) error {
	w.lines = strings.Split(src, "\n")
	dec := yaml.NewDecoder(strings.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // only comments or nothing: an empty mapping
		}
		return w.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return w.yamlError(err)
		}
		return syntaxError(w.line(&extra), "frontmatter must be a single YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	if err := w.check(root); err != nil {
		return err
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil // "---\n~\n---" or an empty frontmatter
	}
	if root.Kind != yaml.MappingNode {
		return syntaxError(w.line(root), "frontmatter must be a mapping of keys to values")
	}
	values, err := w.mapping(root, 1, func(key string, keyNode *yaml.Node) {
		fm.Keys = append(fm.Keys, key)
		fm.Lines[key] = w.line(keyNode)
	})
	if err != nil {
		return err
	}
	fm.Values = values
	return nil
}

// yamlLineRE finds the parser's "line N" so it can be shifted to the
// document's numbering.
var yamlLineRE = regexp.MustCompile(`line ([0-9]+)`)

func (w *yamlWalker) yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		line = n + w.lineOffset
		msg = msg[:m[2]] + strconv.Itoa(line) + msg[m[3]:]
	}
	msg = "invalid YAML frontmatter: " + msg
	return invalid("", msg, []FieldError{{Line: line, Message: msg}})
}

// check refuses what the documents never need and a strict reader must not
// guess about: anchors, aliases and explicit tags.
func (w *yamlWalker) check(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.AliasNode:
		return syntaxError(w.line(n), "YAML aliases are not allowed")
	case n.Anchor != "":
		return syntaxError(w.line(n), "YAML anchors are not allowed")
	case n.Style&yaml.TaggedStyle != 0:
		return syntaxError(w.line(n), "YAML tags are not allowed (%s)", n.Tag)
	case w.startsWithBang(n):
		// The non-specific tag "!" leaves no trace on the node (the library
		// reads the value as untagged, while YAML 1.2 reads "! true" as a
		// string), but the node starts at it: no untagged node can start
		// with "!" (plain scalars cannot, quoted ones start with a quote).
		return syntaxError(w.line(n), "YAML tags are not allowed (!)")
	}
	return nil
}

// startsWithBang reports whether n's source position holds a "!".
func (w *yamlWalker) startsWithBang(n *yaml.Node) bool {
	if n.Line < 1 || n.Line > len(w.lines) || n.Column < 1 {
		return false
	}
	line := []rune(w.lines[n.Line-1])
	return n.Column-1 < len(line) && line[n.Column-1] == '!'
}

func (w *yamlWalker) value(n *yaml.Node, depth int) (any, error) {
	if err := w.check(n); err != nil {
		return nil, err
	}
	if depth > maxYAMLDepth {
		return nil, syntaxError(w.line(n), "frontmatter nests deeper than %d levels", maxYAMLDepth)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return resolveScalar(n), nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := w.value(item, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return w.mapping(n, depth, nil)
	}
	return nil, syntaxError(w.line(n), "unsupported YAML node")
}

func (w *yamlWalker) mapping(n *yaml.Node, depth int, seen func(string, *yaml.Node)) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := w.check(k); err != nil {
			return nil, err
		}
		if k.Kind != yaml.ScalarNode {
			return nil, syntaxError(w.line(k), "frontmatter keys must be text")
		}
		if k.Tag == "!!merge" {
			return nil, syntaxError(w.line(k), "YAML merge keys are not allowed")
		}
		key := k.Value
		if _, dup := out[key]; dup {
			return nil, syntaxError(w.line(k), "duplicate key %s", quoteKey(key))
		}
		val, err := w.value(v, depth+1)
		if err != nil {
			return nil, err
		}
		out[key] = val
		if seen != nil {
			seen(key, k)
		}
	}
	return out, nil
}

func quoteKey(k string) string { return strconv.Quote(k) }

var (
	intRE   = regexp.MustCompile(`\A[-+]?[0-9]+\z`)
	floatRE = regexp.MustCompile(`\A[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\z`)
)

// resolveScalar applies YAML 1.2's core schema to a plain scalar; quoted
// and block scalars are always text. Integers stay json.Number so ids keep
// every digit (and a sign stays visible to the id check).
func resolveScalar(n *yaml.Node) any {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Value
	}
	v := n.Value
	switch v {
	case "", "~", "null", "Null", "NULL":
		return nil
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1)
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1)
	case ".nan", ".NaN", ".NAN":
		return math.NaN()
	}
	if intRE.MatchString(v) {
		return json.Number(v)
	}
	if floatRE.MatchString(v) {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return v
}
