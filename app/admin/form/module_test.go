package form

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/modules/sdk"
)

var probeFields = []sdk.SettingField{
	{Name: "limit", Kind: sdk.SettingInt},
	{Name: "on", Kind: sdk.SettingBool},
	{Name: "note", Kind: sdk.SettingString, Multiline: true},
}

func TestModuleToggle(t *testing.T) {
	for _, tt := range []struct {
		raw     string
		enabled bool
		ok      bool
	}{{"true", true, true}, {"false", false, true}, {" true ", true, true}, {"", false, false}, {"yes", false, false}} {
		f := ParseModuleToggle(postForm(url.Values{ModuleEnabled: {tt.raw}}))
		if f.Enabled != tt.enabled || f.Validate().OK() != tt.ok {
			t.Errorf("%q: enabled %v valid %v, want %v %v", tt.raw, f.Enabled, f.Validate().OK(), tt.enabled, tt.ok)
		}
	}
}

func TestModuleSettingsValidate(t *testing.T) {
	for _, tt := range []struct {
		name, field, value, want string
	}{
		{"fine", "limit", "7", ""},
		{"empty removes", "limit", "", ""},
		{"a bool", "on", "true", ""},
		{"not a bool", "on", "yes", MsgModuleSettingBool},
		{"control character", "limit", "7\x01", MsgModuleSettingText},
		{"too long", "note", strings.Repeat("x", maxSettingLen+1), MsgModuleSettingLength},
		{"newlines in a multiline", "note", "a\r\nb", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := ParseModuleSettings(postForm(url.Values{ModuleSettingName(tt.field): {tt.value}}), probeFields)
			e := f.Validate(probeFields)
			if got := e.Get(ModuleSettingName(tt.field)); got != tt.want {
				t.Errorf("message %q, want %q", got, tt.want)
			}
			if (tt.want == "") != e.OK() {
				t.Errorf("errors %v", e)
			}
		})
	}
	if f := ParseModuleSettings(postForm(url.Values{ModuleSettingName("note"): {"a\r\nb"}}), probeFields); f.Values["note"] != "a\nb" {
		t.Errorf("multiline kept %q", f.Values["note"])
	}
}

// TestModuleSettingsErrors: the host's refusal reaches the form by field;
// one without a field, or for a field the form does not show, goes to the
// page-level message; another error is not a refusal.
func TestModuleSettingsErrors(t *testing.T) {
	f := ParseModuleSettings(postForm(url.Values{}), probeFields)
	err := fmt.Errorf("wrapped: %w", &host.SettingsError{Module: "probe", Fields: []host.FieldError{
		{Field: "limit", Message: "setting 'limit' must be at most 10"},
		{Field: "region", Message: "setting 'region' is set in the environment only"},
		{Message: "settings are invalid"},
	}})
	e := f.Errors(err)
	if got := e.Get(ModuleSettingName("limit")); got != "setting 'limit' must be at most 10" {
		t.Errorf("limit: %q", got)
	}
	top := e.Get(FieldForm)
	for _, want := range []string{MsgModuleNotSaved, "environment only", "settings are invalid"} {
		if !strings.Contains(top, want) {
			t.Errorf("page message %q lacks %q", top, want)
		}
	}
	if e.Has(ModuleSettingName("region")) {
		t.Error("a field the form does not show got an input message")
	}
	if f.Errors(errors.New("disk on fire")) != nil {
		t.Error("a non-refusal was mapped to the form")
	}
}
