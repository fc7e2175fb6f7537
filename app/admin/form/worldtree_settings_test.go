package form

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// postForm builds a POST request carrying values as an urlencoded body.
func postForm(values url.Values) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/settings/worldtree", strings.NewReader(values.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func TestParseWorldtreeSettings(t *testing.T) {
	r := postForm(url.Values{
		WorldtreeBaseURL: {" https://wt.example/api "}, WorldtreeDefaultKey: {"d-key"}, WorldtreeAdminKey: {""},
		WorldtreeConsumerKey: {"c-key"}, WorldtreeClearAdminKey: {"1"},
	})
	got := ParseWorldtreeSettings(r)
	want := WorldtreeSettings{BaseURL: " https://wt.example/api ", DefaultKey: "d-key", ConsumerKey: "c-key", ClearAdminKey: true}
	if got != want {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
	u := got.Update()
	if u.BaseURL != want.BaseURL || u.DefaultKey.Value != "d-key" || !u.AdminKey.Clear || u.ConsumerKey.Value != "c-key" || u.ConsumerKey.Clear {
		t.Errorf("Update() = %+v", u)
	}
}

func TestWorldtreeSettingsValidate(t *testing.T) {
	tests := []struct {
		name  string
		form  WorldtreeSettings
		field string // "" = valid
		want  string
	}{
		{"valid", WorldtreeSettings{BaseURL: "https://wt.example", DefaultKey: "k"}, "", ""},
		{"valid without a key (the stored one is kept)", WorldtreeSettings{BaseURL: "https://wt.example"}, "", ""},
		{"no base URL", WorldtreeSettings{DefaultKey: "k"}, WorldtreeBaseURL, "Enter the Worldtree base URL"},
		{"bad scheme", WorldtreeSettings{BaseURL: "ftp://wt.example", DefaultKey: "k"}, WorldtreeBaseURL, "http or https"},
		{"key with a space", WorldtreeSettings{BaseURL: "https://wt.example", AdminKey: "a b"}, WorldtreeAdminKey, "space"},
		{"key and clear", WorldtreeSettings{BaseURL: "https://wt.example", ConsumerKey: "c", ClearConsumerKey: true}, WorldtreeConsumerKey, "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.form.Validate()
			if tt.field == "" {
				if !errs.OK() {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if !strings.Contains(errs.Get(tt.field), tt.want) {
				t.Errorf("%s: %q, want it to contain %q (all: %v)", tt.field, errs.Get(tt.field), tt.want, errs)
			}
			if errs.Get(FieldForm) != MsgWorldtreeNotSaved {
				t.Errorf("page-level message %q, want %q", errs.Get(FieldForm), MsgWorldtreeNotSaved)
			}
		})
	}
	if WorldtreeErrors(nil) != nil {
		t.Error("WorldtreeErrors(nil) is not nil")
	}
}

func TestWorldtreeSettingsKeptBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		" https://wt.example/api ":       "https://wt.example/api",
		"https://bob:hunter2@wt.example": "",
		"bob:hunter2@wt.example":         "",
	} {
		if got := (WorldtreeSettings{BaseURL: in}).KeptBaseURL(); got != want {
			t.Errorf("KeptBaseURL(%q) = %q, want %q", in, got, want)
		}
	}
}
