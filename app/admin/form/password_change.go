package form

import (
	"errors"
	"net/http"

	"github.com/kimiapp/kimi/app/auth"
)

// Field names of the change-password form (POST /settings/password).
const (
	PasswordCurrent = "current_password"
	PasswordNew     = "new_password"
	PasswordConfirm = "confirm_password"
	// PasswordUsername is a hidden field that lets password managers pair
	// the new password with the account. The server never reads it: the
	// account is the session's.
	PasswordUsername = "username"
)

// PasswordChange is the settings page's change-password form.
type PasswordChange struct {
	// Username is the signed-in admin's (from the session, never from the
	// form): the new password must differ from it.
	Username string
	Current  string
	New      string
	Confirm  string
}

// ParsePasswordChange reads the form from r for the admin named username.
func ParsePasswordChange(r *http.Request, username string) PasswordChange {
	return PasswordChange{Username: username, Current: value(r, PasswordCurrent),
		New: value(r, PasswordNew), Confirm: value(r, PasswordConfirm)}
}

// Validate requires the current password and applies the password rules
// and the confirmation to the new one.
func (f PasswordChange) Validate() Errors {
	var e Errors
	if f.Current == "" {
		e.Add(PasswordCurrent, "Enter your current password.")
	}
	if err := auth.ValidatePassword(f.Username, f.New); err != nil {
		e.add(PasswordNew, err)
	} else if f.New != f.Confirm {
		e.add(PasswordConfirm, auth.ErrPasswordsDoNotMatch)
	}
	return e
}

// Refused maps the service's refusal of a change to its field: a wrong
// current password, or a new password that breaks a rule. It returns nil
// when err is not a refusal a person can correct.
func (f PasswordChange) Refused(err error) Errors {
	switch {
	case errors.Is(err, auth.ErrCurrentPasswordBad):
		return refusal(PasswordCurrent, err)
	case auth.IsPasswordRuleError(err):
		return refusal(PasswordNew, err)
	}
	return nil
}
