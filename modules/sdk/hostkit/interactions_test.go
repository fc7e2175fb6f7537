package hostkit

import (
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func i64(v int64) *int64 { return &v }

func TestValidateCommandSpec(t *testing.T) {
	opt := func(mut func(*sdk.CommandOption)) sdk.CommandSpec {
		o := sdk.CommandOption{Name: "days", Kind: sdk.OptionInteger, Description: "Window"}
		mut(&o)
		return sdk.CommandSpec{Name: "top", Description: "Leaderboard", Options: []sdk.CommandOption{o}}
	}
	many := make([]sdk.CommandOption, 26)
	for i := range many {
		many[i] = sdk.CommandOption{Name: strings.Repeat("o", i+1), Kind: sdk.OptionString, Description: "d"}
	}
	choices := make([]sdk.Choice, 26)
	for i := range choices {
		choices[i] = sdk.Choice{Name: "c", Value: int64(i)}
	}
	tests := []struct {
		name string
		spec sdk.CommandSpec
		want string
	}{
		{"ok", sdk.CommandSpec{Name: "give", Description: "Give kudos", Group: "kudos", GroupDescription: "Kudos", MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{{Name: "member", Kind: sdk.OptionUser, Description: "Who", Required: true}, {Name: "reason", Kind: sdk.OptionString, Description: "Why", Required: true}}}, ""},
		{"bounds ok", opt(func(o *sdk.CommandOption) { o.MinValue, o.MaxValue = i64(1), i64(365) }), ""},
		{"no description", sdk.CommandSpec{Name: "x"}, "a command description must contain 1 to 100 characters"},
		{"long description", sdk.CommandSpec{Name: "x", Description: strings.Repeat("d", 101)}, "a command description must contain 1 to 100 characters"},
		{"group description", sdk.CommandSpec{Name: "x", Description: "d", Group: "g", GroupDescription: strings.Repeat("d", 101)}, "a command group description cannot exceed 100 characters"},
		{"too many options", sdk.CommandSpec{Name: "x", Description: "d", Options: many}, "a command cannot declare more than 25 options"},
		{"tier", sdk.CommandSpec{Name: "x", Description: "d", MinTier: 9}, "invalid command min_tier"},
		{"option name", opt(func(o *sdk.CommandOption) { o.Name = "" }), "invalid command option name ''"},
		{"option name long", opt(func(o *sdk.CommandOption) { o.Name = strings.Repeat("n", 33) }), "invalid command option name '" + strings.Repeat("n", 33) + "'"},
		{"duplicate", sdk.CommandSpec{Name: "x", Description: "d", Options: []sdk.CommandOption{{Name: "a", Kind: sdk.OptionString, Description: "d"}, {Name: "a", Kind: sdk.OptionString, Description: "d"}}}, "command option names must be unique"},
		{"kind", opt(func(o *sdk.CommandOption) { o.Kind = "number" }), "unsupported command option kind 'number'"},
		{"option description", opt(func(o *sdk.CommandOption) { o.Description = "" }), "the description for option 'days' must contain 1 to 100 characters"},
		{"choices and autocomplete", opt(func(o *sdk.CommandOption) { o.Choices = []sdk.Choice{{Name: "a", Value: 1}}; o.Autocomplete = true }), "option 'days' cannot use choices and autocomplete together"},
		{"autocomplete on bool", opt(func(o *sdk.CommandOption) { o.Kind = sdk.OptionBoolean; o.Autocomplete = true }), "option 'days' cannot use choices or autocomplete on a boolean option"},
		{"too many choices", opt(func(o *sdk.CommandOption) { o.Choices = choices }), "option 'days' cannot declare more than 25 choices"},
		{"choice name", opt(func(o *sdk.CommandOption) { o.Choices = []sdk.Choice{{Name: "", Value: 1}} }), "invalid choice name '' on option 'days'"},
		{"choice value bool", opt(func(o *sdk.CommandOption) { o.Choices = []sdk.Choice{{Name: "a", Value: true}} }), "invalid choice value True on option 'days'"},
		{"choice value float", opt(func(o *sdk.CommandOption) { o.Choices = []sdk.Choice{{Name: "a", Value: 1.5}} }), "invalid choice value 1.5 on option 'days'"},
		{"choice value empty", opt(func(o *sdk.CommandOption) {
			o.Kind = sdk.OptionString
			o.Choices = []sdk.Choice{{Name: "a", Value: ""}}
		}), "a choice value on option 'days' must contain 1 to 100 characters"},
		{"choice values unique", opt(func(o *sdk.CommandOption) {
			o.Choices = []sdk.Choice{{Name: "a", Value: 1}, {Name: "b", Value: int64(1)}}
		}), "choice values on option 'days' must be unique"},
		{"bounds on string", opt(func(o *sdk.CommandOption) { o.Kind = sdk.OptionString; o.MinValue = i64(1) }), "option 'days' cannot set min_value or max_value on a string option"},
		{"min over max", opt(func(o *sdk.CommandOption) { o.MinValue, o.MaxValue = i64(5), i64(1) }), "option 'days' min_value cannot exceed max_value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, ValidateCommandSpec(tt.spec), tt.want) })
	}
}

func TestCommandSpecDefaults(t *testing.T) {
	s := sdk.CommandSpec{Name: "setup", Group: "kudos"}
	if s.QualifiedName() != "kudos.setup" || (sdk.CommandSpec{Name: "x"}).QualifiedName() != "x" {
		t.Error("QualifiedName")
	}
	if s.EffectiveMinTier() != sdk.TierStaff {
		t.Error("commands default to staff")
	}
	if (sdk.ComponentOptions{}).EffectiveMinTier() != sdk.TierMember || (sdk.ComponentOptions{MinTier: sdk.TierStaff}).EffectiveMinTier() != sdk.TierStaff {
		t.Error("components default to member")
	}
	if !sdk.ComponentModal.Valid() || sdk.ComponentKind("link").Valid() {
		t.Error("ComponentKind.Valid")
	}
}

func TestValidateButtonSpec(t *testing.T) {
	checkErr(t, ValidateButtonSpec("m", sdk.ButtonSpec{Key: "thank_back", Label: "Thank back", Style: sdk.ButtonSuccess, Parts: []string{"1"}}), "")
	checkErr(t, ValidateButtonSpec("m", sdk.ButtonSpec{Key: "k", Style: "blurple"}), "invalid button style 'blurple'")
	checkErr(t, ValidateButtonSpec("m", sdk.ButtonSpec{Key: "K"}), "invalid component key 'K'")
	var c sdk.Component = sdk.ButtonSpec{Key: "a"}
	if c.ComponentKey() != "a" {
		t.Error("button component")
	}
	c = sdk.SelectSpec{Key: "b"}
	if c.ComponentKey() != "b" {
		t.Error("select component")
	}
}

func TestValidateSelectSpec(t *testing.T) {
	base := func(mut func(*sdk.SelectSpec)) sdk.SelectSpec {
		s := sdk.SelectSpec{Key: "pick", Options: []sdk.SelectOption{{Label: "A", Value: "a"}, {Label: "B", Value: "b", Description: "bee"}}}
		mut(&s)
		return s
	}
	many := make([]sdk.SelectOption, 26)
	for i := range many {
		many[i] = sdk.SelectOption{Label: "l", Value: strings.Repeat("v", i+1)}
	}
	tests := []struct {
		name string
		spec sdk.SelectSpec
		want string
	}{
		{"ok", base(func(*sdk.SelectSpec) {}), ""},
		{"multi", base(func(s *sdk.SelectSpec) { s.MinValues, s.MaxValues = 0, 2 }), ""},
		{"key", base(func(s *sdk.SelectSpec) { s.Key = "Pick" }), "invalid select key 'Pick'"},
		{"parts", base(func(s *sdk.SelectSpec) { s.Parts = []string{"a:b"} }), "select custom_id parts must be strings without ':'"},
		{"placeholder", base(func(s *sdk.SelectSpec) { s.Placeholder = strings.Repeat("p", 151) }), "a select placeholder cannot exceed 150 characters"},
		{"no options", base(func(s *sdk.SelectSpec) { s.Options = nil }), "a select must contain between one and 25 options"},
		{"many options", base(func(s *sdk.SelectSpec) { s.Options = many }), "a select must contain between one and 25 options"},
		{"label", base(func(s *sdk.SelectSpec) { s.Options[0].Label = "" }), "a select option label must contain 1 to 100 characters"},
		{"value", base(func(s *sdk.SelectSpec) { s.Options[0].Value = strings.Repeat("v", 101) }), "a select option value must contain 1 to 100 characters"},
		{"unique", base(func(s *sdk.SelectSpec) { s.Options[1].Value = "a" }), "select option values must be unique"},
		{"description", base(func(s *sdk.SelectSpec) { s.Options[1].Description = strings.Repeat("d", 101) }), "a select option description must contain 1 to 100 characters"},
		{"min", base(func(s *sdk.SelectSpec) { s.MinValues, s.MaxValues = -1, 1 }), "select min_values must be between 0 and 25"},
		{"max", base(func(s *sdk.SelectSpec) { s.MinValues, s.MaxValues = 1, 26 }), "select max_values must be between 1 and 25"},
		{"max zero", base(func(s *sdk.SelectSpec) { s.MinValues, s.MaxValues = 1, 0 }), "select max_values must be between 1 and 25"},
		{"min over max", base(func(s *sdk.SelectSpec) { s.MinValues, s.MaxValues = 3, 2 }), "select min_values cannot exceed max_values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, ValidateSelectSpec(tt.spec), tt.want) })
	}
	if lo, hi := (sdk.SelectSpec{}).Bounds(); lo != 1 || hi != 1 {
		t.Error("default bounds")
	}
}

func TestValidateModalSpec(t *testing.T) {
	base := func(mut func(*sdk.ModalSpec)) sdk.ModalSpec {
		m := sdk.ModalSpec{Key: "note", Title: "Add a note", Inputs: []sdk.TextInputSpec{{Key: "text", Label: "Text", Style: sdk.TextInputParagraph, MaxLength: 200}}}
		mut(&m)
		return m
	}
	six := make([]sdk.TextInputSpec, 6)
	for i := range six {
		six[i] = sdk.TextInputSpec{Key: "k" + strings.Repeat("x", i), Label: "l"}
	}
	tests := []struct {
		name string
		spec sdk.ModalSpec
		want string
	}{
		{"ok", base(func(*sdk.ModalSpec) {}), ""},
		{"key", base(func(m *sdk.ModalSpec) { m.Key = "" }), "invalid modal key ''"},
		{"parts", base(func(m *sdk.ModalSpec) { m.Parts = []string{":"} }), "modal custom_id parts must be strings without ':'"},
		{"title", base(func(m *sdk.ModalSpec) { m.Title = strings.Repeat("t", 46) }), "a modal title must contain between one and 45 characters"},
		{"no inputs", base(func(m *sdk.ModalSpec) { m.Inputs = nil }), "a modal must contain between one and five text inputs"},
		{"six inputs", base(func(m *sdk.ModalSpec) { m.Inputs = six }), "a modal must contain between one and five text inputs"},
		{"input key", base(func(m *sdk.ModalSpec) { m.Inputs[0].Key = "Text" }), "invalid modal text input key 'Text'"},
		{"input dup", base(func(m *sdk.ModalSpec) { m.Inputs = append(m.Inputs, m.Inputs[0]) }), "modal text input keys must be unique"},
		{"label", base(func(m *sdk.ModalSpec) { m.Inputs[0].Label = "" }), "a modal text input label must contain between one and 45 characters"},
		{"style", base(func(m *sdk.ModalSpec) { m.Inputs[0].Style = "long" }), "invalid modal text input style 'long'"},
		{"placeholder", base(func(m *sdk.ModalSpec) { m.Inputs[0].Placeholder = strings.Repeat("p", 101) }), "a modal text input placeholder cannot exceed 100 characters"},
		{"default", base(func(m *sdk.ModalSpec) { m.Inputs[0].Default = strings.Repeat("d", 4001) }), "a modal text input default cannot exceed 4000 characters"},
		{"min", base(func(m *sdk.ModalSpec) { m.Inputs[0].MinLength = 4001 }), "modal text input min_length must be between 0 and 4000"},
		{"max", base(func(m *sdk.ModalSpec) { m.Inputs[0].MaxLength = 4001 }), "modal text input max_length must be between 1 and 4000"},
		{"min over max", base(func(m *sdk.ModalSpec) { m.Inputs[0].MinLength = 300 }), "modal text input min_length cannot exceed max_length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, ValidateModalSpec(tt.spec), tt.want) })
	}
}

// bogusItem is a layout item the host does not know (it embeds one to
// satisfy sdk.LayoutItem).
type bogusItem struct{ sdk.LayoutText }

func TestValidateOutgoingLayout(t *testing.T) {
	accent := func(v int) *int { return &v }
	items := func(n int) []sdk.LayoutItem {
		out := make([]sdk.LayoutItem, n)
		for i := range out {
			out[i] = sdk.LayoutSeparator{}
		}
		return out
	}
	tests := []struct {
		name   string
		layout sdk.OutgoingLayout
		want   string
	}{
		{"ok", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutText{Content: "hi"}, sdk.LayoutSeparator{Spacing: sdk.SpacingLarge}, sdk.LayoutGallery{URLs: []string{"https://x/y.png"}}, sdk.LayoutSection{Texts: []string{"a"}, ThumbnailURL: "https://x/t.png"}}, AccentColor: accent(0)}, ""},
		{"empty", sdk.OutgoingLayout{}, "a layout must contain between one and 40 items"},
		{"41 items", sdk.OutgoingLayout{Items: items(41)}, "a layout must contain between one and 40 items"},
		{"accent", sdk.OutgoingLayout{Items: items(1), AccentColor: accent(0x1000000)}, "layout accent_color must be between 0 and 0xFFFFFF"},
		{"accent negative", sdk.OutgoingLayout{Items: items(1), AccentColor: accent(-1)}, "layout accent_color must be between 0 and 0xFFFFFF"},
		{"empty text", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutText{}}}, "layout text must contain between one and 4000 characters"},
		{"spacing", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutSeparator{Spacing: "huge"}}}, "invalid layout separator spacing 'huge'"},
		{"gallery empty", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutGallery{}}}, "a layout gallery must contain between one and 10 URLs"},
		{"gallery url", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutGallery{URLs: []string{""}}}}, "layout gallery URLs must be non-empty strings"},
		{"section texts", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutSection{Texts: []string{"a", "b", "c", "d"}, ThumbnailURL: "u"}}}, "a layout section must contain between one and 3 texts"},
		{"section text", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutSection{Texts: []string{""}, ThumbnailURL: "u"}}}, "layout section text must contain between one and 4000 characters"},
		{"thumbnail", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutSection{Texts: []string{"a"}, ThumbnailURL: ""}}}, "a layout section thumbnail URL must be non-empty"},
		{"unsupported", sdk.OutgoingLayout{Items: []sdk.LayoutItem{bogusItem{}}}, "unsupported layout item hostkit.bogusItem"},
		{"total", sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutText{Content: strings.Repeat("a", 4000)}, sdk.LayoutText{Content: "b"}}}, "layout text cannot exceed 4000 characters in total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, ValidateOutgoingLayout(tt.layout), tt.want) })
	}
}

type bogusComponent struct{ sdk.ButtonSpec }

func TestValidateLayoutComponents(t *testing.T) {
	buttons := func(n int) []sdk.Component {
		out := make([]sdk.Component, n)
		for i := range out {
			out[i] = sdk.ButtonSpec{Key: "b"}
		}
		return out
	}
	sel := sdk.SelectSpec{Key: "s"}
	checkErr(t, ValidateLayoutComponents(buttons(25), nil), "")
	checkErr(t, ValidateLayoutComponents(buttons(26), nil), "layout controls cannot require more than five action rows")
	checkErr(t, ValidateLayoutComponents([]sdk.Component{sel, sel, sel, sel, sel, &sdk.ButtonSpec{}}, nil), "layout controls cannot require more than five action rows")
	checkErr(t, ValidateLayoutComponents([]sdk.Component{sdk.ButtonSpec{}, sel, sdk.ButtonSpec{}, &sel}, nil), "")
	checkErr(t, ValidateLayoutComponents([]sdk.Component{bogusComponent{}}, nil), "unsupported component hostkit.bogusComponent")
	// 1 container + 1 row + 1 button + 37 text items = 40: allowed; one more item is not.
	items := make([]sdk.LayoutItem, 37)
	for i := range items {
		items[i] = sdk.LayoutText{Content: "x"}
	}
	layout := &sdk.OutgoingLayout{Items: items}
	checkErr(t, ValidateLayoutComponents(buttons(1), layout), "")
	layout.Items = append(layout.Items, sdk.LayoutText{Content: "y"})
	checkErr(t, ValidateLayoutComponents(buttons(1), layout), "a layout cannot exceed 40 components in total")
	// A section counts its texts plus two.
	checkErr(t, ValidateLayoutComponents(nil, &sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutSection{Texts: make([]string, 38)}}}), "a layout cannot exceed 40 components in total")
}

func TestOptions(t *testing.T) {
	o := sdk.Options{"s": "x", "n": int64(4), "i": 5, "b": true, "u": uint64(7), "neg": int64(-1)}
	if v, ok := o.String("s"); !ok || v != "x" {
		t.Error("String")
	}
	if v, ok := o.Int("n"); !ok || v != 4 {
		t.Error("Int")
	}
	if v, ok := o.Bool("b"); !ok || !v {
		t.Error("Bool")
	}
	for name, want := range map[string]uint64{"u": 7, "n": 4, "i": 5} {
		if v, ok := o.ID(name); !ok || v != want {
			t.Errorf("ID(%s) = %d, %v", name, v, ok)
		}
	}
	if _, ok := o.ID("neg"); ok {
		t.Error("negative id accepted")
	}
	if _, ok := o.ID("s"); ok {
		t.Error("string id accepted")
	}
	if _, ok := o.Int("missing"); ok {
		t.Error("missing int")
	}
}

func TestValidateCommandName(t *testing.T) {
	const charset = "names must be between 1-32 characters and contain only lower-case letters, numbers, hyphens, or underscores."
	tests := []struct{ name, want string }{
		{"kudos", ""},
		{"give-kudos_2", ""},
		{"café", ""},
		{"ตั้งค่า", ""},
		{strings.Repeat("a", 32), ""},
		{"", charset},
		{strings.Repeat("a", 33), charset},
		{"two words", charset},
		{"kudos.give", charset},
		{"kudos\n", charset},
		{"Kudos", "'Kudos' must be all lower-case"},
	}
	for _, tt := range tests {
		checkErr(t, ValidateCommandName(tt.name), tt.want)
	}
	checkErr(t, ValidateCommandSpec(sdk.CommandSpec{Name: "Top", Description: "d"}), "'Top' must be all lower-case")
	checkErr(t, ValidateCommandSpec(sdk.CommandSpec{Name: "top", Group: "the kudos", Description: "d"}), charset)
	checkErr(t, ValidateCommandSpec(sdk.CommandSpec{Name: "top", Description: "d", Options: []sdk.CommandOption{{Name: "Days", Kind: sdk.OptionInteger, Description: "d"}}}), "'Days' must be all lower-case")
}

func TestValidateMessageControls(t *testing.T) {
	ok := []sdk.Component{sdk.ButtonSpec{Key: "thank_back", Label: "Thank back", Parts: []string{"1"}}, &sdk.SelectSpec{Key: "pick", Options: []sdk.SelectOption{{Label: "A", Value: "a"}}}}
	checkErr(t, ValidateMessageControls("reference_kudos", ok, &sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutText{Content: "hi"}}}), "")
	checkErr(t, ValidateMessageControls("m", []sdk.Component{&sdk.ButtonSpec{Key: "Bad"}}, nil), "invalid component key 'Bad'")
	checkErr(t, ValidateMessageControls("m", []sdk.Component{sdk.SelectSpec{Key: "pick"}}, nil), "a select must contain between one and 25 options")
	long := sdk.SelectSpec{Key: "pick", Options: []sdk.SelectOption{{Label: "A", Value: "a"}}, Parts: []string{strings.Repeat("p", 100)}}
	checkErr(t, ValidateMessageControls("m", []sdk.Component{long}, nil), "custom_id exceeds 100 characters")
	checkErr(t, ValidateMessageControls("m", nil, &sdk.OutgoingLayout{}), "a layout must contain between one and 40 items")
	six := make([]sdk.Component, 6)
	for i := range six {
		six[i] = sdk.SelectSpec{Key: "s", Options: []sdk.SelectOption{{Label: "A", Value: "a"}}}
	}
	checkErr(t, ValidateMessageControls("m", six, nil), "layout controls cannot require more than five action rows")
	if Repr("it's") != `"it's"` || Repr("x") != "'x'" {
		t.Error("Repr")
	}
}
