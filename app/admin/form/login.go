package form

import (
	"errors"
	"net/http"

	"github.com/kimiapp/kimi/app/auth"
)

// Field names of the sign-in form (POST /login).
const (
	LoginUsername = "username"
	LoginPassword = "password"
	LoginNext     = "next" // the local address to go on to after signing in
)

// Login is the sign-in form.
type Login struct {
	Username string
	Password string
	Next     string // as submitted; the handler makes it local
}

// ParseLogin reads the sign-in form from r.
func ParseLogin(r *http.Request) Login {
	return Login{Username: value(r, LoginUsername), Password: value(r, LoginPassword), Next: value(r, LoginNext)}
}

// Validate checks nothing: every attempt, empty fields included, goes to
// the service, so that each failure is rate-limited and audited alike (the
// browser's required attributes catch empty fields first).
func (f Login) Validate() Errors { return nil }

// Refused returns the page-level message for a refused sign-in, nil when
// err is not a refusal a person can correct.
func (f Login) Refused(err error) Errors {
	if errors.Is(err, auth.ErrInvalidCredentials) {
		return refusal(FieldForm, err)
	}
	return nil
}
