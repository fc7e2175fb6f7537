package sdk

import (
	"errors"
	"fmt"
	"time"
)

// Why a Discord action failed. The error a DiscordActions call returns
// keeps the reference's message as its Error() text ("sending the message
// failed", "channel 5 is not in an active guild"), and wraps the cause
// underneath when Discord said why:
//
//   - errors.Is with a sentinel below tests the category;
//   - errors.As with a type below reads the detail (the wait, the
//     permission, the status), and the type matches its category's
//     sentinel through errors.Is as well.
//
// A failure without a category (a refused check, a Discord error Kimi does
// not classify, an ended ctx) matches none of them; an ended ctx still
// matches context.Canceled or context.DeadlineExceeded.
var (
	// ErrRateLimited: Discord kept answering 429 after Kimi waited out its
	// limits (Kimi sends a request up to four times, honouring each
	// retry_after, before it gives up). Nothing was done; the action may
	// be retried once RateLimitError.RetryAfter has passed.
	ErrRateLimited = errors.New("discord: rate limited")
	// ErrMissingPermission: Discord refused the action for a missing
	// permission (403, codes 50013 and 50001); MissingPermissionError
	// says which. Nothing was done; retrying will not help until a server
	// admin grants it.
	ErrMissingPermission = errors.New("discord: missing permission")
	// ErrUnknownChannel: the channel does not exist (Discord's 10003), or
	// no longer does.
	ErrUnknownChannel = errors.New("discord: unknown channel")
	// ErrUnknownMessage: the message does not exist (10008), or no
	// longer does.
	ErrUnknownMessage = errors.New("discord: unknown message")
	// ErrUnknownGuild: the guild does not exist for the bot (10004).
	ErrUnknownGuild = errors.New("discord: unknown guild")
	// ErrUnknownMember: the user is not a member of the guild (10007).
	ErrUnknownMember = errors.New("discord: unknown member")
	// ErrUnknownUser: the user does not exist (10013).
	ErrUnknownUser = errors.New("discord: unknown user")
	// ErrUncertainDelivery: a send (a POST, which Discord does not make
	// idempotent) reached Discord and then failed: Discord answered a 5xx,
	// or the connection broke after the whole request was written. The
	// message may have been delivered. Kimi never re-sends it; a module
	// that re-sends accepts a possible duplicate (it can look with
	// FetchMessages first). UncertainDeliveryError carries the status.
	// Edits, deletes and moderation are idempotent: their 5xx has no
	// category and they may simply be retried.
	ErrUncertainDelivery = errors.New("discord: delivery uncertain")
)

// Interface guards for the Discord failure types.
var (
	_ error = (*RateLimitError)(nil)
	_ error = (*MissingPermissionError)(nil)
	_ error = (*UncertainDeliveryError)(nil)
)

// RateLimitError is the detail of ErrRateLimited.
type RateLimitError struct {
	// RetryAfter is Discord's retry_after of its last 429: wait at least
	// this long before trying again.
	RetryAfter time.Duration
	// Global reports the bot's global limit (every route), not the
	// route's own.
	Global bool
	// Err is the host's cause, if any.
	Err error
}

// Error describes the limit.
func (e *RateLimitError) Error() string {
	scope := "the route's"
	if e.Global {
		scope = "the global"
	}
	return fmt.Sprintf("discord: rate limited (%s limit): retry after %s", scope, e.RetryAfter)
}

// Is reports whether target is ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// Unwrap returns the cause.
func (e *RateLimitError) Unwrap() error { return e.Err }

// MissingPermissionError is the detail of ErrMissingPermission.
type MissingPermissionError struct {
	// Permission is Discord's name of the permission the bot lacks
	// ("SEND_MESSAGES", "SEND_MESSAGES_IN_THREADS", "EMBED_LINKS",
	// "READ_MESSAGE_HISTORY", "VIEW_CHANNEL", "MANAGE_MESSAGES",
	// "MANAGE_GUILD", "BAN_MEMBERS", "KICK_MEMBERS", "MODERATE_MEMBERS").
	// Discord's answer does not name it: the host names the first of the
	// action's permissions the bot lacks by its gateway view of roles and
	// overwrites, else (that view is stale, or a role hierarchy refused a
	// moderation) the permission the action is mostly about. "" when the
	// action needs no particular permission.
	Permission string
	// Err is the host's cause, if any.
	Err error
}

// Error names the permission.
func (e *MissingPermissionError) Error() string {
	if e.Permission == "" {
		return "discord: missing permission"
	}
	return "discord: missing permission " + e.Permission
}

// Is reports whether target is ErrMissingPermission.
func (e *MissingPermissionError) Is(target error) bool { return target == ErrMissingPermission }

// Unwrap returns the cause.
func (e *MissingPermissionError) Unwrap() error { return e.Err }

// UncertainDeliveryError is the detail of ErrUncertainDelivery.
type UncertainDeliveryError struct {
	// Status is Discord's 5xx; 0 when no answer came (the connection
	// broke, or the ctx ended, after the request was written).
	Status int
	// Err is the host's cause, if any.
	Err error
}

// Error describes the uncertain outcome.
func (e *UncertainDeliveryError) Error() string {
	if e.Status == 0 {
		return "discord: no answer after the message was sent: it may have been delivered"
	}
	return fmt.Sprintf("discord: answered %d after the message was sent: it may have been delivered", e.Status)
}

// Is reports whether target is ErrUncertainDelivery.
func (e *UncertainDeliveryError) Is(target error) bool { return target == ErrUncertainDelivery }

// Unwrap returns the cause.
func (e *UncertainDeliveryError) Unwrap() error { return e.Err }
