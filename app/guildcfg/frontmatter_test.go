package guildcfg

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in   string
		want Target
		bad  bool
	}{
		{in: "guild:1", want: GuildTarget(1)},
		{in: "guild:18446744073709551615", want: GuildTarget(18446744073709551615)},
		{in: "channel:42", want: ChannelTarget(42)},
		{in: "guild:42:alpha", want: GuildModuleTarget(42, "alpha")},
		{in: "guild:42:my-mod_2", want: GuildModuleTarget(42, "my-mod_2")},
		{in: "guild:0", bad: true},
		{in: "guild:-1", bad: true},
		{in: "guild:+1", bad: true},
		{in: "guild: 1", bad: true},
		{in: "guild:18446744073709551616", bad: true},  // does not fit 64 bits
		{in: "guild:123456789012345678901", bad: true}, // 21 digits
		{in: "guild:1:", bad: true},
		{in: "guild:1:Alpha", bad: true},
		{in: "guild:1:alpha:x", bad: true},
		{in: "channel:1:alpha", bad: true},
		{in: "settings:1", bad: true},
		{in: "models", bad: true},
		{in: "", bad: true},
		{in: "guild:１", bad: true}, // a non-ASCII digit
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if tt.bad {
				want := "unsupported configuration proposal target " + pyQuote(tt.in)
				var te *TargetError
				if !errors.As(err, &te) || err.Error() != want {
					t.Fatalf("ParseTarget(%q) = %v, %v; want %q", tt.in, got, err, want)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseTarget(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if got.String() != tt.in {
				t.Fatalf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

// pyQuote is Python's repr of a plain ASCII string without quotes inside.
func pyQuote(s string) string { return "'" + s + "'" }

func TestParseFrontmatter(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		values  map[string]any
		body    string
		present bool
		wantErr string // exact summary message
		errLine int
	}{
		{name: "empty text", text: "", values: map[string]any{}},
		{name: "no frontmatter is all body", text: "hello\n---\n", values: map[string]any{}, body: "hello\n---\n"},
		{name: "empty frontmatter", text: "---\n---\n", values: map[string]any{}, present: true},
		{name: "comments only", text: "---\n# nothing\n---\nbody", values: map[string]any{}, body: "body", present: true},
		{name: "null document", text: "---\n~\n---\n", values: map[string]any{}, present: true},
		{name: "scalars", present: true,
			text:   "---\na: true\nb: False\nc: 12\nd: -3\ne: \"12\"\nf: hello world\ng: 1.5\nh: ~\ni: yes\nj: 0x1F\nk: 'x'\n---\nbody\n",
			values: map[string]any{"a": true, "b": false, "c": json.Number("12"), "d": json.Number("-3"), "e": "12", "f": "hello world", "g": 1.5, "h": nil, "i": "yes", "j": "0x1F", "k": "x"},
			body:   "body\n"},
		{name: "long ids keep every digit", present: true, text: "---\nid: 123456789012345678901234\n---\n",
			values: map[string]any{"id": json.Number("123456789012345678901234")}},
		{name: "flow and block lists", present: true, text: "---\na: [1, 2]\nb:\n  - 3\n  - \"4\"\nc: []\n---\n",
			values: map[string]any{"a": []any{json.Number("1"), json.Number("2")}, "b": []any{json.Number("3"), "4"}, "c": []any{}}},
		{name: "nested mapping", present: true, text: "---\np:\n  enabled: true\n  list: [5]\n---\n",
			values: map[string]any{"p": map[string]any{"enabled": true, "list": []any{json.Number("5")}}}},
		{name: "block scalar is text", present: true, text: "---\nnote: |\n  12\n---\n", values: map[string]any{"note": "12\n"}},
		{name: "crlf delimiters", present: true, text: "---\r\na: 1\r\n---\r\nbody", values: map[string]any{"a": json.Number("1")}, body: "body"},
		{name: "closing line at the end without newline", present: true, text: "---\na: 1\n---", values: map[string]any{"a": json.Number("1")}},

		{name: "unclosed", text: "---\na: 1\n", wantErr: "frontmatter is not closed by a '---' line (line 1)", errLine: 1},
		{name: "lone delimiter", text: "---", wantErr: "frontmatter is not closed by a '---' line (line 1)", errLine: 1},
		{name: "anchor", text: "---\na: &x 1\nb: 2\n---\n", wantErr: "YAML anchors are not allowed (line 2)", errLine: 2},
		{name: "alias", text: "---\na: [1]\nb: *x\n---\n", wantErr: "invalid YAML frontmatter: unknown anchor 'x' referenced"},
		{name: "anchor and alias", text: "---\na: &x [1]\nb: *x\n---\n", wantErr: "YAML anchors are not allowed (line 2)", errLine: 2},
		{name: "anchor on a key", text: "---\n&k a: 1\n---\n", wantErr: "YAML anchors are not allowed (line 2)", errLine: 2},
		{name: "merge key", text: "---\n<<: {a: 1}\n---\n", wantErr: "YAML merge keys are not allowed (line 2)", errLine: 2},
		{name: "custom tag", text: "---\na: !secret x\n---\n", wantErr: "YAML tags are not allowed (!secret) (line 2)", errLine: 2},
		{name: "standard tag", text: "---\na: !!str 5\n---\n", wantErr: "YAML tags are not allowed (!!str) (line 2)", errLine: 2},
		{name: "tag on a nested item", text: "---\na:\n  - !!binary aGk=\n---\n", wantErr: "YAML tags are not allowed (!!binary) (line 3)", errLine: 3},
		{name: "duplicate key", text: "---\nbot_active: true\nbot_active: false\n---\n", wantErr: `duplicate key "bot_active" (line 3)`, errLine: 3},
		{name: "duplicate nested key", text: "---\np:\n  a: 1\n  a: 2\n---\n", wantErr: `duplicate key "a" (line 4)`, errLine: 4},
		{name: "two documents", text: "---\na: 1\n--- # second\nb: 2\n---\n", wantErr: "frontmatter must be a single YAML document (line 3)", errLine: 3},
		{name: "document end marker then more", text: "---\na: 1\n...\nb: 2\n---\n", wantErr: "invalid YAML frontmatter: line 3: did not find expected <document start>", errLine: 3},
		{name: "not a mapping", text: "---\n- a\n- b\n---\n", wantErr: "frontmatter must be a mapping of keys to values (line 2)", errLine: 2},
		{name: "scalar document", text: "---\nhello\n---\n", wantErr: "frontmatter must be a mapping of keys to values (line 2)", errLine: 2},
		{name: "complex key", text: "---\n? [a]\n: 1\n---\n", wantErr: "frontmatter keys must be text (line 2)", errLine: 2},
		{name: "invalid yaml", text: "---\na: [1, 2\n---\n", wantErr: "invalid YAML frontmatter: line 2: did not find expected ',' or ']'", errLine: 2},
		{name: "tab indentation", text: "---\na:\n\t- 1\n---\n", wantErr: "invalid YAML frontmatter: line 3: found character that cannot start any token", errLine: 3},
		{name: "not utf-8", text: "---\na: \xff\n---\n", wantErr: MsgNotUTF8},
		{name: "not utf-8 in the body", text: "body \xc3\x28", wantErr: MsgNotUTF8},
		{name: "over 1 MB", text: "---\n---\n" + strings.Repeat("x", MaxDocumentBytes), wantErr: MsgTooLarge},
		{name: "too deep", text: "---\na: " + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "\n---\n", wantErr: "frontmatter nests deeper than 16 levels (line 2)", errLine: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm, err := ParseFrontmatter(tt.text)
			if tt.wantErr != "" {
				var verr *ValidationError
				if !errors.As(err, &verr) {
					t.Fatalf("err = %v (%T), want a *ValidationError %q", err, err, tt.wantErr)
				}
				if verr.Message != tt.wantErr {
					t.Fatalf("message = %q\nwant      %q", verr.Message, tt.wantErr)
				}
				if len(verr.Problems) != 1 || verr.Problems[0].Field != DocumentField || verr.Problems[0].Line != tt.errLine {
					t.Fatalf("problems = %+v, want one document problem on line %d", verr.Problems, tt.errLine)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFrontmatter: %v", err)
			}
			if !reflect.DeepEqual(fm.Values, tt.values) || fm.Body != tt.body || fm.Present != tt.present {
				t.Fatalf("got values %#v body %q present %t\nwant       %#v body %q present %t", fm.Values, fm.Body, fm.Present, tt.values, tt.body, tt.present)
			}
		})
	}
}

func TestFrontmatterKeyLines(t *testing.T) {
	fm, err := ParseFrontmatter("---\n# c\nb: 1\na:\n  - 2\n---\n")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fm.Keys, []string{"b", "a"}) || fm.Lines["b"] != 3 || fm.Lines["a"] != 4 {
		t.Fatalf("keys %v lines %v", fm.Keys, fm.Lines)
	}
}

// TestNonSpecificTagIsRefused: ParseFrontmatter promises "no ... tags",
// and that includes the non-specific tag "!", which go.yaml.in/yaml/v3
// does not mark TaggedStyle and resolves as if untagged ("bot_active:
// ! true" would be the boolean true and switch the guild on). YAML 1.2
// makes "! true" the string "true" (PyYAML, the original's reader,
// resolves it as untagged): readers disagree, which is what the strict
// reader refuses tags for. The same holds for a tagged key, sequence or
// mapping. Each must be refused with nothing stored.
func TestNonSpecificTagIsRefused(t *testing.T) {
	st := openStore(t)
	s := newService(t, st, TrustSettings{})
	for i, text := range []string{
		"---\nbot_active: ! true\n---\n",
		"---\n! bot_active: true\n---\n",
		"---\nbot_active: true\nstaff_role_ids: ! [1]\n---\n",
		"---\nbot_active: true\nscheduled_tasks: ! {enabled: true}\n---\n",
	} {
		guild := uint64(i + 1) // a guild of its own, so a wrongly stored text cannot hide the next case
		t.Run(strings.ReplaceAll(text, "\n", `\n`), func(t *testing.T) {
			before := counts(t, st)
			_, err := s.Write(context.Background(), GuildTarget(guild), text, EmptyRevision, admin)
			var verr *ValidationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), "YAML tags are not allowed") {
				t.Errorf("Write = %v, want the tag refused", err)
			}
			if after := counts(t, st); after != before {
				t.Errorf("rows %v -> %v: something was stored", before, after)
			}
			if s.Active(guild) {
				t.Error("the guild is active")
			}
		})
	}
}
