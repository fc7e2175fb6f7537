package hostkit

import (
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
)

// NewUndeclaredDiscordActionError builds the error for module and action.
func NewUndeclaredDiscordActionError(module string, action sdk.DiscordAction) *sdk.UndeclaredDiscordActionError {
	return &sdk.UndeclaredDiscordActionError{
		ModuleContractError: sdk.ModuleContractError{Message: fmt.Sprintf(
			"module %s did not declare Discord action %s", pyRepr(module), pyRepr(string(action)))},
		Module: module,
		Action: action,
	}
}

// NewHostNotAllowedError builds a HostNotAllowedError with the given host and message.
func NewHostNotAllowedError(host, message string) *sdk.HostNotAllowedError {
	return &sdk.HostNotAllowedError{ModuleContractError: sdk.ModuleContractError{Message: message}, Host: host}
}

// NewResponseTooLargeError builds the error; declared is 0 when the body was cut
// while streaming.
func NewResponseTooLargeError(declared, limit int64) *sdk.ResponseTooLargeError {
	msg := fmt.Sprintf("response exceeded %d bytes", limit)
	if declared > 0 {
		msg = fmt.Sprintf("response declares %d bytes; limit is %d", declared, limit)
	}
	return &sdk.ResponseTooLargeError{ModuleContractError: sdk.ModuleContractError{Message: msg}, Declared: declared, Limit: limit}
}

// NewScheduledResultAccessError builds the error with message.
func NewScheduledResultAccessError(message string) *sdk.ScheduledResultAccessError {
	return &sdk.ScheduledResultAccessError{ModuleContractError: sdk.ModuleContractError{Message: message}}
}
