package hostkit

import (
	"maps"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestDeclaredNameConflicts(t *testing.T) {
	mk := func(name string, tools, commands []string) sdk.Spec {
		return sdk.Spec{Name: name, Tools: tools, Commands: commands}
	}
	tests := []struct {
		name  string
		specs []sdk.Spec
		want  map[string]string
	}{
		{"distinct names", []sdk.Spec{mk("a", []string{"x"}, []string{"x"}), mk("b", []string{"y"}, []string{"y"})}, map[string]string{}},
		{"one tool twice", []sdk.Spec{mk("a", []string{"x"}, nil), mk("b", []string{"y", "x"}, nil)},
			map[string]string{"a": "Kimi modules 'a' and 'b' both declare tool 'x'", "b": "Kimi modules 'a' and 'b' both declare tool 'x'"}},
		{"one command twice", []sdk.Spec{mk("a", nil, []string{"kudos"}), mk("b", nil, []string{"kudos"})},
			map[string]string{"a": "Kimi modules 'a' and 'b' both declare command 'kudos'", "b": "Kimi modules 'a' and 'b' both declare command 'kudos'"}},
		{"three claimants", []sdk.Spec{mk("a", []string{"x"}, nil), mk("b", []string{"x"}, nil), mk("c", []string{"x"}, nil)},
			map[string]string{"a": "Kimi modules 'a' and 'b' both declare tool 'x'", "b": "Kimi modules 'a' and 'b' both declare tool 'x'", "c": "Kimi modules 'a' and 'c' both declare tool 'x'"}},
		{"untouched bystander", []sdk.Spec{mk("a", []string{"x"}, nil), mk("z", []string{"z"}, nil), mk("b", []string{"x"}, nil)},
			map[string]string{"a": "Kimi modules 'a' and 'b' both declare tool 'x'", "b": "Kimi modules 'a' and 'b' both declare tool 'x'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DeclaredNameConflicts(tt.specs); !maps.Equal(got, tt.want) {
				t.Errorf("DeclaredNameConflicts = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckDeclared(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"declared tool", CheckToolDeclared("m", []string{"t"}, "t"), ""},
		{"undeclared tool", CheckToolDeclared("m", []string{"t"}, "u"), "module 'm' did not declare tool 'u'"},
		{"declared command", CheckCommandDeclared("m", []string{"c"}, sdk.CommandSpec{Name: "c"}), ""},
		{"declared group", CheckCommandDeclared("m", []string{"g"}, sdk.CommandSpec{Group: "g", Name: "c"}), ""},
		{"subcommand name is not the group", CheckCommandDeclared("m", []string{"c"}, sdk.CommandSpec{Group: "g", Name: "c"}), "module 'm' did not declare command 'g'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if tt.err != nil {
				got = tt.err.Error()
			}
			if got != tt.want {
				t.Errorf("err = %q, want %q", got, tt.want)
			}
		})
	}
}
