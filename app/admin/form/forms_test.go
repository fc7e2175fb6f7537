package form

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/auth"
)

func post(t *testing.T, target string, v url.Values) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(v.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

const (
	msgUsername = "Username must be 1-64 characters: letters, digits, '.', '_', '-' or '@', starting with a letter or digit."
	msgShort    = "Password must be at least 8 characters."
	msgMismatch = "The passwords do not match."
)

func TestSetupValidate(t *testing.T) {
	tests := []struct {
		name string
		form url.Values
		want Errors
	}{
		{"contract fields only", url.Values{SetupToken: {"t"}, SetupUsername: {"admin"}, SetupPassword: {"long enough"}}, nil},
		{"matching confirm", url.Values{SetupUsername: {"admin"}, SetupPassword: {"long enough"}, SetupConfirm: {"long enough"}}, nil},
		{"empty confirm is a mismatch", url.Values{SetupUsername: {"admin"}, SetupPassword: {"long enough"}, SetupConfirm: {""}},
			Errors{SetupConfirm: msgMismatch}},
		{"bad name and short password", url.Values{SetupUsername: {"bad name"}, SetupPassword: {"short"}, SetupConfirm: {"short"}},
			Errors{SetupUsername: msgUsername, SetupPassword: msgShort}},
		{"password is the username", url.Values{SetupUsername: {"administrator"}, SetupPassword: {"administrator"}},
			Errors{SetupPassword: "Password must not be the username."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ParseSetup(post(t, "/setup", tt.form))
			if got := f.Validate(); !maps.Equal(got, tt.want) {
				t.Errorf("Validate() = %v, want %v", got, tt.want)
			}
		})
	}
	if f := ParseSetup(post(t, "/setup", url.Values{SetupToken: {"tok"}, SetupUsername: {"u"}})); f.Token != "tok" || f.Username != "u" || f.HasConfirm {
		t.Errorf("ParseSetup = %+v", f)
	}
}

func TestPasswordChangeValidateAndRefused(t *testing.T) {
	tests := []struct {
		name string
		form url.Values
		want Errors
	}{
		{"ok", url.Values{PasswordCurrent: {"old one"}, PasswordNew: {"brand new secret"}, PasswordConfirm: {"brand new secret"}}, nil},
		{"no current", url.Values{PasswordNew: {"brand new secret"}, PasswordConfirm: {"brand new secret"}},
			Errors{PasswordCurrent: "Enter your current password."}},
		{"short new", url.Values{PasswordCurrent: {"x"}, PasswordNew: {"short"}, PasswordConfirm: {"short"}}, Errors{PasswordNew: msgShort}},
		{"mismatch", url.Values{PasswordCurrent: {"x"}, PasswordNew: {"brand new secret"}, PasswordConfirm: {"other"}},
			Errors{PasswordConfirm: msgMismatch}},
		// The username comes from the session, not from the form's hidden field.
		{"new is the username", url.Values{"username": {"someone"}, PasswordCurrent: {"x"}, PasswordNew: {"administrator"}, PasswordConfirm: {"administrator"}},
			Errors{PasswordNew: "Password must not be the username."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ParsePasswordChange(post(t, "/settings/password", tt.form), "administrator")
			if got := f.Validate(); !maps.Equal(got, tt.want) {
				t.Errorf("Validate() = %v, want %v", got, tt.want)
			}
		})
	}
	refused := []struct {
		err  error
		want Errors
	}{
		{fmt.Errorf("auth: x: %w", auth.ErrCurrentPasswordBad), Errors{PasswordCurrent: "Current password is incorrect."}},
		{auth.ErrPasswordTooLong, Errors{PasswordNew: "Password must be at most 72 bytes."}},
		{errors.New("auth: change password: disk I/O error"), nil},
	}
	for _, tt := range refused {
		if got := (PasswordChange{}).Refused(tt.err); !maps.Equal(got, tt.want) {
			t.Errorf("Refused(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestLoginRefused(t *testing.T) {
	f := ParseLogin(post(t, "/login", url.Values{LoginUsername: {"admin"}, LoginPassword: {"pw"}, LoginNext: {"/audit"}}))
	if f != (Login{Username: "admin", Password: "pw", Next: "/audit"}) || !f.Validate().OK() {
		t.Fatalf("ParseLogin = %+v, Validate = %v", f, f.Validate())
	}
	if got := f.Refused(auth.ErrInvalidCredentials); got.Get(FieldForm) != "Invalid username or password." || len(got) != 1 {
		t.Errorf("Refused(invalid credentials) = %v", got)
	}
	if got := f.Refused(errors.New("auth: login: database is locked")); got != nil {
		t.Errorf("Refused(internal error) = %v, want nil (not for a person to read)", got)
	}
}

func TestConfirmed(t *testing.T) {
	tests := []struct {
		name   string
		target string
		form   url.Values
		want   bool
	}{
		{"yes in the body", "/x", url.Values{FieldConfirm: {ConfirmYes}}, true},
		{"no field", "/x", url.Values{}, false},
		{"empty", "/x", url.Values{FieldConfirm: {""}}, false},
		{"other value", "/x", url.Values{FieldConfirm: {"Yes"}}, false},
		{"only in the query string", "/x?confirm=yes", url.Values{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, tt.target, tt.form)
			if got := Confirmed(r); got != tt.want {
				t.Errorf("Confirmed = %t, want %t", got, tt.want)
			}
		})
	}
}
