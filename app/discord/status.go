package discord

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// State is the connection's state as /discord and the overview show it.
type State string

// Connection states.
const (
	StateNotConfigured State = "not configured" // no token stored or in the environment
	StateConnecting    State = "connecting"     // identifying on a fresh session
	StateConnected     State = "connected"
	StateResuming      State = "resuming"     // resuming the session after a drop
	StateReconnecting  State = "reconnecting" // waiting (RetryAt) before the next attempt
	StateStopped       State = "stopped"      // a fatal close, the session start budget or a closed bot: Reason says why
)

// FatalClose is a gateway close Kimi does not reconnect after.
type FatalClose struct {
	Code int
	// Message explains the code and what the operator must do.
	Message string
	// DisallowedIntents lists the privileged intents the developer portal
	// must enable (4014): "Server Members Intent", "Message Content Intent".
	// The page offers to reconnect without them.
	DisallowedIntents []string
}

// GuildStatus is one guild the bot is in.
type GuildStatus struct {
	ID          string
	Name        string // "" until its GUILD_CREATE
	Members     int
	Unavailable bool
	Active      bool // Kimi is active there (guild configuration)
}

// SessionStartLimit is gateway/bot's session_start_limit, as last read
// (before each Identify), less the Identifies written since.
type SessionStartLimit struct {
	Total, Remaining int
	// ResetAfter is reset_after as read; ResetAt the moment it names.
	ResetAfter     time.Duration
	ResetAt        time.Time
	MaxConcurrency int
}

// Status is a snapshot of the connection for /discord and the overview.
type Status struct {
	State State
	// Reason explains a stopped state or the last failed attempt.
	Reason string
	// Fatal is set when a fatal close code stopped the connection.
	Fatal *FatalClose
	// RetryAt is when the next attempt starts (StateReconnecting).
	RetryAt time.Time
	// TokenSource is where the token comes from: EnvToken, EnvTokenFile,
	// TokenFromStore or "" (none). The token itself is never in a Status.
	TokenSource string
	Intents     Intents
	Cache       CacheSizes // the sizes in use (a change applies at the next start)

	BotID, BotName, AppID, OwnerID string

	ConnectedSince   time.Time
	LastHeartbeatAck time.Time
	Reconnects       int // connections lost and attempted again since start

	RateLimits       int              // rate limits met since start
	RecentRateLimits []RateLimitEvent // the last few, newest first

	// FramesDropped counts malformed gateway dispatches dropped before
	// discordgo handled them (frames.go) since start.
	FramesDropped int64

	Guilds []GuildStatus // by name, then id

	// Shards is Discord's recommended shard count (gateway/bot); Kimi runs
	// one, so more than one is a warning.
	Shards            int
	SessionStartLimit SessionStartLimit
	// Identifies counts the Identifies (session starts) written since
	// start, discordgo's own included.
	Identifies int
	// StartLimitStop is set while the loop is stopped for the session
	// start budget (State is StateStopped, RetryAt its reset).
	StartLimitStop *StartLimitStop
}

// RetryIn is how long until the next attempt, rounded up to a second.
func (s Status) RetryIn(now time.Time) time.Duration {
	if s.RetryAt.IsZero() || !s.RetryAt.After(now) {
		return 0
	}
	return s.RetryAt.Sub(now).Round(time.Second)
}

// Summary is the state in one line: "connected", "reconnecting in 4s",
// "stopped: Discord rejected the bot token …".
func (s Status) Summary(now time.Time) string {
	switch s.State {
	case StateReconnecting:
		in := s.RetryIn(now)
		if in < time.Second {
			in = time.Second
		}
		return "reconnecting in " + strconv.Itoa(int(in/time.Second)) + "s"
	case StateStopped:
		if s.Reason != "" {
			return "stopped: " + s.Reason
		}
	}
	return string(s.State)
}

// ShardWarning is the warning shown when Discord recommends more than one
// shard ("" otherwise).
func (s Status) ShardWarning() string {
	if s.Shards <= 1 {
		return ""
	}
	return "Discord recommends " + strconv.Itoa(s.Shards) + " shards for this bot; Kimi runs a single shard, which Discord refuses (close 4011) once the bot is in 2,500 guilds."
}

// recentLimits is how many rate-limit events a Status keeps.
const recentLimits = 10

// sortGuilds orders guilds by name (case-insensitive), then id.
func sortGuilds(gs []GuildStatus) {
	slices.SortFunc(gs, func(a, b GuildStatus) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Watch returns a channel that receives a signal after the Status
// changed (state, guilds, rate limits, connection facts); it is closed when
// ctx ends. The /discord page's live region waits on it.
func (b *Bot) Watch(ctx context.Context) <-chan struct{} { return b.watch.Watch(ctx) }
