package hostkit

import (
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/names"
)

// ValidateGuildID checks a guild id for scheduled-result subscriptions
// (0 < id < 2^64, so any non-zero uint64). Message: "scheduled-result
// subscriptions require a positive guild ID".
func ValidateGuildID(guildID uint64) error {
	if guildID == 0 {
		return contractErrorf("scheduled-result subscriptions require a positive guild ID")
	}
	return nil
}

// ValidScheduledResultName reports whether name is 1–64 of `[a-z0-9_]`.
func ValidScheduledResultName(name string) bool { return names.ResultNameRE.MatchString(name) }

// ValidateResultSubscription checks a subscription: name 1–64 of
// `[a-z0-9_]` ("scheduled-result names use 1-64 lowercase letters, digits
// or _") and a guild id 0 < id < 2^64 ("scheduled-result subscriptions
// require a positive guild ID").
func ValidateResultSubscription(name string, guildID uint64) error {
	if !names.ResultNameRE.MatchString(name) {
		return contractErrorf("scheduled-result names use 1-64 lowercase letters, digits or _")
	}
	return ValidateGuildID(guildID)
}

// ValidateResultReadLimit checks 1 ≤ maxBytes ≤ MaxResultFileBytes; the
// error is a *ScheduledResultAccessError "attachment read limit must be
// between 1 byte and 8 MiB".
func ValidateResultReadLimit(maxBytes int64) error {
	if maxBytes < 1 || maxBytes > sdk.MaxResultFileBytes {
		return NewScheduledResultAccessError("attachment read limit must be between 1 byte and 8 MiB")
	}
	return nil
}

// NewResultSubscriptionClosed builds the error of a closed or undeclared
// view: "Scheduled-result subscription is closed or undeclared".
func NewResultSubscriptionClosed() *sdk.ScheduledResultAccessError {
	return NewScheduledResultAccessError("Scheduled-result subscription is closed or undeclared")
}
