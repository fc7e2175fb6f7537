package hostkit

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/names"
	"github.com/kimiapp/kimi/modules/sdk/internal/pyrepr"
)

// commandNameRE is discord.py's VALID_SLASH_COMMAND_NAME: 1–32 letters,
// digits, '-' or '_' (plus Devanagari and Thai ranges).
var commandNameRE = regexp.MustCompile(`\A[-_\p{L}\p{N}\x{0901}-\x{097D}\x{0E00}-\x{0E7F}]{1,32}\z`)

// ValidateCommandName checks a command, group or option name the way
// discord.py does before a sync (one bad name rejects the whole bulk sync).
// Messages: "names must be between 1-32 characters and contain only
// lower-case letters, numbers, hyphens, or underscores.", "'X' must be all
// lower-case".
func ValidateCommandName(name string) error {
	if !commandNameRE.MatchString(name) {
		return contractErrorf("names must be between 1-32 characters and contain only lower-case letters, numbers, hyphens, or underscores.")
	}
	if strings.ToLower(name) != name {
		return contractErrorf("%s must be all lower-case", pyRepr(name))
	}
	return nil
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// ValidateCommandSpec checks the Discord limits a command must satisfy (one
// malformed command rejects a whole bulk sync). Messages include
// "a command description must contain 1 to 100 characters",
// "a command group description cannot exceed 100 characters",
// "a command cannot declare more than 25 options",
// "invalid command option name 'x'", "command option names must be unique",
// "unsupported command option kind 'k'",
// "the description for option 'x' must contain 1 to 100 characters",
// "option 'x' cannot use choices and autocomplete together",
// "option 'x' cannot use choices or autocomplete on a <kind> option",
// "option 'x' cannot declare more than 25 choices",
// "invalid choice name 'n' on option 'x'", "invalid choice value v on option 'x'",
// "a choice value on option 'x' must contain 1 to 100 characters",
// "choice values on option 'x' must be unique",
// "option 'x' cannot set min_value or max_value on a <kind> option",
// "option 'x' min_value cannot exceed max_value", and
// "invalid command min_tier".
//
// Command, group and option names are also checked with ValidateCommandName.
func ValidateCommandSpec(spec sdk.CommandSpec) error {
	if err := ValidateCommandName(spec.Name); err != nil {
		return err
	}
	if spec.Group != "" {
		if err := ValidateCommandName(spec.Group); err != nil {
			return err
		}
	}
	if n := runeLen(spec.Description); n < 1 || n > 100 {
		return contractErrorf("a command description must contain 1 to 100 characters")
	}
	if spec.Group != "" && runeLen(spec.GroupDescription) > 100 {
		return contractErrorf("a command group description cannot exceed 100 characters")
	}
	if len(spec.Options) > 25 {
		return contractErrorf("a command cannot declare more than 25 options")
	}
	if spec.MinTier != 0 && !spec.MinTier.Valid() {
		return contractErrorf("invalid command min_tier")
	}
	names := map[string]bool{}
	for _, o := range spec.Options {
		if err := validateCommandOption(o, names); err != nil {
			return err
		}
	}
	return nil
}

func validateCommandOption(o sdk.CommandOption, names map[string]bool) error {
	name := pyRepr(o.Name)
	if n := runeLen(o.Name); n < 1 || n > 32 {
		return contractErrorf("invalid command option name %s", name)
	}
	if err := ValidateCommandName(o.Name); err != nil {
		return err
	}
	if names[o.Name] {
		return contractErrorf("command option names must be unique")
	}
	names[o.Name] = true
	switch o.Kind {
	case sdk.OptionString, sdk.OptionInteger, sdk.OptionBoolean, sdk.OptionUser, sdk.OptionChannel, sdk.OptionRole:
	default:
		return contractErrorf("unsupported command option kind %s", pyRepr(string(o.Kind)))
	}
	if n := runeLen(o.Description); n < 1 || n > 100 {
		return contractErrorf("the description for option %s must contain 1 to 100 characters", name)
	}
	if len(o.Choices) > 0 && o.Autocomplete {
		return contractErrorf("option %s cannot use choices and autocomplete together", name)
	}
	if (len(o.Choices) > 0 || o.Autocomplete) && o.Kind != sdk.OptionString && o.Kind != sdk.OptionInteger {
		return contractErrorf("option %s cannot use choices or autocomplete on a %s option", name, o.Kind)
	}
	if len(o.Choices) > 25 {
		return contractErrorf("option %s cannot declare more than 25 choices", name)
	}
	values := map[any]bool{}
	for _, c := range o.Choices {
		if n := runeLen(c.Name); n < 1 || n > 100 {
			return contractErrorf("invalid choice name %s on option %s", pyRepr(c.Name), name)
		}
		var key any
		switch v := c.Value.(type) {
		case string:
			if n := runeLen(v); n < 1 || n > 100 {
				return contractErrorf("a choice value on option %s must contain 1 to 100 characters", name)
			}
			key = v
		default:
			n, ok := pyrepr.AsInt64(c.Value)
			if !ok {
				return contractErrorf("invalid choice value %s on option %s", pyReprAny(c.Value), name)
			}
			key = n
		}
		if values[key] {
			return contractErrorf("choice values on option %s must be unique", name)
		}
		values[key] = true
	}
	if (o.MinValue != nil || o.MaxValue != nil) && o.Kind != sdk.OptionInteger {
		return contractErrorf("option %s cannot set min_value or max_value on a %s option", name, o.Kind)
	}
	if o.MinValue != nil && o.MaxValue != nil && *o.MinValue > *o.MaxValue {
		return contractErrorf("option %s min_value cannot exceed max_value", name)
	}
	return nil
}

// ValidateButtonSpec checks a button's key and parts the way BuildCustomID
// does ("invalid component key 'k'", "custom_id parts may not contain ':'")
// and its style ("invalid button style 's'").
func ValidateButtonSpec(module string, b sdk.ButtonSpec) error {
	switch b.Style {
	case "", sdk.ButtonPrimary, sdk.ButtonSecondary, sdk.ButtonSuccess, sdk.ButtonDanger:
	default:
		return contractErrorf("invalid button style %s", pyRepr(string(b.Style)))
	}
	_, err := sdk.BuildCustomID(module, b.Key, b.Parts...)
	return err
}

// ValidateSelectSpec checks Discord's select limits. Messages:
// "invalid select key 'k'", "select custom_id parts must be strings without ':'",
// "a select placeholder cannot exceed 150 characters",
// "a select must contain between one and 25 options",
// "a select option label must contain 1 to 100 characters",
// "a select option value must contain 1 to 100 characters",
// "select option values must be unique",
// "a select option description must contain 1 to 100 characters",
// "select min_values must be between 0 and 25",
// "select max_values must be between 1 and 25",
// "select min_values cannot exceed max_values".
func ValidateSelectSpec(s sdk.SelectSpec) error {
	if !names.TopicSegmentRE.MatchString(s.Key) {
		return contractErrorf("invalid select key %s", pyRepr(s.Key))
	}
	for _, p := range s.Parts {
		if strings.Contains(p, ":") {
			return contractErrorf("select custom_id parts must be strings without ':'")
		}
	}
	if runeLen(s.Placeholder) > 150 {
		return contractErrorf("a select placeholder cannot exceed 150 characters")
	}
	if len(s.Options) < 1 || len(s.Options) > 25 {
		return contractErrorf("a select must contain between one and 25 options")
	}
	values := map[string]bool{}
	for _, o := range s.Options {
		if n := runeLen(o.Label); n < 1 || n > 100 {
			return contractErrorf("a select option label must contain 1 to 100 characters")
		}
		if n := runeLen(o.Value); n < 1 || n > 100 {
			return contractErrorf("a select option value must contain 1 to 100 characters")
		}
		if values[o.Value] {
			return contractErrorf("select option values must be unique")
		}
		values[o.Value] = true
		if runeLen(o.Description) > 100 {
			return contractErrorf("a select option description must contain 1 to 100 characters")
		}
	}
	minV, maxV := s.Bounds()
	if minV < 0 || minV > 25 {
		return contractErrorf("select min_values must be between 0 and 25")
	}
	if maxV < 1 || maxV > 25 {
		return contractErrorf("select max_values must be between 1 and 25")
	}
	if minV > maxV {
		return contractErrorf("select min_values cannot exceed max_values")
	}
	return nil
}

// ValidateModalSpec checks Discord's modal limits. Messages:
// "invalid modal key 'k'", "modal custom_id parts must be strings without ':'",
// "a modal title must contain between one and 45 characters",
// "a modal must contain between one and five text inputs",
// "invalid modal text input key 'k'", "modal text input keys must be unique",
// "a modal text input label must contain between one and 45 characters",
// "invalid modal text input style 's'",
// "a modal text input placeholder cannot exceed 100 characters",
// "a modal text input default cannot exceed 4000 characters",
// "modal text input min_length must be between 0 and 4000",
// "modal text input max_length must be between 1 and 4000",
// "modal text input min_length cannot exceed max_length".
func ValidateModalSpec(m sdk.ModalSpec) error {
	if !names.TopicSegmentRE.MatchString(m.Key) {
		return contractErrorf("invalid modal key %s", pyRepr(m.Key))
	}
	for _, p := range m.Parts {
		if strings.Contains(p, ":") {
			return contractErrorf("modal custom_id parts must be strings without ':'")
		}
	}
	if n := runeLen(m.Title); n < 1 || n > 45 {
		return contractErrorf("a modal title must contain between one and 45 characters")
	}
	if len(m.Inputs) < 1 || len(m.Inputs) > 5 {
		return contractErrorf("a modal must contain between one and five text inputs")
	}
	keys := map[string]bool{}
	for _, in := range m.Inputs {
		if !names.TopicSegmentRE.MatchString(in.Key) {
			return contractErrorf("invalid modal text input key %s", pyRepr(in.Key))
		}
		if keys[in.Key] {
			return contractErrorf("modal text input keys must be unique")
		}
		keys[in.Key] = true
		if n := runeLen(in.Label); n < 1 || n > 45 {
			return contractErrorf("a modal text input label must contain between one and 45 characters")
		}
		if in.Style != "" && in.Style != sdk.TextInputShort && in.Style != sdk.TextInputParagraph {
			return contractErrorf("invalid modal text input style %s", pyRepr(string(in.Style)))
		}
		if runeLen(in.Placeholder) > 100 {
			return contractErrorf("a modal text input placeholder cannot exceed 100 characters")
		}
		if runeLen(in.Default) > 4000 {
			return contractErrorf("a modal text input default cannot exceed 4000 characters")
		}
		if in.MinLength < 0 || in.MinLength > 4000 {
			return contractErrorf("modal text input min_length must be between 0 and 4000")
		}
		if in.MaxLength < 0 || in.MaxLength > 4000 {
			return contractErrorf("modal text input max_length must be between 1 and 4000")
		}
		if in.MaxLength > 0 && in.MinLength > in.MaxLength {
			return contractErrorf("modal text input min_length cannot exceed max_length")
		}
	}
	return nil
}

// ValidateOutgoingLayout checks a Components V2 layout. Messages:
// "a layout must contain between one and 40 items",
// "layout accent_color must be between 0 and 0xFFFFFF",
// "layout text must contain between one and 4000 characters",
// "invalid layout separator spacing 's'",
// "a layout gallery must contain between one and 10 URLs",
// "layout gallery URLs must be non-empty strings",
// "a layout section must contain between one and 3 texts",
// "layout section text must contain between one and 4000 characters",
// "a layout section thumbnail URL must be non-empty",
// "unsupported layout item", "layout text cannot exceed 4000 characters in total".
func ValidateOutgoingLayout(layout sdk.OutgoingLayout) error {
	if len(layout.Items) < 1 || len(layout.Items) > 40 {
		return contractErrorf("a layout must contain between one and 40 items")
	}
	if c := layout.AccentColor; c != nil && (*c < 0 || *c > 0xFFFFFF) {
		return contractErrorf("layout accent_color must be between 0 and 0xFFFFFF")
	}
	total := 0
	text := func(s, label string) error {
		if n := runeLen(s); n < 1 || n > 4000 {
			return contractErrorf("%s must contain between one and 4000 characters", label)
		}
		total += runeLen(s)
		return nil
	}
	for _, item := range layout.Items {
		switch it := item.(type) {
		case sdk.LayoutText:
			if err := text(it.Content, "layout text"); err != nil {
				return err
			}
		case sdk.LayoutSeparator:
			if it.Spacing != "" && it.Spacing != sdk.SpacingSmall && it.Spacing != sdk.SpacingLarge {
				return contractErrorf("invalid layout separator spacing %s", pyRepr(string(it.Spacing)))
			}
		case sdk.LayoutGallery:
			if len(it.URLs) < 1 || len(it.URLs) > 10 {
				return contractErrorf("a layout gallery must contain between one and 10 URLs")
			}
			for _, u := range it.URLs {
				if u == "" {
					return contractErrorf("layout gallery URLs must be non-empty strings")
				}
			}
		case sdk.LayoutSection:
			if len(it.Texts) < 1 || len(it.Texts) > 3 {
				return contractErrorf("a layout section must contain between one and 3 texts")
			}
			for _, t := range it.Texts {
				if err := text(t, "layout section text"); err != nil {
					return err
				}
			}
			if it.ThumbnailURL == "" {
				return contractErrorf("a layout section thumbnail URL must be non-empty")
			}
		default:
			return contractErrorf("unsupported layout item %T", item)
		}
	}
	if total > 4000 {
		return contractErrorf("layout text cannot exceed 4000 characters in total")
	}
	return nil
}

// ValidateLayoutComponents checks control rows (buttons pack five per row,
// each select takes a row, at most five rows: "layout controls cannot
// require more than five action rows") and, with a layout, the Components
// V2 total of 40 ("a layout cannot exceed 40 components in total").
func ValidateLayoutComponents(components []sdk.Component, layout *sdk.OutgoingLayout) error {
	rows, inRow := 0, 0
	for _, c := range components {
		switch c.(type) {
		case sdk.ButtonSpec, *sdk.ButtonSpec:
			if inRow == 0 {
				rows++
			}
			inRow = (inRow + 1) % 5
		case sdk.SelectSpec, *sdk.SelectSpec:
			inRow = 0
			rows++
		default:
			return contractErrorf("unsupported component %T", c)
		}
	}
	if rows > 5 {
		return contractErrorf("layout controls cannot require more than five action rows")
	}
	if layout != nil {
		descendants := 1 + rows + len(components)
		for _, item := range layout.Items {
			if s, ok := item.(sdk.LayoutSection); ok {
				descendants += len(s.Texts) + 2
			} else {
				descendants++
			}
		}
		if descendants > 40 {
			return contractErrorf("a layout cannot exceed 40 components in total")
		}
	}
	return nil
}

// ValidateMessageControls checks what a message or interaction reply carries
// the way the host does before sending: each button (ValidateButtonSpec,
// custom ids built for module) and select (ValidateSelectSpec), the layout
// (ValidateOutgoingLayout) and the row packing and component total
// (ValidateLayoutComponents).
func ValidateMessageControls(module string, components []sdk.Component, layout *sdk.OutgoingLayout) error {
	for _, c := range components {
		var err error
		switch spec := c.(type) {
		case sdk.ButtonSpec:
			err = ValidateButtonSpec(module, spec)
		case *sdk.ButtonSpec:
			err = ValidateButtonSpec(module, *spec)
		case sdk.SelectSpec:
			err = validateSelectControl(module, spec)
		case *sdk.SelectSpec:
			err = validateSelectControl(module, *spec)
		}
		if err != nil {
			return err
		}
	}
	if layout != nil {
		if err := ValidateOutgoingLayout(*layout); err != nil {
			return err
		}
	}
	return ValidateLayoutComponents(components, layout)
}

func validateSelectControl(module string, s sdk.SelectSpec) error {
	if err := ValidateSelectSpec(s); err != nil {
		return err
	}
	_, err := sdk.BuildCustomID(module, s.Key, s.Parts...)
	return err
}

// ValidateModal checks a modal the way the host does before showing it:
// ValidateModalSpec, then its custom id `m:<module>:<key>[:part…]` built for
// module within CustomIDMaxLength ("custom_id exceeds 100 characters"),
// exactly as buttons' and selects' are.
func ValidateModal(module string, m sdk.ModalSpec) error {
	if err := ValidateModalSpec(m); err != nil {
		return err
	}
	_, err := sdk.BuildCustomID(module, m.Key, m.Parts...)
	return err
}
