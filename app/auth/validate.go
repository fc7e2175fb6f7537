package auth

import (
	"errors"
	"regexp"
	"unicode/utf8"
)

// Password limits. bcrypt ignores (x/crypto: rejects) input past 72 bytes, so
// longer passwords are refused instead of silently truncated.
const (
	MinPasswordLength = 8
	MaxPasswordBytes  = 72
	MaxUsernameLength = 64
)

var usernameRE = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9._@-]{0,63}\z`)

// ValidateUsername checks the shape of an admin username.
func ValidateUsername(username string) error {
	if !usernameRE.MatchString(username) {
		return ErrInvalidUsername
	}
	return nil
}

// ValidatePassword checks a new password against the length rules and
// refuses a password equal to the username.
func ValidatePassword(username, password string) error {
	if utf8.RuneCountInString(password) < MinPasswordLength {
		return ErrWeakPassword
	}
	if len(password) > MaxPasswordBytes {
		return ErrPasswordTooLong
	}
	if username != "" && password == username {
		return ErrPasswordIsUsername
	}
	return nil
}

// IsPasswordRuleError reports whether err is one of ValidatePassword's
// refusals (too short, too long, equal to the username): a problem with the
// chosen password to show the operator, not a failure of the service.
func IsPasswordRuleError(err error) bool {
	return errors.Is(err, ErrWeakPassword) || errors.Is(err, ErrPasswordTooLong) || errors.Is(err, ErrPasswordIsUsername)
}

// truncateActor bounds attacker-chosen text (a failed login's username)
// before it reaches the audit log.
func truncateActor(s string) string {
	if s == "" {
		return EmptyUsernameActor
	}
	if len(s) <= MaxUsernameLength {
		return s
	}
	return truncateUTF8(s, MaxUsernameLength) + "…"
}

// EmptyUsernameActor is the audit actor of a failed sign-in that named no
// username (the audit log needs an actor, and a blank one would lose the
// row). No account can have it: usernames cannot contain parentheses.
const EmptyUsernameActor = "(empty username)"

// UserError is a refusal a person must read and correct (a password that
// breaks a rule, a mistyped current password): Error() is the prefixed text
// for logs and wrapping, Message() the plain sentence a form shows beside
// the field, so no caller trims error strings to display them.
type UserError struct {
	text    string // without the "auth: " prefix
	message string
}

var _ error = (*UserError)(nil)

func userError(text, message string) *UserError { return &UserError{text: text, message: message} }

// Error returns the text with the package prefix, for logs.
func (e *UserError) Error() string { return "auth: " + e.text }

// Message returns the sentence to show a person.
func (e *UserError) Message() string { return e.message }

// UserMessage returns the Message of the first *UserError in err's chain,
// and false when err carries none (a failure of the service, not of the
// input, which must not be shown).
func UserMessage(err error) (string, bool) {
	var re *UserError
	if errors.As(err, &re) {
		return re.Message(), true
	}
	return "", false
}
