package sdk

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestCoerceGuildSetting(t *testing.T) {
	f := func(kind GuildSettingKind) GuildSettingField { return GuildSettingField{Name: "x", Kind: kind} }
	many := make([]any, 513)
	for i := range many {
		many[i] = "1"
	}
	manyStr := make([]string, 513)
	tests := []struct {
		name  string
		field GuildSettingField
		raw   any
		want  any
		err   string
	}{
		{"nil optional", f(GuildSettingID), nil, nil, ""},
		{"nil required", GuildSettingField{Name: "x", Kind: GuildSettingID, Required: true}, nil, nil, "x is required"},
		{"nil default", GuildSettingField{Name: "x", Kind: GuildSettingBool, Default: true}, nil, true, ""},
		{"bool", f(GuildSettingBool), false, false, ""},
		{"bool from string", f(GuildSettingBool), "true", nil, "x must be true or false"},
		{"int", f(GuildSettingInt), 7, int64(7), ""},
		{"int json number", f(GuildSettingInt), json.Number("-3"), int64(-3), ""},
		{"int json float", f(GuildSettingInt), json.Number("1.5"), nil, "x must be an integer"},
		{"int bool", f(GuildSettingInt), true, nil, "x must be an integer"},
		{"int float", f(GuildSettingInt), 1.0, nil, "x must be an integer"},
		{"id int", f(GuildSettingID), 777, uint64(777), ""},
		{"id string", f(GuildSettingID), " 777 ", uint64(777), ""},
		{"id max", f(GuildSettingID), "18446744073709551615", uint64(18446744073709551615), ""},
		{"id overflow", f(GuildSettingID), "18446744073709551616", nil, "x must be a numeric Discord id"},
		{"id negative", f(GuildSettingID), -1, nil, "x must be a numeric Discord id"},
		{"id text", f(GuildSettingID), "abc", nil, "x must be a numeric Discord id"},
		{"id bool", f(GuildSettingID), true, nil, "x must be a numeric Discord id"},
		{"id float", f(GuildSettingID), 1.0, nil, "x must be a numeric Discord id"},
		{"id 26 digits", f(GuildSettingID), strings.Repeat("1", 26), nil, "x must be a numeric Discord id"},
		{"id newline", f(GuildSettingID), "12\n3", nil, "x must be a numeric Discord id"},
		{"id uint64", f(GuildSettingID), uint64(5), uint64(5), ""},
		{"id_list", f(GuildSettingIDList), []any{1, "2", uint64(3)}, []uint64{1, 2, 3}, ""},
		{"id_list typed", f(GuildSettingIDList), []uint64{4}, []uint64{4}, ""},
		{"id_list not list", f(GuildSettingIDList), "1,2", nil, "x must be a list of Discord ids"},
		{"id_list too many", f(GuildSettingIDList), many, nil, "x has more than 512 entries"},
		{"id_list 512 ok", f(GuildSettingIDList), many[:512], nil, ""},
		{"id_list bad entry", f(GuildSettingIDList), []any{"1", "x"}, nil, "x contains a non-numeric id 'x'"},
		{"id_list bool entry", f(GuildSettingIDList), []any{true}, nil, "x contains a non-numeric id True"},
		{"str", f(GuildSettingStr), "hi", "hi", ""},
		{"str 2000", f(GuildSettingStr), strings.Repeat("é", 2000), strings.Repeat("é", 2000), ""},
		{"str 2001", f(GuildSettingStr), strings.Repeat("a", 2001), nil, "x is longer than 2000 characters"},
		{"str not text", f(GuildSettingStr), 5, nil, "x must be text"},
		{"str_list", f(GuildSettingStrList), []any{"a", "b"}, []string{"a", "b"}, ""},
		{"str_list typed", f(GuildSettingStrList), []string{"a"}, []string{"a"}, ""},
		{"str_list not list", f(GuildSettingStrList), "a", nil, "x must be a list of text values"},
		{"str_list too many", f(GuildSettingStrList), manyStr, nil, "x has more than 512 entries"},
		{"str_list bad entry", f(GuildSettingStrList), []any{"a", 3}, nil, "x contains an invalid entry 3"},
		{"str_list long entry", f(GuildSettingStrList), []any{strings.Repeat("a", 2001)}, nil, "x contains an invalid entry '" + strings.Repeat("a", 2001) + "'"},
		{"enum", GuildSettingField{Name: "x", Kind: GuildSettingEnum, Choices: []string{"a", "b"}}, " b ", "b", ""},
		{"enum bad", GuildSettingField{Name: "x", Kind: GuildSettingEnum, Choices: []string{"a", "b"}}, "c", nil, "x must be one of a, b"},
		{"enum bool", GuildSettingField{Name: "x", Kind: GuildSettingEnum, Choices: []string{"True"}}, true, "True", ""},
		{"unknown kind", f("float"), 1, nil, "x has unsupported kind 'float'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.field.Coerce(tt.raw)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				if got != nil {
					t.Fatalf("value on error: %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestValidateGuildSettingsSchema(t *testing.T) {
	fld := func(name string, kind GuildSettingKind) GuildSettingField {
		return GuildSettingField{Name: name, Kind: kind}
	}
	tests := []struct {
		name   string
		schema GuildSettingsSchema
		want   string
	}{
		{"ok", GuildSettingsSchema{Fields: []GuildSettingField{fld("a", GuildSettingID), {Name: "b", Kind: GuildSettingEnum, Choices: []string{"x"}, Default: "x"}}}, ""},
		{"policy", GuildSettingsSchema{InvalidPolicy: "explode"}, "module 'm' guild settings has invalid policy 'explode'"},
		{"name", GuildSettingsSchema{Fields: []GuildSettingField{fld("Bad", GuildSettingID)}}, "module 'm' guild setting 'Bad' has an invalid name"},
		{"twice", GuildSettingsSchema{Fields: []GuildSettingField{fld("a", GuildSettingID), fld("a", GuildSettingInt)}}, "module 'm' declares guild setting 'a' twice"},
		{"enum no choices", GuildSettingsSchema{Fields: []GuildSettingField{fld("a", GuildSettingEnum)}}, "module 'm' enum setting 'a' needs choices"},
		{"choices not enum", GuildSettingsSchema{Fields: []GuildSettingField{{Name: "a", Kind: GuildSettingStr, Choices: []string{"x"}}}}, "module 'm' setting 'a' has choices but is not enum"},
		{"required default", GuildSettingsSchema{Fields: []GuildSettingField{{Name: "a", Kind: GuildSettingBool, Required: true, Default: true}}}, "module 'm' setting 'a' is required with a default"},
		{"bad default", GuildSettingsSchema{Fields: []GuildSettingField{{Name: "a", Kind: GuildSettingBool, Default: "yes"}}}, "module 'm' setting 'a' has an invalid default: a must be true or false"},
		{"refers ok", GuildSettingsSchema{Fields: []GuildSettingField{{Name: "a", Kind: GuildSettingID, Refers: RefChannel}, {Name: "b", Kind: GuildSettingIDList, Refers: RefRole}, {Name: "c", Kind: GuildSettingID, Refers: RefUser}}}, ""},
		{"refers not id", GuildSettingsSchema{Fields: []GuildSettingField{{Name: "a", Kind: GuildSettingStr, Refers: RefChannel}}}, "module 'm' setting 'a' refers to a channel but is not id or id_list"},
		{"refers unknown", GuildSettingsSchema{Fields: []GuildSettingField{{Name: "a", Kind: GuildSettingID, Refers: "emoji"}}}, "module 'm' setting 'a' refers to 'emoji', not channel, role or user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, tt.schema.ValidateSchema("m"), tt.want) })
	}
}

func kudosSchema() GuildSettingsSchema {
	return GuildSettingsSchema{
		InvalidPolicy: DisableModule,
		Fields: []GuildSettingField{
			{Name: "digest_channel_id", Kind: GuildSettingID},
			{Name: "giver_min_tier", Kind: GuildSettingEnum, Choices: []string{"member", "regular", "staff"}, Default: "member"},
			{Name: "allow_thank_back", Kind: GuildSettingBool, Default: true},
		},
		Validate: func(v map[string]any) []string {
			if v["giver_min_tier"] == "staff" && v["digest_channel_id"] != nil {
				return []string{"a digest channel makes no sense when only staff may give kudos"}
			}
			return nil
		},
	}
}

func TestEvaluateGuildSettings(t *testing.T) {
	s := kudosSchema()
	r := s.Evaluate(nil)
	if !r.Valid() || r.Values["giver_min_tier"] != "member" || r.Values["allow_thank_back"] != true || r.Values["digest_channel_id"] != nil {
		t.Fatalf("defaults: %+v", r)
	}
	r = s.Evaluate(map[string]any{"digest_channel_id": 900, "giver_min_tier": "regular"})
	if !r.Valid() || r.Values["digest_channel_id"] != uint64(900) {
		t.Fatalf("regular + digest: %+v", r)
	}
	r = s.Evaluate(map[string]any{"digest_channel_id": 900, "giver_min_tier": "staff"})
	if r.Valid() || strings.Join(r.Errors, ";") != "a digest channel makes no sense when only staff may give kudos" {
		t.Fatalf("staff + digest: %+v", r)
	}
	r = s.Evaluate(map[string]any{"zeta": 1, "alpha": 2, "giver_min_tier": "king", "digest_channel_id": 900})
	want := "unknown setting 'alpha';unknown setting 'zeta';giver_min_tier must be one of member, regular, staff"
	if got := strings.Join(r.Errors, ";"); got != want {
		t.Fatalf("errors = %s", got)
	}
	s.Validate = func(map[string]any) []string { panic("boom") }
	r = s.Evaluate(nil)
	if strings.Join(r.Errors, ";") != "validation failed: boom" {
		t.Fatalf("panic: %+v", r)
	}
	s.Validate = func(v map[string]any) []string { v["giver_min_tier"] = "mutated"; return nil }
	r = s.Evaluate(nil)
	if r.Values["giver_min_tier"] != "member" {
		t.Fatal("validator mutated the result")
	}
	if s.EffectivePolicy() != DisableModule || (GuildSettingsSchema{}).EffectivePolicy() != DisableGuild {
		t.Fatal("EffectivePolicy")
	}
}

func TestRenderGuildSettings(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
		err    string
	}{
		{"kudos setup", map[string]any{"digest_channel_id": uint64(777)}, "---\ndigest_channel_id: 777\n---\n", ""},
		{"empty", map[string]any{}, "---\n---\n", ""},
		{"sorted, nil omitted", map[string]any{"b": true, "a": int64(-3), "c": nil, "d": false}, "---\na: -3\nb: true\nd: false\n---\n", ""},
		{"string quoting", map[string]any{"s": "yes: #no \"q\" \\ \n\t"}, "---\ns: \"yes: #no \\\"q\\\" \\\\ \\n\\t\"\n---\n", ""},
		{"unicode kept", map[string]any{"s": "héllo ✓ <&>"}, "---\ns: \"héllo ✓ <&>\"\n---\n", ""},
		{"yaml unsafe", map[string]any{"s": "\x7f\u0085\u2028\u2029\ufeff\ufffe\uffff\x01"}, "---\ns: \"\\u007f\\u0085\\u2028\\u2029\\ufeff\\ufffe\\uffff\\u0001\"\n---\n", ""},
		{"bool word", map[string]any{"s": "true"}, "---\ns: \"true\"\n---\n", ""},
		{"lists", map[string]any{"ids": []uint64{1, 2}, "names": []string{"a", "b c"}, "none": []any{}}, "---\nids: [1, 2]\nnames: [\"a\", \"b c\"]\nnone: []\n---\n", ""},
		{"bad key", map[string]any{"Bad": 1}, "", "invalid guild setting name 'Bad'"},
		{"bad value", map[string]any{"f": 1.5}, "", "guild setting 'f' has unrenderable value 1.5"},
		{"bad list value", map[string]any{"f": []any{1, 2.5}}, "", "guild setting 'f' has unrenderable value 2.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderGuildSettings(tt.values)
			checkErr(t, err, tt.err)
			if got != tt.want {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestGuildSettingsSnapshotAccessors(t *testing.T) {
	snap := GuildSettingsSnapshot{Values: map[string]any{
		"ch": uint64(9), "ids": []uint64{1}, "n": int64(3), "s": "x", "l": []string{"a"}, "b": true,
	}, Valid: true}
	if snap.ID("ch") != 9 || snap.Int("n") != 3 || snap.String("s") != "x" || !snap.Bool("b") || snap.ID("missing") != 0 {
		t.Fatal("scalar accessors")
	}
	ids := snap.IDs("ids")
	ids[0] = 99
	if snap.IDs("ids")[0] != 1 {
		t.Fatal("IDs leaked")
	}
	l := snap.Strings("l")
	l[0] = "z"
	if snap.Strings("l")[0] != "a" {
		t.Fatal("Strings leaked")
	}
	if v, ok := snap.Lookup("s"); !ok || v != "x" {
		t.Fatal("Lookup")
	}
	if !settingNameRE.MatchString("a_1") || settingNameRE.MatchString("1a") {
		t.Fatal("ValidSettingName")
	}
	if _, ok := kudosSchema().Field("nope"); ok {
		t.Fatal("Field")
	}
}
