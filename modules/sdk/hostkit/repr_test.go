package hostkit

import "testing"

// TestValidateModuleNameMatchesSpecValidate: the bare-name check a host uses
// gives the same verdicts and messages as Spec.Validate's.
func TestValidateModuleNameMatchesSpecValidate(t *testing.T) {
	tests := []struct{ name, want string }{
		{"kudos", ""},
		{"my-module_2", ""},
		{"", "invalid module name ''"},
		{"Kudos", "invalid module name 'Kudos'"},
		{"discord", "module name 'discord' is reserved by core"},
		{"proposals", "module name 'proposals' is reserved by core"},
		{"sqlite", "module name 'sqlite' uses table prefix 'sqlite_', which is reserved for SQLite's own tables"},
		{"sqlite_x", "module name 'sqlite_x' uses table prefix 'sqlite_x_', which is reserved for SQLite's own tables"},
		{"SQLite", "invalid module name 'SQLite'"},
	}
	for _, tt := range tests {
		err := ValidateModuleName(tt.name)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("ValidateModuleName(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
