package form

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ModuleSettingPrefix starts the form name of every field of a generated
// module-settings form (POST /guilds/{id}/modules/{module}): the name is
// ModuleSettingPrefix + the schema field's name, so no schema field can
// collide with GuildExpectedRevision or the CSRF token.
const ModuleSettingPrefix = "setting."

// ModuleSettingName is the form field of a schema field.
func ModuleSettingName(field string) string { return ModuleSettingPrefix + field }

// GuildModuleSettings is a module's settings form generated from its
// sdk.GuildSettingsSchema: each field's value as typed ("" leaves it unset,
// so its default applies), booleans as ticked or not.
type GuildModuleSettings struct {
	Schema           sdk.GuildSettingsSchema
	Values           map[string]string
	Bools            map[string]bool
	ExpectedRevision string
}

// ParseGuildModuleSettings reads the form of schema from r.
func ParseGuildModuleSettings(r *http.Request, schema sdk.GuildSettingsSchema) GuildModuleSettings {
	f := GuildModuleSettings{Schema: schema, Values: map[string]string{}, Bools: map[string]bool{},
		ExpectedRevision: strings.TrimSpace(value(r, GuildExpectedRevision))}
	for _, field := range schema.Fields {
		name := ModuleSettingName(field.Name)
		switch field.Kind {
		case sdk.GuildSettingBool:
			f.Bools[field.Name] = checked(r, name)
		case sdk.GuildSettingStr, sdk.GuildSettingStrList:
			f.Values[field.Name] = strings.ReplaceAll(value(r, name), "\r\n", "\n")
		case sdk.GuildSettingID:
			f.Values[field.Name] = pickedID(r, name)
		case sdk.GuildSettingIDList:
			f.Values[field.Name] = pickedIDs(r, name)
		default:
			f.Values[field.Name] = strings.TrimSpace(value(r, name))
		}
	}
	return f
}

// Validate checks the revision; the values are the schema's to judge
// (guildcfg evaluates the document Document renders).
func (f GuildModuleSettings) Validate() Errors {
	var e Errors
	checkRevision(&e, f.ExpectedRevision)
	return e
}

// Errors maps a refusal of guildcfg to the form: a schema field's
// problems to its input, the validator's (whole-document) ones and any
// other key's into the page-level message.
func (f GuildModuleSettings) Errors(err error) Errors {
	e := GuildErrors(err, FieldForm)
	if e == nil {
		return nil
	}
	out := Errors{FieldForm: e[FieldForm]}
	for field, msg := range e {
		switch _, ok := f.Schema.Field(field); {
		case ok:
			out[ModuleSettingName(field)] = msg
		case field != FieldForm:
			out[FieldForm] += " " + msg
		}
	}
	return out
}

var intRE = regexp.MustCompile(`\A-?[0-9]{1,19}\z`)

// Document renders the form as the module's frontmatter-only document:
// the schema's fields in declaration order, unset ones left out (so the
// default applies), booleans always written. As for the server-setup
// form, a value is written bare only when YAML reads it as what it looks
// like; anything else is a quoted string the schema refuses with its own
// message.
func (f GuildModuleSettings) Document() string {
	var b strings.Builder
	b.WriteString("---\n")
	for _, field := range f.Schema.Fields {
		if field.Kind == sdk.GuildSettingBool {
			b.WriteString(field.Name + ": " + boolText(f.Bools[field.Name]) + "\n")
			continue
		}
		v := f.Values[field.Name]
		var rendered string
		switch field.Kind {
		case sdk.GuildSettingInt:
			if v == "" {
				continue
			}
			rendered = quote(v)
			if intRE.MatchString(v) {
				rendered = v
			}
		case sdk.GuildSettingID:
			if v == "" {
				continue
			}
			rendered = idToken(v)
		case sdk.GuildSettingIDList:
			ids := SplitIDs(v)
			if len(ids) == 0 {
				continue
			}
			rendered = flowList(ids, idToken)
		case sdk.GuildSettingStrList:
			lines := splitLines(v)
			if len(lines) == 0 {
				continue
			}
			rendered = flowList(lines, quote)
		default: // str, enum
			if v == "" {
				continue
			}
			rendered = quote(v)
		}
		b.WriteString(field.Name + ": " + rendered + "\n")
	}
	b.WriteString("---\n")
	return b.String()
}

// splitLines is a text-list textarea's entries: one per line, trimmed,
// blank lines dropped.
func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
