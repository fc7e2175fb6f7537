package host

import (
	"maps"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func pspec(name string, edit ...func(*sdk.Spec)) sdk.Spec { return spec(name, &testModule{}, edit...) }

func deps(d ...string) func(*sdk.Spec) { return func(s *sdk.Spec) { s.Dependencies = d } }

// TestPreflightMessages covers every refusal, with the original's exact
// messages where it has one (reference §1.4) and ours for what it misses.
func TestPreflightMessages(t *testing.T) {
	caps := sdk.NewCapabilities([]string{"have.v1"}, false, false)
	tests := []struct {
		name      string
		specs     []sdk.Spec
		requested []string
		problems  []string
		failed    map[string]string
		disabled  map[string]string
		order     []string
	}{
		{name: "duplicate", specs: []sdk.Spec{pspec("a")}, requested: []string{"a", "a"},
			problems: []string{"KIMI_MODULES contains a duplicate module name"}, order: []string{"a"}},
		{name: "not installed", specs: []sdk.Spec{pspec("a")}, requested: []string{"a", "ghost"},
			problems: []string{"Configured Kimi module is not installed: ghost"}, order: []string{"a"}},
		{name: "dependencies first, then request order", specs: []sdk.Spec{pspec("a", deps("c")), pspec("b"), pspec("c")},
			requested: []string{"b", "a", "c"}, order: []string{"b", "c", "a"}},
		{name: "cycle", specs: []sdk.Spec{pspec("a", deps("b")), pspec("b", deps("a")), pspec("c")}, requested: []string{"a", "b", "c"},
			failed: map[string]string{"a": "Kimi module dependency cycle includes 'a'", "b": "Kimi module dependency cycle includes 'a'"},
			order:  []string{"b", "a", "c"}},
		{name: "inactive dependency", specs: []sdk.Spec{pspec("a", deps("b")), pspec("b")}, requested: []string{"a"},
			failed: map[string]string{"a": "Kimi module 'a' requires active module 'b'"}, order: []string{"a"}},
		{name: "normalized prefix", specs: []sdk.Spec{pspec("a-b"), pspec("a_b")}, requested: []string{"a-b", "a_b"},
			failed: map[string]string{"a_b": "Kimi modules 'a-b' and 'a_b' share normalized prefix 'a_b'"}, order: []string{"a-b", "a_b"}},
		{name: "prefix of a prefix", specs: []sdk.Spec{pspec("a"), pspec("a_b")}, requested: []string{"a", "a_b"},
			failed: map[string]string{"a_b": "Kimi modules 'a' and 'a_b' have overlapping table prefixes: 'a_' tables can take 'a_b_' tables' names"},
			order:  []string{"a", "a_b"}},
		{name: "prefix of a prefix, longer first", specs: []sdk.Spec{pspec("a-b"), pspec("a")}, requested: []string{"a-b", "a"},
			failed: map[string]string{"a": "Kimi modules 'a-b' and 'a' have overlapping table prefixes: 'a_' tables can take 'a_b_' tables' names"},
			order:  []string{"a-b", "a"}},
		{name: "overlap with a compiled-in module not requested", specs: []sdk.Spec{pspec("a"), pspec("a_b")}, requested: []string{"a_b"},
			failed: map[string]string{"a_b": "Kimi module 'a_b' has a table prefix overlapping that of compiled-in module 'a' ('a_b_' and 'a_'): it could reach the kept tables of 'a'"},
			order:  []string{"a_b"}},
		{name: "covering a compiled-in module not requested", specs: []sdk.Spec{pspec("a-b"), pspec("a"), pspec("c")}, requested: []string{"a", "c"},
			failed: map[string]string{"a": "Kimi module 'a' has a table prefix overlapping that of compiled-in module 'a-b' ('a_' and 'a_b_'): it could reach the kept tables of 'a-b'"},
			order:  []string{"a", "c"}},
		{name: "core's commands", specs: []sdk.Spec{pspec("a", func(s *sdk.Spec) { s.Commands = []string{"kudos", "ask"} }),
			pspec("b", func(s *sdk.Spec) { s.Commands = []string{"stop"} }), pspec("c", func(s *sdk.Spec) { s.Commands = []string{"asking"} }),
			pspec("d", func(s *sdk.Spec) { s.Commands = []string{"forget"} }), pspec("e", func(s *sdk.Spec) { s.Commands = []string{"usage"} })},
			requested: []string{"a", "b", "c", "d", "e"},
			failed: map[string]string{"a": "Kimi module 'a' declares command 'ask', which is reserved for Kimi's assistant",
				"b": "Kimi module 'b' declares command 'stop', which is reserved for Kimi's assistant",
				"d": "Kimi module 'd' declares command 'forget', which is reserved for Kimi's assistant",
				"e": "Kimi module 'e' declares command 'usage', which is reserved for Kimi's assistant"},
			order: []string{"a", "b", "c", "d", "e"}},
		{name: "not a prefix at a boundary", specs: []sdk.Spec{pspec("ab"), pspec("a")}, requested: []string{"ab", "a"}, order: []string{"ab", "a"}},
		{name: "reserved core prefix", specs: []sdk.Spec{pspec("kimi"), pspec("kimi-x"), pspec("kimix")}, requested: []string{"kimi", "kimi-x", "kimix"},
			failed: map[string]string{
				"kimi":   "Kimi module 'kimi' uses table prefix 'kimi_', which is reserved for core tables",
				"kimi-x": "Kimi module 'kimi-x' uses table prefix 'kimi_x_', which is reserved for core tables",
			}, order: []string{"kimi", "kimi-x", "kimix"}},
		{name: "reserved SQLite prefix", specs: []sdk.Spec{pspec("sqlite"), pspec("sqlite_x"), pspec("sqlitex"), pspec("my-sqlite")},
			requested: []string{"sqlite", "sqlite_x", "sqlitex", "my-sqlite"},
			failed: map[string]string{
				"sqlite":   "Kimi module 'sqlite' uses table prefix 'sqlite_', which is reserved for SQLite's own tables",
				"sqlite_x": "Kimi module 'sqlite_x' uses table prefix 'sqlite_x_', which is reserved for SQLite's own tables",
				"sqlitex":  "Kimi module 'sqlitex' uses table prefix 'sqlitex_', which is reserved for SQLite's own tables",
			}, order: []string{"sqlite", "sqlite_x", "sqlitex", "my-sqlite"}},
		{name: "api version", specs: []sdk.Spec{pspec("a", func(s *sdk.Spec) { s.APIVersion = 3 })}, requested: []string{"a"},
			failed: map[string]string{"a": "Kimi module 'a' requires module API 3; core provides 2"}, order: []string{"a"}},
		{name: "required capability", specs: []sdk.Spec{pspec("a", func(s *sdk.Spec) { s.RequiresCapabilities = []string{"have.v1", "nope.v1"} })},
			requested: []string{"a"}, failed: map[string]string{"a": "Kimi module 'a' requires unavailable capability 'nope.v1'"}, order: []string{"a"}},
		{name: "capabilities before declarations", specs: []sdk.Spec{pspec("a", func(s *sdk.Spec) {
			s.RequiresCapabilities = []string{"nope.v1"}
			s.Permissions.DiscordActions = []sdk.DiscordAction{"explode"}
		})}, requested: []string{"a"}, failed: map[string]string{"a": "Kimi module 'a' requires unavailable capability 'nope.v1'"}, order: []string{"a"}},
		{name: "api version before capabilities", specs: []sdk.Spec{pspec("a", func(s *sdk.Spec) {
			s.APIVersion = 3
			s.RequiresCapabilities = []string{"nope.v1"}
		})}, requested: []string{"a"}, failed: map[string]string{"a": "Kimi module 'a' requires module API 3; core provides 2"}, order: []string{"a"}},
		{name: "invalid declaration", specs: []sdk.Spec{pspec("a", func(s *sdk.Spec) { s.Permissions.DiscordActions = []sdk.DiscordAction{"explode"} })},
			requested: []string{"a"}, failed: map[string]string{"a": "Kimi module 'a' has an invalid declaration: module 'a' declares unknown Discord actions ['explode']"},
			order: []string{"a"}},
		{name: "consumes undeclared", specs: []sdk.Spec{pspec("p"), pspec("c", deps("p"), func(s *sdk.Spec) {
			s.Consumes = []sdk.ServiceRequirement{{Name: "board", Version: 1, Provider: "p"}}
		})}, requested: []string{"p", "c"},
			failed: map[string]string{"c": "Kimi module 'c' consumes board@1 from 'p', but that provider does not declare it"}, order: []string{"p", "c"}},
		{name: "tool files without a reader", specs: []sdk.Spec{pspec("a", func(s *sdk.Spec) { s.Permissions.ToolFiles = true })}, requested: []string{"a"},
			failed: map[string]string{"a": "Kimi module 'a' declares tool_files, but this host has no file reader"}, order: []string{"a"}},
		{name: "activation capability and dependents", specs: []sdk.Spec{
			pspec("a", func(s *sdk.Spec) { s.ActivationCapabilities = []string{"x.v1", "have.v1", "y.v1"} }), pspec("b", deps("a")), pspec("c", deps("b")),
		}, requested: []string{"a", "b", "c"},
			disabled: map[string]string{"a": "missing activation capability x.v1, y.v1", "b": "dependency disabled: a", "c": "dependency disabled: b"},
			order:    []string{"a", "b", "c"}},
		{name: "dependents of a refused module", specs: []sdk.Spec{pspec("a", func(s *sdk.Spec) { s.APIVersion = 1 }), pspec("b", deps("a"))},
			requested: []string{"a", "b"}, failed: map[string]string{"a": "Kimi module 'a' requires module API 1; core provides 2"},
			disabled: map[string]string{"b": "dependency failed: a"}, order: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			installed := map[string]sdk.Spec{}
			for _, s := range tt.specs {
				installed[s.Name] = s
			}
			p := preflight(installed, tt.requested, caps, false)
			if !equalStrings(p.problems, tt.problems) {
				t.Errorf("problems = %q, want %q", p.problems, tt.problems)
			}
			if !maps.Equal(p.failed, orEmpty(tt.failed)) {
				t.Errorf("failed = %q, want %q", p.failed, tt.failed)
			}
			if !maps.Equal(p.disabled, orEmpty(tt.disabled)) {
				t.Errorf("disabled = %q, want %q", p.disabled, tt.disabled)
			}
			if !equalStrings(p.order, tt.order) {
				t.Errorf("order = %q, want %q", p.order, tt.order)
			}
		})
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
