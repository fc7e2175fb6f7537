// Package kudos is Kimi's reference module, the one to copy: members give
// each other "kudos" through an LLM tool, a slash command or a persistent
// button, within a rolling daily limit. It touches every port of the SDK:
//
//   - spec.go: the declarations the host validates before running any code
//     (permissions, services) and Create, which registers the LLM tools;
//     settings.go and guildsettings.go: deployment and per-guild settings.
//   - module.go: Start and Close — binding to the runtime ports.
//   - give.go: the one business rule, shared by every entry point.
//   - tools.go, commands.go: the LLM tools, /kudos commands and the
//     persistent "Thank back" button; leaderboard.go: the shared board.
//   - digest.go: the scheduled digest job; events.go: the member-removal
//     subscription and the published event; service.go: the provided
//     leaderboard service; results.go: the idempotent scheduled-result
//     subscriber.
//   - ledger.go, migrations.go: the module's SQL, only through the storage
//     port.
//
// Modules are trusted in-process code; the ports are a contract and an audit
// surface, not a sandbox. Everything this module touches is declared in
// its Spec and shown to the operator.
package kudos

import "time"

// Names other code refers to. Keeping them here (and using them in tests)
// means a rename is one edit.
const (
	// Name is the module name: it prefixes the module's tables
	// ("reference_kudos_kudos"), its event namespace and its settings'
	// environment variables (REFERENCE_KUDOS_DAILY_LIMIT).
	Name    = "reference_kudos"
	Version = "1.1.0"

	ToolGive        = "give_kudos"
	ToolLeaderboard = "kudos_leaderboard"

	CommandGroup    = "kudos"
	ButtonThankBack = "thank_back"

	DigestJobKey  = "digest"
	DigestHandler = "post_digest"

	ServiceName    = "kudos.board"
	ServiceVersion = 1

	// TopicGiven is published after every kudos. A module may publish only
	// under its own namespace, "<module>.*".
	TopicGiven = Name + ".given"

	// ResultSubscription is the declared scheduled-result subscription.
	ResultSubscription = "published_tasks"
	// HealthKeyResults and HealthKeyDigest are the module's keyed health
	// concerns, tracked independently of its overall state.
	HealthKeyResults = "published_tasks"
	HealthKeyDigest  = "digest"
)

// Limits of the business rule.
const (
	// MaxReasonLength bounds a kudos reason, in characters.
	MaxReasonLength = 200
	// DigestJitter spreads digest posts so many deployments do not post in
	// the same second.
	DigestJitter = 60 * time.Second
	// day is the rolling window of the daily limit.
	day = 24 * time.Hour
)
