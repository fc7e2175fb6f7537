package sdk

import (
	"strings"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk/internal/names"
)

// APIVersion is the module API version this SDK implements (the reference's
// MODULE_API_VERSION). Spec.APIVersion must equal it.
const APIVersion = 2

// SDKVersion is the kimi-agent-module-api release this package renders.
const SDKVersion = "2.4.0"

// Naming constants shared by declarations and ports.
const (
	// CoreTopicPrefix is the event namespace reserved for core (discord.*).
	CoreTopicPrefix = "discord"
	// CustomIDPrefix starts every module-owned component custom id.
	CustomIDPrefix = "m"
	// CustomIDMaxLength is Discord's custom id limit, in characters.
	CustomIDMaxLength = 100
	// MaxModuleNameLength bounds module names (1 letter + up to 63 more).
	MaxModuleNameLength = 64
)

// The reference's name patterns, shared with hostkit through internal/names.
var (
	moduleNameRE   = names.ModuleNameRE
	topicSegmentRE = names.TopicSegmentRE
	serviceNameRE  = names.ServiceNameRE
	settingNameRE  = names.SettingNameRE
	guildIDTextRE  = names.GuildIDTextRE
	resultNameRE   = names.ResultNameRE
)

// tablePrefix returns the module's normalized prefix ("-" replaced by "_").
func tablePrefix(module string) string { return names.TablePrefix(module) }

// splitTopic is hostkit.SplitTopic for the declaration checks.
func splitTopic(topic string, allowWildcard bool) (namespace, name string, err error) {
	namespace, name, msg := names.SplitTopic(topic, allowWildcard)
	if msg != "" {
		return "", "", &EventTopicError{ModuleContractError: ModuleContractError{Message: msg}, Topic: topic}
	}
	return namespace, name, nil
}

// reservedModuleNames are core namespaces no module may take (after "-"→"_").
var reservedModuleNames = map[string]bool{CoreTopicPrefix: true, "proposals": true}

// validateModuleName checks a module name: `[a-z][a-z0-9_-]{0,63}` and not
// "discord" or "proposals" after normalization, nor starting with "sqlite".
// Messages: "invalid module name 'x'", "module name 'x' is reserved by
// core", "module name 'sqlite' uses table prefix 'sqlite_', which is
// reserved for SQLite's own tables".
func validateModuleName(name string) error {
	if !moduleNameRE.MatchString(name) {
		return contractErrorf("invalid module name %s", pyRepr(name))
	}
	if reservedModuleNames[tablePrefix(name)] {
		return contractErrorf("module name %s is reserved by core", pyRepr(name))
	}
	if msg := names.SQLiteReservedMessage(name); msg != "" {
		return &ModuleContractError{Message: msg}
	}
	return nil
}

// CustomID is a parsed module-owned component custom id
// `m:<module>:<key>[:part…]`.
type CustomID struct {
	Module string
	Key    string
	Parts  []string
}

// BuildCustomID returns `m:<module>:<key>[:part…]`. The key must match
// `[a-z][a-z0-9_]{0,63}` ("invalid component key 'k'"), parts may not contain
// ':' ("custom_id parts may not contain ':'"), and the result is at most
// CustomIDMaxLength (100) characters ("custom_id exceeds 100 characters").
func BuildCustomID(module, key string, parts ...string) (string, error) {
	if !topicSegmentRE.MatchString(key) {
		return "", contractErrorf("invalid component key %s", pyRepr(key))
	}
	for _, part := range parts {
		if strings.Contains(part, ":") {
			return "", contractErrorf("custom_id parts may not contain ':'")
		}
	}
	id := strings.Join(append([]string{CustomIDPrefix, module, key}, parts...), ":")
	if utf8.RuneCountInString(id) > CustomIDMaxLength {
		return "", contractErrorf("custom_id exceeds %d characters", CustomIDMaxLength)
	}
	return id, nil
}

// ParseCustomID splits a custom id on ':' and returns its module, key and
// parts when it has at least three pieces and starts with "m"; ok is false
// otherwise. It does not validate the pieces, exactly like the reference.
func ParseCustomID(s string) (id CustomID, ok bool) {
	pieces := strings.Split(s, ":")
	if len(pieces) < 3 || pieces[0] != CustomIDPrefix {
		return CustomID{}, false
	}
	return CustomID{Module: pieces[1], Key: pieces[2], Parts: pieces[3:]}, true
}

// mustTableName is hostkit.MustTableName for MigrationContext.Table.
func mustTableName(module, name string) string {
	t, msg := names.TableName(module, name)
	if msg != "" {
		panic(&ModuleContractError{Message: msg})
	}
	return t
}
