package sdk

import (
	"errors"
	"testing"
)

// TestValidateDeclaredNames: declared tool and command names are non-empty
// and listed once.
func TestValidateDeclaredNames(t *testing.T) {
	create := func(LoadContext) (Module, error) { return nil, nil }
	tests := []struct {
		name     string
		tools    []string
		commands []string
		want     string
	}{
		{"none", nil, nil, ""},
		{"distinct", []string{"a", "b"}, []string{"a"}, ""},
		{"tool twice", []string{"a", "a"}, nil, "module 'm' declares tool 'a' twice"},
		{"command twice", nil, []string{"k", "k"}, "module 'm' declares command 'k' twice"},
		{"empty tool", []string{""}, nil, "module 'm' declares an empty tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Spec{Name: "m", APIVersion: APIVersion, Create: create, Tools: tt.tools, Commands: tt.commands}.Validate()
			var ce *ModuleContractError
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v", err)
			case tt.want != "" && (!errors.As(err, &ce) || errors.Unwrap(err) == nil || errors.Unwrap(err).Error() != tt.want):
				t.Errorf("Validate = %v, want cause %q", err, tt.want)
			}
		})
	}
}
