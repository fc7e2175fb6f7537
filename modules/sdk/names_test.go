package sdk

import (
	"strings"
	"testing"
)

func TestValidateModuleName(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		{"kudos", ""},
		{"reference_kudos", ""},
		{"a-b_c9", ""},
		{"a" + strings.Repeat("b", 63), ""},
		{"a" + strings.Repeat("b", 64), "invalid module name 'a" + strings.Repeat("b", 64) + "'"},
		{"", "invalid module name ''"},
		{"Kudos", "invalid module name 'Kudos'"},
		{"9lives", "invalid module name '9lives'"},
		{"_x", "invalid module name '_x'"},
		{"kudos\n", `invalid module name 'kudos\n'`},
		{"a.b", "invalid module name 'a.b'"},
		{"it's", `invalid module name "it's"`},
		{"discord", "module name 'discord' is reserved by core"},
		{"proposals", "module name 'proposals' is reserved by core"},
		{"discord-x", ""},
		{"sqlite", "module name 'sqlite' uses table prefix 'sqlite_', which is reserved for SQLite's own tables"},
		{"sqlite_x", "module name 'sqlite_x' uses table prefix 'sqlite_x_', which is reserved for SQLite's own tables"},
		{"sqlite-x", "module name 'sqlite-x' uses table prefix 'sqlite_x_', which is reserved for SQLite's own tables"},
		{"sqlitex", "module name 'sqlitex' uses table prefix 'sqlitex_', which is reserved for SQLite's own tables"},
		{"SQLite", "invalid module name 'SQLite'"},
		{"my_sqlite", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, validateModuleName(tt.name), tt.want) })
	}
}

func TestBuildCustomID(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		key   string
		parts []string
		want  string
		err   string
	}{
		{"thank_back", []string{"1"}, "m:reference_kudos:thank_back:1", ""},
		{"approve", nil, "m:reference_kudos:approve", ""},
		{"a", []string{"", "b"}, "m:reference_kudos:a::b", ""},
		{"Bad", nil, "", "invalid component key 'Bad'"},
		{"", nil, "", "invalid component key ''"},
		{"k", []string{"a:b"}, "", "custom_id parts may not contain ':'"},
		{"k", []string{long}, "", "custom_id exceeds 100 characters"},
		{"k", []string{strings.Repeat("é", 100-len("m:reference_kudos:k:"))}, "m:reference_kudos:k:" + strings.Repeat("é", 100-len("m:reference_kudos:k:")), ""},
	}
	for _, tt := range tests {
		got, err := BuildCustomID("reference_kudos", tt.key, tt.parts...)
		checkErr(t, err, tt.err)
		if got != tt.want {
			t.Errorf("BuildCustomID(%q, %q) = %q, want %q", tt.key, tt.parts, got, tt.want)
		}
	}
}

func TestParseCustomID(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want CustomID
	}{
		{"m:reference_kudos:thank_back:1", true, CustomID{"reference_kudos", "thank_back", []string{"1"}}},
		{"m:mod:key", true, CustomID{"mod", "key", []string{}}},
		{"m:mod:key:a:b", true, CustomID{"mod", "key", []string{"a", "b"}}},
		{"m::", true, CustomID{"", "", []string{}}},
		{"m:mod", false, CustomID{}},
		{"x:mod:key", false, CustomID{}},
		{"", false, CustomID{}},
	}
	for _, tt := range tests {
		got, ok := ParseCustomID(tt.in)
		if ok != tt.ok || got.Module != tt.want.Module || got.Key != tt.want.Key || strings.Join(got.Parts, "|") != strings.Join(tt.want.Parts, "|") || len(got.Parts) != len(tt.want.Parts) {
			t.Errorf("ParseCustomID(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMigrationContextTable(t *testing.T) {
	if got := (MigrationContext{Module: "reference-kudos"}).Table("kudos"); got != `"reference_kudos_kudos"` {
		t.Fatalf("got %s", got)
	}
}
