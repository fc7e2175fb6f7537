// Package sdk is the contract between Kimi and its modules: the Go rendering
// of kimi-agent-module-api 2.4. A module imports this package (and, in
// tests, sdk/sdktest) and nothing from the appliance.
//
// # Shape
//
// A module is a Spec: a name, a version, APIVersion 2, a Create function and
// its declarations (dependencies, settings, capabilities, Permissions,
// guild-settings schema, provided and consumed services). Create receives a
// LoadContext and returns a Module, whose Migrations, Start and Close the
// host drives:
//
//	preflight → settings → create → migrate → start → close
//
// Preflight validates every spec before any module code runs (Spec.Validate
// is the static part). Start receives a *Runtime carrying the ports —
// Storage, Scheduler, EventBus, DiscordActions, Interactions, HTTP,
// Services, Trust, Health and the optional GuildSettings, Proposals and
// ScheduledResults. Every port enforces the spec's declarations.
//
// # Conventions
//
//   - Calls that may wait take a context.Context first.
//   - Discord snowflakes are uint64; 0 means "none".
//   - Value types (specs, snapshots, events) are plain structs with value
//     semantics: treat them as immutable once handed over; hosts and fakes
//     copy the slices and maps they keep or return.
//   - Zero values mean the reference's defaults where documented (a
//     CommandSpec with MinTier 0 is staff-only; a Tool with MinTier 0 is for
//     members).
//   - Errors are typed. Every contract violation matches ErrContract with
//     errors.Is and *ModuleContractError with errors.As; the specific types
//     (UndeclaredDiscordActionError, EventTopicError, HostNotAllowedError,
//     ResponseTooLargeError, ScheduledResultAccessError) carry details. Runtime
//     conditions have their own types (ServiceUnavailableError, ProposalError,
//     CommandSyncError, FileAccessError). Messages are the reference's,
//     byte for byte, so operators and tests can rely on them.
//   - A failed Discord action keeps the reference's message ("sending the
//     message failed") and wraps why, when Discord said: errors.Is with a
//     sentinel tests the category (ErrRateLimited, ErrMissingPermission,
//     ErrUnknownChannel, ErrUnknownMessage, ErrUnknownGuild,
//     ErrUnknownMember, ErrUnknownUser, ErrUncertainDelivery), errors.As
//     with a type reads the detail (*RateLimitError's RetryAfter and
//     Global, *MissingPermissionError's Permission,
//     *UncertainDeliveryError's Status); each type also matches its
//     sentinel. Sentinels are for the categories with nothing more to say;
//     a type never needs its sentinel compared by hand. An uncertain
//     delivery may have been posted: Kimi never re-sends it. sdktest's
//     FakeDiscordActions.FailNext injects the same causes.
//   - The host's checks live in sdk/hostkit, which the host and sdktest
//     share (a module never imports it), so a module that passes its
//     sdktest tests passes preflight. Every pattern is anchored \A…\z.
//
// See README.md for a walkthrough: writing, testing and shipping a module.
package sdk
