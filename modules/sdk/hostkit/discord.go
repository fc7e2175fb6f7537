package hostkit

import (
	"strings"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
)

// AuditReason formats a moderation audit reason: "[<module>] <reason>" with
// whitespace collapsed, cut to MaxAuditReasonLength characters keeping the
// beginning.
func AuditReason(module, reason string) string {
	text := "[" + module + "] " + strings.Join(strings.Fields(reason), " ")
	if utf8.RuneCountInString(text) > sdk.MaxAuditReasonLength {
		text = string([]rune(text)[:sdk.MaxAuditReasonLength])
	}
	return strings.TrimRight(text, " ")
}
