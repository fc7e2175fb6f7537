package sdk

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SettingKind is the type of a deployment setting.
type SettingKind string

// Setting kinds.
const (
	SettingInt    SettingKind = "int"
	SettingFloat  SettingKind = "float"
	SettingString SettingKind = "str"
	SettingBool   SettingKind = "bool"
)

// SettingField declares one deployment setting of a module. Values come from
// the environment variable SettingEnvName(module, Name) and, for exposed
// fields, from the operator's overlay in the admin UI. Secrets, URLs and
// paths must be EnvironmentOnly.
type SettingField struct {
	// Name matches `[a-z][a-z0-9_]{0,63}` and is unique in the definition.
	Name string
	// Label and Help are shown in the admin UI.
	Label string
	Help  string
	Kind  SettingKind
	// Default is used when no value is configured: int/int64, float64,
	// string or bool to match Kind. nil means the setting is required.
	Default any
	// Min bounds int and float settings from below when HasMin is set
	// ("must be at least N").
	Min    float64
	HasMin bool
	// Max bounds int and float settings from above when HasMax is set
	// ("must be at most N"), as the reference bounds, for example, a file
	// size to 50 MiB. The admin form shows both bounds beside the field.
	Max    float64
	HasMax bool
	// Choices restricts a string setting to these values.
	Choices []string
	// Multiline renders a string setting as a text area.
	Multiline bool
	// EnvironmentOnly keeps the setting out of the operator overlay.
	EnvironmentOnly bool
	// Secret additionally means the value is never rendered back or logged.
	// Secret implies EnvironmentOnly.
	Secret bool
}

// Exposed reports whether the operator may edit the field in the admin UI.
func (f SettingField) Exposed() bool { return !f.EnvironmentOnly && !f.Secret }

// SettingsDefinition declares a module's deployment settings (the reference's
// ModuleSettingsDefinition; the name is the spec's).
type SettingsDefinition struct {
	// Label titles the settings in the admin UI.
	Label  string
	Fields []SettingField
}

// Field returns the field named name.
func (d SettingsDefinition) Field(name string) (SettingField, bool) {
	i := slices.IndexFunc(d.Fields, func(f SettingField) bool { return f.Name == name })
	if i < 0 {
		return SettingField{}, false
	}
	return d.Fields[i], true
}

// Validate checks the definition: valid unique names, known kinds, defaults
// of the right kind within Min, Max and Choices, Min and Max only on numbers
// (Min not above Max), Choices only on strings.
func (d SettingsDefinition) Validate(module string) error {
	seen := map[string]bool{}
	for _, f := range d.Fields {
		if !settingNameRE.MatchString(f.Name) {
			return contractErrorf("module %s setting %s has an invalid name", pyRepr(module), pyRepr(f.Name))
		}
		if seen[f.Name] {
			return contractErrorf("module %s declares setting %s twice", pyRepr(module), pyRepr(f.Name))
		}
		seen[f.Name] = true
		switch f.Kind {
		case SettingInt, SettingFloat, SettingString, SettingBool:
		default:
			return contractErrorf("module %s setting %s has unsupported kind %s", pyRepr(module), pyRepr(f.Name), pyRepr(string(f.Kind)))
		}
		if f.HasMin && f.Kind != SettingInt && f.Kind != SettingFloat {
			return contractErrorf("module %s setting %s has a minimum but is not numeric", pyRepr(module), pyRepr(f.Name))
		}
		if f.HasMax && f.Kind != SettingInt && f.Kind != SettingFloat {
			return contractErrorf("module %s setting %s has a maximum but is not numeric", pyRepr(module), pyRepr(f.Name))
		}
		if f.HasMin && f.HasMax && f.Min > f.Max {
			return contractErrorf("module %s setting %s has a minimum above its maximum", pyRepr(module), pyRepr(f.Name))
		}
		if len(f.Choices) > 0 && f.Kind != SettingString {
			return contractErrorf("module %s setting %s has choices but is not str", pyRepr(module), pyRepr(f.Name))
		}
		if f.Default != nil {
			if _, err := f.coerce(f.Default); err != "" {
				return contractErrorf("module %s setting %s has an invalid default: %s", pyRepr(module), pyRepr(f.Name), err)
			}
		}
	}
	return nil
}

// Prepare builds the module's Settings from raw text values keyed by field
// name (environment, then overlay, already merged by the caller). Missing
// values take the default; a missing value without default, an unknown key
// or a value that does not coerce is an error naming the setting.
func (d SettingsDefinition) Prepare(module string, raw map[string]string) (Settings, error) {
	values := make(map[string]any, len(d.Fields))
	for key := range raw {
		if _, ok := d.Field(key); !ok {
			return Settings{}, contractErrorf("module %s has no setting %s", pyRepr(module), pyRepr(key))
		}
	}
	for _, f := range d.Fields {
		text, ok := raw[f.Name]
		var v any
		if ok {
			parsed, msg := f.parse(text)
			if msg != "" {
				return Settings{}, contractErrorf("module %s setting %s: %s", pyRepr(module), pyRepr(f.Name), msg)
			}
			v = parsed
		} else if f.Default != nil {
			v, _ = f.coerce(f.Default)
		} else {
			return Settings{}, contractErrorf("module %s setting %s is required", pyRepr(module), pyRepr(f.Name))
		}
		values[f.Name] = v
	}
	return Settings{values: values}, nil
}

// parse converts a text value to the field's kind and checks its bounds.
func (f SettingField) parse(text string) (any, string) {
	text = strings.TrimSpace(text)
	switch f.Kind {
	case SettingInt:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, "must be an integer"
		}
		return f.coerce(n)
	case SettingFloat:
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, "must be a number"
		}
		return f.coerce(x)
	case SettingBool:
		switch strings.ToLower(text) {
		case "1", "true", "yes", "on":
			return true, ""
		case "0", "false", "no", "off":
			return false, ""
		}
		return nil, "must be true or false"
	default:
		return f.coerce(text)
	}
}

// coerce checks a typed value against the field; the message is "" when valid.
func (f SettingField) coerce(v any) (any, string) {
	switch f.Kind {
	case SettingInt:
		n, ok := asInt64(v)
		if !ok {
			return nil, "must be an integer"
		}
		if msg := f.checkBounds(float64(n)); msg != "" {
			return nil, msg
		}
		return n, ""
	case SettingFloat:
		var x float64
		switch t := v.(type) {
		case float64:
			x = t
		case float32:
			x = float64(t)
		default:
			n, ok := asInt64(v)
			if !ok {
				return nil, "must be a number"
			}
			x = float64(n)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, "must be a finite number"
		}
		if msg := f.checkBounds(x); msg != "" {
			return nil, msg
		}
		return x, ""
	case SettingBool:
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false"
		}
		return b, ""
	case SettingString:
		s, ok := v.(string)
		if !ok {
			return nil, "must be text"
		}
		if len(f.Choices) > 0 && !slices.Contains(f.Choices, s) {
			return nil, "must be one of " + strings.Join(f.Choices, ", ")
		}
		return s, ""
	}
	return nil, "has unsupported kind " + pyRepr(string(f.Kind))
}

// checkBounds applies Min and Max; the message is "" when x is within them.
func (f SettingField) checkBounds(x float64) string {
	if f.HasMin && x < f.Min {
		return "must be at least " + strconv.FormatFloat(f.Min, 'f', -1, 64)
	}
	if f.HasMax && x > f.Max {
		return "must be at most " + strconv.FormatFloat(f.Max, 'f', -1, 64)
	}
	return ""
}

// Settings are a module's prepared deployment settings: an immutable map
// from field name to int64, float64, string or bool. Accessors return the
// zero value for unknown names or other kinds.
type Settings struct {
	values map[string]any
}

// NewSettings builds Settings from typed values (copied). Tests and fakes
// use it; the host uses SettingsDefinition.Prepare.
func NewSettings(values map[string]any) Settings {
	out := make(map[string]any, len(values))
	for k, v := range values {
		if n, ok := asInt64(v); ok {
			v = n
		}
		out[k] = v
	}
	return Settings{values: out}
}

// Lookup returns the raw value of a setting.
func (s Settings) Lookup(name string) (any, bool) {
	v, ok := s.values[name]
	return v, ok
}

// Int returns an int setting.
func (s Settings) Int(name string) int64 { n, _ := s.values[name].(int64); return n }

// Float returns a float setting (int settings convert).
func (s Settings) Float(name string) float64 {
	switch v := s.values[name].(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	}
	return 0
}

// String returns a string setting.
func (s Settings) String(name string) string { v, _ := s.values[name].(string); return v }

// Bool returns a bool setting.
func (s Settings) Bool(name string) bool { v, _ := s.values[name].(bool); return v }

var (
	_ fmt.Formatter  = Settings{}
	_ slog.LogValuer = Settings{}
)

// Format prints the setting names only, never a value: settings may hold
// secrets, and a module that logs or prints its settings must not leak
// them. Every verb renders "sdk.Settings{name, …}".
func (s Settings) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprint(f, "sdk.Settings{"+strings.Join(s.Names(), ", ")+"}")
}

// LogValue renders the setting names only (see Format), so slog never
// records a value.
func (s Settings) LogValue() slog.Value {
	return slog.StringValue("sdk.Settings{" + strings.Join(s.Names(), ", ") + "}")
}

// Names returns the setting names, sorted.
func (s Settings) Names() []string {
	names := make([]string, 0, len(s.values))
	for k := range s.values {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
