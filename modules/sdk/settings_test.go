package sdk

import "testing"

// TestSettingsMaxBound: Max bounds int and float settings from above in
// Prepare (text from the environment or the overlay) and in Validate
// (defaults), with Min's message shape.
func TestSettingsMaxBound(t *testing.T) {
	const mib = 1 << 20
	def := SettingsDefinition{Fields: []SettingField{
		{Name: "max_file_bytes", Kind: SettingInt, Default: 8 * mib, Min: 1, HasMin: true, Max: 50 * mib, HasMax: true},
		{Name: "ratio", Kind: SettingFloat, Default: 0.5, Max: 1, HasMax: true},
	}}
	if err := def.Validate("files"); err != nil {
		t.Fatalf("valid definition: %v", err)
	}
	tests := []struct {
		name string
		raw  map[string]string
		want string
	}{
		{"defaults", nil, ""},
		{"at the bound", map[string]string{"max_file_bytes": "52428800", "ratio": "1"}, ""},
		{"int above", map[string]string{"max_file_bytes": "52428801"}, "module 'files' setting 'max_file_bytes': must be at most 52428800"},
		{"int below", map[string]string{"max_file_bytes": "0"}, "module 'files' setting 'max_file_bytes': must be at least 1"},
		{"float above", map[string]string{"ratio": "1.5"}, "module 'files' setting 'ratio': must be at most 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := def.Prepare("files", tt.raw)
			checkErr(t, err, tt.want)
			if tt.want == "" && tt.raw["max_file_bytes"] == "52428800" && s.Int("max_file_bytes") != 50*mib {
				t.Errorf("value %d", s.Int("max_file_bytes"))
			}
		})
	}
	bad := []struct {
		name  string
		field SettingField
		want  string
	}{
		{"default above", SettingField{Name: "n", Kind: SettingInt, Default: 9, Max: 8, HasMax: true}, "module 'files' setting 'n' has an invalid default: must be at most 8"},
		{"max on text", SettingField{Name: "s", Kind: SettingString, Default: "x", Max: 8, HasMax: true}, "module 'files' setting 's' has a maximum but is not numeric"},
		{"min above max", SettingField{Name: "n", Kind: SettingInt, Min: 9, HasMin: true, Max: 8, HasMax: true}, "module 'files' setting 'n' has a minimum above its maximum"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, SettingsDefinition{Fields: []SettingField{tt.field}}.Validate("files"), tt.want)
		})
	}
}
