package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Guild-settings limits.
const (
	// MaxGuildSettingListEntries bounds id_list and str_list values.
	MaxGuildSettingListEntries = 512
	// MaxGuildSettingStringLength bounds str values and str_list entries,
	// in characters.
	MaxGuildSettingStringLength = 2000
)

// GuildSettings is the per-guild settings port, present when the spec
// declares a GuildSettingsSchema. Values are edited by staff proposals and
// in the admin UI and apply live.
type GuildSettings interface {
	// GuildIDs lists active guilds with settings for this module, sorted.
	GuildIDs() []uint64
	// Get returns the guild's current snapshot (defaults when none stored).
	Get(ctx context.Context, guildID uint64) (GuildSettingsSnapshot, error)
	// IsEnabled reports whether the guild is active and its settings valid.
	IsEnabled(ctx context.Context, guildID uint64) bool
	// OnChange calls fn after a guild's settings for this module change.
	// ctx is the module's lifetime context (cancelled when the module
	// closes) bounded by the host's callback timeout, so a callback that
	// waits needs no lifetime context of its own.
	OnChange(fn func(ctx context.Context, guildID uint64)) Registration
}

// GuildSettingKind is the type of a guild setting. Coerced values are:
// int → int64, id → uint64, id_list → []uint64, str and enum → string,
// str_list → []string, bool → bool.
type GuildSettingKind string

// Guild setting kinds.
const (
	GuildSettingInt     GuildSettingKind = "int"
	GuildSettingID      GuildSettingKind = "id"
	GuildSettingIDList  GuildSettingKind = "id_list"
	GuildSettingStr     GuildSettingKind = "str"
	GuildSettingStrList GuildSettingKind = "str_list"
	GuildSettingEnum    GuildSettingKind = "enum"
	GuildSettingBool    GuildSettingKind = "bool"
)

// GuildSettingRef says what an id or id_list setting's ids are, so the
// admin offers them as a picker of the guild's channels, roles or members
// ("": plain ids, typed).
type GuildSettingRef string

// Guild setting references.
const (
	// RefChannel is a channel messages can be posted in.
	RefChannel GuildSettingRef = "channel"
	RefRole    GuildSettingRef = "role"
	RefUser    GuildSettingRef = "user"
)

// InvalidPolicy says what invalid settings disable.
type InvalidPolicy string

// Invalid policies; "" means DisableGuild (fail closed: enforcement modules
// take only the broken guild offline).
const (
	DisableModule InvalidPolicy = "disable_module"
	DisableGuild  InvalidPolicy = "disable_guild"
)

// GuildSettingField declares one guild setting. Name matches
// `[a-z][a-z0-9_]{0,63}`; enum needs Choices and only enum may have them; a
// Required field has no Default; a Default must coerce; only id and
// id_list may have Refers.
type GuildSettingField struct {
	Name     string
	Kind     GuildSettingKind
	Required bool
	Default  any
	Choices  []string
	Help     string
	// Refers says what an id or id_list field's ids are (a channel, role
	// or user); the admin then offers a picker.
	Refers GuildSettingRef
}

// GuildSettingsSchema declares a module's guild settings. Validate, when
// set, checks the coerced values as a whole and returns error texts; it
// runs only when every field coerced.
type GuildSettingsSchema struct {
	Fields        []GuildSettingField
	InvalidPolicy InvalidPolicy
	Validate      func(values map[string]any) []string
}

// EffectivePolicy returns InvalidPolicy or DisableGuild.
func (s GuildSettingsSchema) EffectivePolicy() InvalidPolicy {
	if s.InvalidPolicy == "" {
		return DisableGuild
	}
	return s.InvalidPolicy
}

// Field returns the field named name.
func (s GuildSettingsSchema) Field(name string) (GuildSettingField, bool) {
	i := slices.IndexFunc(s.Fields, func(f GuildSettingField) bool { return f.Name == name })
	if i < 0 {
		return GuildSettingField{}, false
	}
	return s.Fields[i], true
}

// GuildSettingsSnapshot is one guild's settings: coerced values, validity,
// errors and the revision (first 16 hex digits of the document's sha256,
// "" when none is stored). Treat it as immutable.
type GuildSettingsSnapshot struct {
	Values   map[string]any
	Valid    bool
	Errors   []string
	Revision string
}

// Lookup returns a value.
func (s GuildSettingsSnapshot) Lookup(name string) (any, bool) { v, ok := s.Values[name]; return v, ok }

// ID returns an id setting (0 when unset).
func (s GuildSettingsSnapshot) ID(name string) uint64 { v, _ := s.Values[name].(uint64); return v }

// IDs returns an id_list setting (a copy).
func (s GuildSettingsSnapshot) IDs(name string) []uint64 {
	v, _ := s.Values[name].([]uint64)
	return slices.Clone(v)
}

// Int returns an int setting.
func (s GuildSettingsSnapshot) Int(name string) int64 { v, _ := s.Values[name].(int64); return v }

// String returns a str or enum setting.
func (s GuildSettingsSnapshot) String(name string) string { v, _ := s.Values[name].(string); return v }

// Strings returns a str_list setting (a copy).
func (s GuildSettingsSnapshot) Strings(name string) []string {
	v, _ := s.Values[name].([]string)
	return slices.Clone(v)
}

// Bool returns a bool setting.
func (s GuildSettingsSnapshot) Bool(name string) bool { v, _ := s.Values[name].(bool); return v }

// ValidateSchema checks the schema declaration for module (the schema's
// Validate field checks values, not the declaration). Messages (module m, field x):
// "module 'm' guild settings has invalid policy 'p'",
// "module 'm' guild setting 'x' has an invalid name",
// "module 'm' declares guild setting 'x' twice",
// "module 'm' enum setting 'x' needs choices",
// "module 'm' setting 'x' has choices but is not enum",
// "module 'm' setting 'x' is required with a default",
// "module 'm' setting 'x' has an invalid default: <error>".
func (schema GuildSettingsSchema) ValidateSchema(module string) error {
	if p := schema.EffectivePolicy(); p != DisableModule && p != DisableGuild {
		return contractErrorf("module %s guild settings has invalid policy %s", pyRepr(module), pyRepr(string(p)))
	}
	names := map[string]bool{}
	for _, f := range schema.Fields {
		if !settingNameRE.MatchString(f.Name) {
			return contractErrorf("module %s guild setting %s has an invalid name", pyRepr(module), pyRepr(f.Name))
		}
		if names[f.Name] {
			return contractErrorf("module %s declares guild setting %s twice", pyRepr(module), pyRepr(f.Name))
		}
		names[f.Name] = true
		if f.Kind == GuildSettingEnum && len(f.Choices) == 0 {
			return contractErrorf("module %s enum setting %s needs choices", pyRepr(module), pyRepr(f.Name))
		}
		if f.Kind != GuildSettingEnum && len(f.Choices) > 0 {
			return contractErrorf("module %s setting %s has choices but is not enum", pyRepr(module), pyRepr(f.Name))
		}
		switch f.Refers {
		case "":
		case RefChannel, RefRole, RefUser:
			if f.Kind != GuildSettingID && f.Kind != GuildSettingIDList {
				return contractErrorf("module %s setting %s refers to a %s but is not id or id_list", pyRepr(module), pyRepr(f.Name), string(f.Refers))
			}
		default:
			return contractErrorf("module %s setting %s refers to %s, not channel, role or user", pyRepr(module), pyRepr(f.Name), pyRepr(string(f.Refers)))
		}
		if f.Required && f.Default != nil {
			return contractErrorf("module %s setting %s is required with a default", pyRepr(module), pyRepr(f.Name))
		}
		if f.Default != nil {
			if _, err := f.Coerce(f.Default); err != nil {
				return contractErrorf("module %s setting %s has an invalid default: %s", pyRepr(module), pyRepr(f.Name), err.Error())
			}
		}
	}
	return nil
}

// GuildSettingValueError is a value that does not fit its field; Message is
// the reference's text (for example "x must be a numeric Discord id").
type GuildSettingValueError struct {
	Field   string
	Message string
}

// Error returns the message.
func (e *GuildSettingValueError) Error() string { return e.Message }

func valueErr(field, format string, args ...any) *GuildSettingValueError {
	return &GuildSettingValueError{Field: field, Message: field + " " + fmt.Sprintf(format, args...)}
}

// Coerce validates and normalizes one configured value (or the default
// when raw is nil) of the field. raw is what a document decoder yields:
// bool, Go integers, json.Number, string, or []any / []string / []uint64 /
// []int64 / []int. A nil result with a nil error means "unset". Messages:
// "x is required", "x must be true or false", "x must be an integer",
// "x must be a numeric Discord id", "x must be a list of Discord ids",
// "x has more than 512 entries", "x contains a non-numeric id <v>",
// "x must be text", "x is longer than 2000 characters",
// "x must be a list of text values", "x contains an invalid entry <v>",
// "x must be one of a, b", "x has unsupported kind 'k'".
func (field GuildSettingField) Coerce(raw any) (any, error) {
	name := field.Name
	if raw == nil {
		if field.Required {
			return nil, valueErr(name, "is required")
		}
		if field.Default == nil {
			return nil, nil
		}
		raw = field.Default
	}
	switch field.Kind {
	case GuildSettingBool:
		if b, ok := raw.(bool); ok {
			return b, nil
		}
		return nil, valueErr(name, "must be true or false")
	case GuildSettingInt:
		if n, ok := integerValue(raw); ok {
			return n, nil
		}
		return nil, valueErr(name, "must be an integer")
	case GuildSettingID:
		if id, ok := parseSnowflake(raw); ok {
			return id, nil
		}
		return nil, valueErr(name, "must be a numeric Discord id")
	case GuildSettingIDList:
		items, ok := listValue(raw)
		if !ok {
			return nil, valueErr(name, "must be a list of Discord ids")
		}
		if len(items) > MaxGuildSettingListEntries {
			return nil, valueErr(name, "has more than %d entries", MaxGuildSettingListEntries)
		}
		ids := make([]uint64, 0, len(items))
		for _, item := range items {
			id, ok := parseSnowflake(item)
			if !ok {
				return nil, valueErr(name, "contains a non-numeric id %s", pyReprAny(item))
			}
			ids = append(ids, id)
		}
		return ids, nil
	case GuildSettingStr:
		s, ok := raw.(string)
		if !ok {
			return nil, valueErr(name, "must be text")
		}
		if utf8.RuneCountInString(s) > MaxGuildSettingStringLength {
			return nil, valueErr(name, "is longer than %d characters", MaxGuildSettingStringLength)
		}
		return s, nil
	case GuildSettingStrList:
		items, ok := listValue(raw)
		if !ok {
			return nil, valueErr(name, "must be a list of text values")
		}
		if len(items) > MaxGuildSettingListEntries {
			return nil, valueErr(name, "has more than %d entries", MaxGuildSettingListEntries)
		}
		out := make([]string, 0, len(items))
		for _, item := range items {
			s, ok := item.(string)
			if !ok || utf8.RuneCountInString(s) > MaxGuildSettingStringLength {
				return nil, valueErr(name, "contains an invalid entry %s", pyReprAny(item))
			}
			out = append(out, s)
		}
		return out, nil
	case GuildSettingEnum:
		token := strings.TrimSpace(pyStr(raw))
		if !slices.Contains(field.Choices, token) {
			return nil, valueErr(name, "must be one of %s", strings.Join(field.Choices, ", "))
		}
		return token, nil
	}
	return nil, valueErr(name, "has unsupported kind %s", pyRepr(string(field.Kind)))
}

// integerValue accepts Go integers that fit int64 and integral json.Number;
// never bool or float.
func integerValue(v any) (int64, bool) {
	if n, ok := v.(json.Number); ok {
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	}
	return asInt64(v)
}

// parseSnowflake follows the reference: str(value).strip() must be 1–25
// digits. Only ASCII digits count (Python's \d also takes other scripts'
// digits), and values that do not fit uint64 are rejected too.
func parseSnowflake(v any) (uint64, bool) {
	switch v.(type) {
	case bool, float32, float64, nil:
		return 0, false
	}
	token := strings.TrimSpace(pyStr(v))
	if !guildIDTextRE.MatchString(token) {
		return 0, false
	}
	id, err := strconv.ParseUint(token, 10, 64)
	return id, err == nil
}

// listValue turns the list shapes a decoder yields into []any.
func listValue(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case []string:
		return toAny(l), true
	case []uint64:
		return toAny(l), true
	case []int64:
		return toAny(l), true
	case []int:
		return toAny(l), true
	}
	return nil, false
}

func toAny[T any](in []T) []any {
	out := make([]any, len(in))
	for i, v := range in {
		out[i] = v
	}
	return out
}

// GuildSettingsResult is the outcome of evaluating a guild document.
type GuildSettingsResult struct {
	// Values holds every field: coerced value, default, or nil when unset.
	Values map[string]any
	// Errors is empty when the document is valid.
	Errors []string
}

// Valid reports whether there are no errors.
func (r GuildSettingsResult) Valid() bool { return len(r.Errors) == 0 }

// Evaluate applies the schema to a decoded document: unknown keys
// ("unknown setting 'k'", sorted), per-field coercion in declaration order,
// then — only without errors — the schema's Validate (a panic there becomes
// "validation failed: <panic>"). Host and fakes share it.
func (schema GuildSettingsSchema) Evaluate(document map[string]any) (result GuildSettingsResult) {
	result.Values = make(map[string]any, len(schema.Fields))
	var unknown []string
	for key := range document {
		if _, ok := schema.Field(key); !ok {
			unknown = append(unknown, key)
		}
	}
	sort.Strings(unknown)
	for _, key := range unknown {
		result.Errors = append(result.Errors, "unknown setting "+pyRepr(key))
	}
	for _, f := range schema.Fields {
		v, err := f.Coerce(document[f.Name])
		if err != nil {
			result.Errors = append(result.Errors, err.Error())
			continue
		}
		result.Values[f.Name] = v
	}
	if len(result.Errors) == 0 && schema.Validate != nil {
		result.Errors = runSettingsValidator(schema.Validate, result.Values)
	}
	return result
}

func runSettingsValidator(validate func(map[string]any) []string, values map[string]any) (errs []string) {
	defer func() {
		if r := recover(); r != nil {
			errs = []string{fmt.Sprintf("validation failed: %v", r)}
		}
	}()
	copied := make(map[string]any, len(values))
	for k, v := range values {
		copied[k] = v
	}
	return slices.Clone(validate(copied))
}

// RenderGuildSettings renders values as the frontmatter-only document the
// host stores for a guild:<id>:<module> target: keys sorted between "---"
// lines; nil omitted; bool true/false; integers bare; strings always
// double-quoted (JSON syntax, with DEL, C1 controls, U+2028, U+2029, U+FEFF,
// U+FFFE and U+FFFF written as \uXXXX); lists in flow style "[a, b]". Keys
// must be valid setting names ("invalid guild setting name 'k'"); other
// value types fail ("guild setting 'k' has unrenderable value …").
func RenderGuildSettings(values map[string]any) (string, error) {
	keys := make([]string, 0, len(values))
	for k := range values {
		if !settingNameRE.MatchString(k) {
			return "", contractErrorf("invalid guild setting name %s", pyRepr(k))
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("---\n")
	for _, k := range keys {
		v := values[k]
		if v == nil {
			continue
		}
		var rendered string
		if items, ok := listValue(v); ok {
			parts := make([]string, len(items))
			for i, item := range items {
				s, err := renderScalar(k, item)
				if err != nil {
					return "", err
				}
				parts[i] = s
			}
			rendered = "[" + strings.Join(parts, ", ") + "]"
		} else {
			s, err := renderScalar(k, v)
			if err != nil {
				return "", err
			}
			rendered = s
		}
		b.WriteString(k + ": " + rendered + "\n")
	}
	b.WriteString("---\n")
	return b.String(), nil
}

func renderScalar(key string, v any) (string, error) {
	switch t := v.(type) {
	case bool:
		if t {
			return "true", nil
		}
		return "false", nil
	case string:
		return quoteYAML(t), nil
	case uint64:
		return strconv.FormatUint(t, 10), nil
	case uint:
		return strconv.FormatUint(uint64(t), 10), nil
	case json.Number:
		if _, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return string(t), nil
		}
	}
	if n, ok := asInt64(v); ok {
		return strconv.FormatInt(n, 10), nil
	}
	return "", contractErrorf("guild setting %s has unrenderable value %s", pyRepr(key), pyReprAny(v))
}

// quoteYAML renders s as Python's json.dumps(s, ensure_ascii=False) with
// YAML-unprintable characters escaped as \uXXXX.
func quoteYAML(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20, yamlUnprintable(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func yamlUnprintable(r rune) bool {
	return (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xdfff) ||
		r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff
}
