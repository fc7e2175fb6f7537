// Package names holds the naming rules the SDK, hostkit and the fakes share
// (the reference's regular expressions and the table and topic rules), so
// the declaration checks and the port checks cannot drift apart. Messages
// are returned as text; each caller wraps them in its error type.
package names

import (
	"regexp"
	"strings"

	"github.com/kimiapp/kimi/modules/sdk/internal/pyrepr"
)

// Every pattern is anchored with \A…\z: unlike Python's re.match with $, a
// trailing newline is never accepted.
var (
	ModuleNameRE   = regexp.MustCompile(`\A[a-z][a-z0-9_-]{0,63}\z`)
	TableNameRE    = regexp.MustCompile(`\A[a-z][a-z0-9_]{0,62}\z`)
	TopicSegmentRE = regexp.MustCompile(`\A[a-z][a-z0-9_]{0,63}\z`)
	ServiceNameRE  = regexp.MustCompile(`\A[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\z`)
	SettingNameRE  = regexp.MustCompile(`\A[a-z][a-z0-9_]{0,63}\z`)
	GuildIDTextRE  = regexp.MustCompile(`\A[0-9]{1,25}\z`)
	ResultNameRE   = regexp.MustCompile(`\A[a-z0-9_]{1,64}\z`)
)

// TablePrefix returns the module's normalized prefix ("-" replaced by "_").
func TablePrefix(module string) string { return strings.ReplaceAll(module, "-", "_") }

// SQLitePrefix is the start of the names SQLite keeps for itself
// (sqlite_master, sqlite_sequence, sqlite_dbpage, …): no module's name, and
// so no table prefix, may start with it (case-insensitively).
const SQLitePrefix = "sqlite"

// SQLiteReservedMessage is the refusal of a module name starting with
// SQLitePrefix, or "" for any other name: "module name 'sqlite_x' uses
// table prefix 'sqlite_x_', which is reserved for SQLite's own tables".
func SQLiteReservedMessage(module string) string {
	if !strings.HasPrefix(strings.ToLower(module), SQLitePrefix) {
		return ""
	}
	return "module name " + pyrepr.Repr(module) + " uses table prefix " + pyrepr.Repr(TablePrefix(module)+"_") + ", which is reserved for SQLite's own tables"
}

// TableName returns the quoted physical name of a module's logical table,
// or the reference's message for an invalid name.
func TableName(module, name string) (quoted, msg string) {
	if !TableNameRE.MatchString(name) {
		return "", "module " + pyrepr.Repr(module) + " table name " + pyrepr.Repr(name) + " is not a valid identifier"
	}
	physical := TablePrefix(module) + "_" + name
	return `"` + strings.ReplaceAll(physical, `"`, `""`) + `"`, ""
}

// SplitTopic splits "<namespace>.<name>" at the first dot. Both segments must
// match TopicSegmentRE; with allowWildcard the name may be "*". msg is the
// reference's message when the topic is invalid.
func SplitTopic(topic string, allowWildcard bool) (namespace, name, msg string) {
	namespace, name, found := strings.Cut(topic, ".")
	nameOK := TopicSegmentRE.MatchString(name) || (allowWildcard && name == "*")
	if !found || !TopicSegmentRE.MatchString(namespace) || !nameOK {
		return "", "", "invalid event topic " + pyrepr.Repr(topic) + "; expected '<namespace>.<name>'"
	}
	return namespace, name, ""
}
