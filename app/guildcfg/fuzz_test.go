package guildcfg

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

var fuzzSeeds = []string{
	"",
	"---\n---\n",
	"---\nbot_active: ! true\n---\n", // the non-specific tag (refused)
	"---\nbot_active: true\nstaff_role_ids: [1, 2]\n---\nbody\n",
	"---\nscheduled_tasks:\n  enabled: true\n  min_tier: regular\n  timezone: UTC\n  destinations: [5]\n---\n",
	"---\na: &x 1\nb: *x\n---\n",
	"---\n<<: {a: 1}\n---\n",
	"---\na: !tag x\n---\n",
	"---\na: 1\na: 2\n---\n",
	"---\na: 1\n--- # two\nb: 2\n---\n",
	"---\nchannel_id: 42\nmode: loud\nroles: [\"1\", 2]\ntags: [a]\nlimit: -1\nnote: \"\\u2028\"\n---\n",
	"---\n? [a]\n: 1\n---\n",
	"---\nx: [[[[[[[[[[]]]]]]]]]]\n---\n",
	"---\r\nbot_active: true\r\n---\r\n",
	"---\nbot_active: true\nproposal_channel_id: +1\n---\n",
	"---\nbot_active: true\nassistant:\n  enabled: false\n  min_tier: owner\n  blocked_tools: [a, b-c]\n  pinned_tools: [\"x_1\"]\n---\nrules\n",
	"---\nblocked_tools: [kudos_give, kudos_give]\npinned_tools: [\"true\"]\n---\n",
}

// FuzzParseFrontmatter: the parser never panics, refuses what it must, and
// yields only the documented value types.
func FuzzParseFrontmatter(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fm, err := ParseFrontmatter(text)
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || verr.Message == "" || len(verr.Problems) == 0 {
				t.Fatalf("error %v (%T) is not a *ValidationError with problems", err, err)
			}
			return
		}
		if !utf8.ValidString(text) || len(text) > MaxDocumentBytes {
			t.Fatalf("accepted invalid text %q", text)
		}
		if len(fm.Keys) != len(fm.Values) {
			t.Fatalf("keys %v for %d values", fm.Keys, len(fm.Values))
		}
		if !fm.Present && fm.Body != text {
			t.Fatalf("without frontmatter the body must be the whole text")
		}
		if fm.Present && !strings.HasSuffix(text, fm.Body) {
			t.Fatalf("body %q is not the end of the text", fm.Body)
		}
		for _, v := range fm.Values {
			checkValueTypes(t, v)
		}
		again, err := ParseFrontmatter(text)
		if err != nil || !reflect.DeepEqual(nanFree(again.Values), nanFree(fm.Values)) {
			t.Fatalf("second parse differs: %v", err)
		}
	})
}

func checkValueTypes(t *testing.T, v any) {
	switch x := v.(type) {
	case nil, bool, json.Number, float64, string:
	case []any:
		for _, e := range x {
			checkValueTypes(t, e)
		}
	case map[string]any:
		for _, e := range x {
			checkValueTypes(t, e)
		}
	default:
		t.Fatalf("unexpected value type %T", v)
	}
}

// nanFree replaces NaN (never equal to itself) for comparisons.
func nanFree(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if f, ok := v.(float64); ok && f != f {
			v = "NaN"
		}
		out[k] = v
	}
	return out
}

// FuzzEvaluateModuleDocument: schema coercion never panics, its problems
// match its errors one to one, valid settings have their field kinds' Go
// types, and rendering valid values back gives the same settings.
func FuzzEvaluateModuleDocument(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	schema := alphaSchema()
	f.Fuzz(func(t *testing.T, text string) {
		snap, problems := EvaluateModuleDocument(schema, text, true)
		if snap.Valid != (len(problems) == 0) || len(problems) != len(snap.Errors) {
			t.Fatalf("valid %t with %d problems and %d errors", snap.Valid, len(problems), len(snap.Errors))
		}
		for i, p := range problems {
			if p.Message != snap.Errors[i] {
				t.Fatalf("problem %d %q != error %q", i, p.Message, snap.Errors[i])
			}
		}
		if !snap.Valid {
			return
		}
		for _, fld := range schema.Fields {
			v := snap.Values[fld.Name]
			if v == nil {
				continue
			}
			ok := false
			switch fld.Kind {
			case sdk.GuildSettingID:
				_, ok = v.(uint64)
			case sdk.GuildSettingIDList:
				_, ok = v.([]uint64)
			case sdk.GuildSettingBool:
				_, ok = v.(bool)
			case sdk.GuildSettingInt:
				_, ok = v.(int64)
			case sdk.GuildSettingStr, sdk.GuildSettingEnum:
				_, ok = v.(string)
			case sdk.GuildSettingStrList:
				_, ok = v.([]string)
			}
			if !ok {
				t.Fatalf("%s has %T", fld.Name, v)
			}
		}
		rendered, err := sdk.RenderGuildSettings(snap.Values)
		if err != nil {
			t.Fatalf("render valid values: %v", err)
		}
		again, _ := EvaluateModuleDocument(schema, rendered, true)
		if !again.Valid || !reflect.DeepEqual(again.Values, snap.Values) {
			t.Fatalf("rendered %q evaluates to %+v, want %+v", rendered, again, snap.Values)
		}
	})
}

// FuzzGuildDocument: a valid server-setup document renders back to the same
// configuration.
func FuzzGuildDocument(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := ParseGuildDocument(text)
		if err != nil {
			return
		}
		again, err := ParseGuildDocument(RenderGuildDocument(cfg))
		if err != nil || !reflect.DeepEqual(again, cfg) {
			t.Fatalf("round trip of %q: %+v, %v\nwant %+v", text, again, err, cfg)
		}
	})
}

// FuzzChannelDocument: a channel document's tool lists are valid tool names,
// sorted and without duplicates, whatever the text.
func FuzzChannelDocument(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := ParseChannelDocument(text)
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) == 0 {
				t.Fatalf("error %v (%T) is not a *ValidationError with problems", err, err)
			}
			return
		}
		for _, list := range [][]string{cfg.BlockedTools, cfg.PinnedTools} {
			if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
				t.Fatalf("list %q is not sorted and unique", list)
			}
			for _, n := range list {
				if !hostkit.ValidToolName(n) {
					t.Fatalf("invalid tool name %q accepted", n)
				}
			}
		}
	})
}
