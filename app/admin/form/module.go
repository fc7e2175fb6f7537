package form

import (
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/modules/sdk"
)

// ModuleEnabled is the field of the enable/disable form
// (POST /modules/{name}/enabled): "true" or "false", the state asked for.
const ModuleEnabled = "enabled"

// Messages of the module forms.
const (
	MsgModuleEnabled       = "Choose whether the module is enabled."
	MsgModuleNotSaved      = "The settings were not saved. Correct the fields marked below."
	MsgModuleSettingLength = "This value is too long (at most 4096 characters)."
	MsgModuleSettingText   = "This value must be text without control characters."
	MsgModuleSettingBool   = "Choose true, false, or leave it unset."
)

// maxSettingLen bounds one submitted setting value.
const maxSettingLen = 4096

// ModuleToggle is the enable/disable form of one module.
type ModuleToggle struct {
	Enabled bool
	raw     string
}

// ParseModuleToggle reads the toggle form from r.
func ParseModuleToggle(r *http.Request) ModuleToggle {
	raw := strings.TrimSpace(value(r, ModuleEnabled))
	return ModuleToggle{Enabled: raw == "true", raw: raw}
}

// Validate refuses a toggle that asks for neither state.
func (f ModuleToggle) Validate() Errors {
	var e Errors
	if f.raw != "true" && f.raw != "false" {
		e.Add(FieldForm, MsgModuleEnabled)
	}
	return e
}

// ModuleSettings is a module's deployment-settings form, generated from
// its sdk.SettingsDefinition: one input per editable field, named
// ModuleSettingName(field) as on the guild module forms. A value left
// empty removes the saved one (the environment's or the default applies);
// an empty secret keeps the saved secret.
type ModuleSettings struct {
	// Values holds every editable field's text as typed, by field name.
	Values map[string]string
}

// ParseModuleSettings reads the form of the editable fields from r.
func ParseModuleSettings(r *http.Request, fields []sdk.SettingField) ModuleSettings {
	f := ModuleSettings{Values: map[string]string{}}
	for _, field := range fields {
		v := value(r, ModuleSettingName(field.Name))
		if field.Multiline {
			v = strings.ReplaceAll(v, "\r\n", "\n")
		} else {
			v = strings.TrimSpace(v)
		}
		f.Values[field.Name] = v
	}
	return f
}

// Validate checks what the form alone can: the length and characters of
// each value and a boolean's choice. Types and bounds are the module's
// definition to judge (the host's SaveSettings, mapped by Errors).
func (f ModuleSettings) Validate(fields []sdk.SettingField) Errors {
	var e Errors
	for _, field := range fields {
		v, name := f.Values[field.Name], ModuleSettingName(field.Name)
		switch {
		case utf8.RuneCountInString(v) > maxSettingLen:
			e.Add(name, MsgModuleSettingLength)
		case !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }):
			e.Add(name, MsgModuleSettingText)
		case field.Kind == sdk.SettingBool && v != "" && v != "true" && v != "false":
			e.Add(name, MsgModuleSettingBool)
		}
	}
	if !e.OK() {
		e[FieldForm] = MsgModuleNotSaved
	}
	return e
}

// Errors maps the host's refusal to the form: each *host.FieldError to its
// field's input, one without a field (or for a field the form does not
// show) into the page-level message. Nil when err is not a refusal meant
// for a person.
func (f ModuleSettings) Errors(err error) Errors {
	var se *host.SettingsError
	if !errors.As(err, &se) {
		return nil
	}
	e := Errors{FieldForm: MsgModuleNotSaved}
	for _, fe := range se.Fields {
		if _, shown := f.Values[fe.Field]; fe.Field != "" && shown {
			e.Add(ModuleSettingName(fe.Field), fe.Message)
			continue
		}
		e[FieldForm] += " " + fe.Message
	}
	return e
}
