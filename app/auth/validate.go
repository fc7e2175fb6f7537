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
	if len(s) <= MaxUsernameLength {
		return s
	}
	return truncateUTF8(s, MaxUsernameLength) + "…"
}
