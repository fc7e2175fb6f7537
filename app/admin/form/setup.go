package form

import (
	"net/http"

	"github.com/kimiapp/kimi/app/auth"
)

// Field names of the first-run form (POST /setup). The set-up contract is
// token, username and password; the browser form adds SetupConfirm.
const (
	SetupToken    = "token"
	SetupUsername = "username"
	SetupPassword = "password"
	SetupConfirm  = "confirm"
)

// Setup is the first-run form that creates the admin.
type Setup struct {
	Token    string
	Username string
	Password string
	Confirm  string
	// HasConfirm reports whether SetupConfirm was sent at all: a script
	// that posts only the contract's fields skips the check, while an
	// empty confirm field is a mismatch, not a skip.
	HasConfirm bool
}

// ParseSetup reads the set-up form from r.
func ParseSetup(r *http.Request) Setup {
	f := Setup{Token: value(r, SetupToken), Username: value(r, SetupUsername),
		Password: value(r, SetupPassword), Confirm: value(r, SetupConfirm)}
	_, f.HasConfirm = r.PostForm[SetupConfirm] // filled by value's FormValue
	return f
}

// Validate applies the username and password rules and the confirmation.
// The token is checked by the service, not here.
func (f Setup) Validate() Errors {
	var e Errors
	if err := auth.ValidateUsername(f.Username); err != nil {
		e.add(SetupUsername, err)
	}
	if err := auth.ValidatePassword(f.Username, f.Password); err != nil {
		e.add(SetupPassword, err)
	} else if f.HasConfirm && f.Password != f.Confirm {
		e.add(SetupConfirm, auth.ErrPasswordsDoNotMatch)
	}
	return e
}
