package guildcfg

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Kind is the kind of a configuration document.
type Kind string

// Document kinds, named after the original's proposal targets
// (reference/kimi-agent-host.md §4.1).
const (
	// KindGuild is a guild's server-setup document, target "guild:<id>".
	KindGuild Kind = "guild"
	// KindChannel is a per-channel fragment, target "channel:<id>".
	KindChannel Kind = "channel"
	// KindGuildModule is a module's settings in one guild, target
	// "guild:<id>:<module>" (frontmatter only).
	KindGuildModule Kind = "guild_module"
)

// Target names one document. Build it with ParseTarget, GuildTarget,
// ChannelTarget or GuildModuleTarget; String renders the original's form.
type Target struct {
	Kind      Kind
	GuildID   uint64 // guild and guild-module targets
	ChannelID uint64 // channel targets
	Module    string // guild-module targets
}

// GuildTarget is the server-setup document of a guild.
func GuildTarget(guildID uint64) Target { return Target{Kind: KindGuild, GuildID: guildID} }

// ChannelTarget is the fragment of a channel.
func ChannelTarget(channelID uint64) Target {
	return Target{Kind: KindChannel, ChannelID: channelID}
}

// GuildModuleTarget is a module's settings document in a guild.
func GuildModuleTarget(guildID uint64, module string) Target {
	return Target{Kind: KindGuildModule, GuildID: guildID, Module: module}
}

// String renders the target as "guild:<id>", "channel:<id>" or
// "guild:<id>:<module>" (the same strings sdk.GuildTarget and friends build).
func (t Target) String() string {
	switch t.Kind {
	case KindGuild:
		return sdk.GuildTarget(t.GuildID)
	case KindChannel:
		return sdk.ChannelTarget(t.ChannelID)
	case KindGuildModule:
		return sdk.GuildModuleTarget(t.GuildID, t.Module)
	}
	return ""
}

// targetIDRE is the original's target id: 1 to 20 ASCII digits (and > 0).
var (
	targetIDRE     = regexp.MustCompile(`\A[0-9]{1,20}\z`)
	targetModuleRE = regexp.MustCompile(`\A[a-z][a-z0-9_-]{0,63}\z`)
)

// ParseTarget parses a target string. Anything that is not one of the three
// forms with positive ids that fit 64 bits (and a valid module name) fails
// with "unsupported configuration proposal target 'x'". Whether the module
// is known is the Service's question.
func ParseTarget(s string) (Target, error) {
	t, ok := parseTarget(s)
	if !ok {
		// Built only on failure: a valid target (every document read)
		// costs no quoting.
		return Target{}, &TargetError{Target: s, Message: "unsupported configuration proposal target " + hostkit.Repr(s)}
	}
	return t, nil
}

func parseTarget(s string) (Target, bool) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Target{}, false
	}
	switch kind {
	case "guild":
		idText, module, hasModule := strings.Cut(rest, ":")
		id, ok := parseTargetID(idText)
		if !ok {
			return Target{}, false
		}
		if !hasModule {
			return GuildTarget(id), true
		}
		if !targetModuleRE.MatchString(module) {
			return Target{}, false
		}
		return GuildModuleTarget(id, module), true
	case "channel":
		id, ok := parseTargetID(rest)
		if !ok {
			return Target{}, false
		}
		return ChannelTarget(id), true
	}
	return Target{}, false
}

func parseTargetID(s string) (uint64, bool) {
	if !targetIDRE.MatchString(s) {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil && id > 0
}
