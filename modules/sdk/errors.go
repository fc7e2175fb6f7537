package sdk

import (
	"errors"
	"fmt"
)

// ErrContract is the category of every module-contract violation. Every
// error type in this package that describes a broken declaration or a call
// outside the module's declarations matches it with errors.Is, and can also
// be extracted as a *ModuleContractError with errors.As.
var ErrContract = errors.New("module contract violation")

// Interface guards: every error type of this package is an error (the
// contract errors embedding ModuleContractError are through it).
var (
	_ error = (*ModuleContractError)(nil)
	_ error = (*ServiceUnavailableError)(nil)
	_ error = (*ProposalError)(nil)
	_ error = (*CommandSyncError)(nil)
	_ error = (*FileAccessError)(nil)
	_ error = (*GuildSettingValueError)(nil)
)

// ModuleContractError reports a declaration or call that violates the module
// contract (the reference's ModuleContractError, a ValueError). Message is the
// reference's exact text; Err, when set, is the underlying cause.
type ModuleContractError struct {
	Message string
	Err     error
}

// Error returns the message.
func (e *ModuleContractError) Error() string { return e.Message }

// Unwrap returns the cause, if any.
func (e *ModuleContractError) Unwrap() error { return e.Err }

// Is reports whether target is ErrContract.
func (e *ModuleContractError) Is(target error) bool { return target == ErrContract }

// contractErrorf builds a *ModuleContractError from a format string.
func contractErrorf(format string, args ...any) *ModuleContractError {
	return &ModuleContractError{Message: fmt.Sprintf(format, args...)}
}

// UndeclaredDiscordActionError is returned when a module calls a Discord action it
// did not list in Permissions.DiscordActions. Message:
// "module 'm' did not declare Discord action 'a'".
type UndeclaredDiscordActionError struct {
	ModuleContractError
	Module string
	Action DiscordAction
}

// Unwrap exposes the embedded *ModuleContractError for errors.As.
func (e *UndeclaredDiscordActionError) Unwrap() error { return &e.ModuleContractError }

// EventTopicError reports an invalid topic or pattern, a publish outside the
// module's namespace, or a subscription the module did not declare.
type EventTopicError struct {
	ModuleContractError
	Topic string
}

func newEventTopicError(topic, format string, args ...any) *EventTopicError {
	return &EventTopicError{ModuleContractError: ModuleContractError{Message: fmt.Sprintf(format, args...)}, Topic: topic}
}

// Unwrap exposes the embedded *ModuleContractError for errors.As.
func (e *EventTopicError) Unwrap() error { return &e.ModuleContractError }

// HostNotAllowedError reports an HTTP request to a host, scheme or port the module
// did not declare (for example "module 'm' did not declare host 'h'").
type HostNotAllowedError struct {
	ModuleContractError
	Host string
}

// Unwrap exposes the embedded *ModuleContractError for errors.As.
func (e *HostNotAllowedError) Unwrap() error { return &e.ModuleContractError }

// ResponseTooLargeError reports an HTTP body over the caller's limit (capped at
// MaxHTTPBodyBytes). Declared > 0 means the server announced the size up front:
// "response declares N bytes; limit is M"; otherwise "response exceeded M bytes".
type ResponseTooLargeError struct {
	ModuleContractError
	Declared int64
	Limit    int64
}

// Unwrap exposes the embedded *ModuleContractError for errors.As.
func (e *ResponseTooLargeError) Unwrap() error { return &e.ModuleContractError }

// ScheduledResultAccessError reports a scheduled-result subscription that is
// closed or undeclared, or a result file that cannot be read
// (SDK 2.4; a ModuleContractError in the reference).
type ScheduledResultAccessError struct {
	ModuleContractError
}

// Unwrap exposes the embedded *ModuleContractError for errors.As.
func (e *ScheduledResultAccessError) Unwrap() error { return &e.ModuleContractError }

// ErrServiceUnavailable is the category of ServiceUnavailableError errors.
var ErrServiceUnavailable = errors.New("service unavailable")

// ServiceUnavailableError reports a consumed service that is not provided
// ("service n@v is not provided") or whose provider closed
// ("service n@v closed with module 'p'"). It is a runtime condition, not a
// contract violation: it does not match ErrContract.
type ServiceUnavailableError struct {
	Name     string
	Version  int
	Provider string // set when the provider closed
	Message  string
}

// Error returns the message.
func (e *ServiceUnavailableError) Error() string { return e.Message }

// Is reports whether target is ErrServiceUnavailable.
func (e *ServiceUnavailableError) Is(target error) bool { return target == ErrServiceUnavailable }

// ProposalError reports a configuration proposal that could not be read,
// created or decided (for example "configuration changed since it was
// inspected" or "proposal target must belong to the actor's guild").
type ProposalError struct {
	Message string
}

// Error returns the message.
func (e *ProposalError) Error() string { return e.Message }

// CommandSyncError reports that Discord did not accept a live guild-command
// synchronization (Interactions.ReplaceGuildCommands).
type CommandSyncError struct {
	Message string
	Err     error
}

// Error returns the message.
func (e *CommandSyncError) Error() string {
	if e.Message == "" {
		return "Discord did not accept a live guild-command synchronization"
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *CommandSyncError) Unwrap() error { return e.Err }

// FileErrorCode classifies a FileAccessError.
type FileErrorCode string

// The FileAccessError codes of the reference (files.py).
const (
	FileExpired           FileErrorCode = "expired"
	FileUnknownAttachment FileErrorCode = "unknown_attachment"
	FileUnavailable       FileErrorCode = "unavailable"
	FileNotFile           FileErrorCode = "not_file"
	FileTooLarge          FileErrorCode = "too_large"
	FileInvalidLimit      FileErrorCode = "invalid_limit"
	FileBudgetExhausted   FileErrorCode = "budget_exhausted"
)

// FileAccessError reports a ToolFiles read that failed; Code says why.
// It is not a contract error. Compare codes with errors.As:
//
//	var fe *sdk.FileAccessError
//	if errors.As(err, &fe) && fe.Code == sdk.FileTooLarge { … }
type FileAccessError struct {
	Code    FileErrorCode
	Message string
}

// Error returns the message.
func (e *FileAccessError) Error() string { return e.Message }

// Is matches another *FileAccessError with the same Code and an empty
// Message, so errors.Is(err, &sdk.FileAccessError{Code: sdk.FileExpired}) works.
func (e *FileAccessError) Is(target error) bool {
	t, ok := target.(*FileAccessError)
	return ok && t.Message == "" && t.Code == e.Code
}
