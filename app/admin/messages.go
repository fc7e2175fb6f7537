package admin

import (
	"strings"
)

// userMessage strips the "auth: " prefix of a validation error for display.
func userMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "auth: ")
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg + "."
}
