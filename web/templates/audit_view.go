package templates

// AuditRow is one rendered audit-log entry.
type AuditRow struct {
	ID int64
	// When: At is the <time datetime> (RFC 3339, UTC), AtExact its tooltip
	// ("2026-12-01 09:12:03 UTC") and AtRelative the text ("3 minutes ago"),
	// relative to the page's render time.
	At         string
	AtExact    string
	AtRelative string
	// Actor is who did it. For a failed sign-in it is empty and Attempted
	// holds the username someone tried: never shown as if they did it.
	Actor     string
	Attempted string
	Action    AuditAction
	Target    string
	// ActorName and TargetName name a Discord actor ("discord:<id>") and
	// a target's guild or channel (ID "" when there is none); TargetRest
	// is the rest of the target (a module's name).
	ActorName, TargetName Name
	TargetRest            string
	// Detail is the text shown; DetailTitle, when set, the raw value behind
	// it (the full user agent behind "Firefox on Linux").
	Detail      string
	DetailTitle string
	IP          string
	// Mentions names the mentions in Detail (a reason typed in Discord):
	// the guild's the entry names, else channels only (nil: ids shown as
	// unknown).
	Mentions Mentions
}

// AuditAction is an audit action id with its readable label.
type AuditAction struct {
	ID    string // the stored id, such as "auth.login"; the filter's value
	Label string // "Signed in"; the id itself for an action without a label
}

// AuditView is the audit page's data.
type AuditView struct {
	Rows     []AuditRow
	Actions  []AuditAction
	Actor    string
	Action   string
	Query    string
	Filtered bool
	NextURL  string // older entries; empty on the last page
	FirstURL string // newest entries; empty on the first page
}
