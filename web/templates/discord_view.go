package templates

import "github.com/kimiapp/kimi/app/admin/form"

// DiscordView is the /discord page.
type DiscordView struct {
	// Live is the SSE address of the status region.
	Live   string
	Status DiscordStatusView

	// TokenSet says a token is stored; the token itself is never here.
	TokenSet bool
	// TokenOverride names the environment variable whose token overrides
	// the stored one ("" when none); demo mode says "demo".
	TokenOverride string
	TokenErrors   form.Errors

	Intents []DiscordIntentRow

	CacheMessages, CacheMembers string // as stored or as submitted
	CacheInUse                  string // "500 messages, 10000 members (defaults: …)"
	CacheErrors                 form.Errors
}

// DiscordIntentRow is one privileged intent with its switch.
type DiscordIntentRow struct {
	Key, Label, Enables, Capability, Portal string
	On                                      bool
	// Modules are the installed modules whose activation needs it.
	Modules []string
}

// DiscordStatusView is the live part of /discord: the connection's state
// and facts; the SSE endpoint sends it again after every change.
type DiscordStatusView struct {
	CSRF string
	// State is the machine state ("connected", "stopped"…), StateKind its
	// badge kind, Summary the state in words ("reconnecting in 4s").
	State, StateKind, Summary string
	// Fatal explains a fatal close; Disallowed lists the intents the
	// developer portal must enable (4014), with the offer to reconnect
	// without them.
	FatalCode    int
	FatalMessage string
	Disallowed   []string
	// WithoutMembers and WithoutMessageContent are the intents the
	// "reconnect without" form keeps.
	WithoutMembers, WithoutMessageContent bool
	// StartBudget explains a stop for Discord's session start budget.
	StartBudget  string
	Reason       string
	Stats        []Stat
	ShardWarning string
	RateLimits   int
	RecentLimits []DiscordLimitRow
	Guilds       []DiscordGuildRow
}

// DiscordLimitRow is one rate limit met.
type DiscordLimitRow struct {
	Route, Bucket, RetryAfter, Ago string
	Global                         bool
}

// DiscordGuildRow is one guild the bot is in.
type DiscordGuildRow struct {
	ID, Name, Members string
	Ref               Name // the guild as the page names it
	Active            bool
	Unavailable       bool
}

// joinAnd joins names as "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := ""
	for i, n := range names[:len(names)-1] {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out + " and " + names[len(names)-1]
}
