package sdk

import (
	"fmt"
	"slices"
	"sort"
)

// Capability names a host may advertise.
const (
	CapDiscordHistory        = "discord.history.v1"        // baseline
	CapProposals             = "proposals.v2"              // baseline
	CapDiscordGuildCommands  = "discord.guild_commands.v1" // Interactions.ReplaceGuildCommands
	CapDiscordModals         = "discord.modals.v1"
	CapDiscordComponentsV2   = "discord.components_v2.v1"
	CapDiscordMembers        = "discord.members.v1"         // members intent
	CapDiscordMessageContent = "discord.message_content.v1" // message content intent
	CapToolFiles             = "tools.files.v1"
	CapScheduledResults      = "scheduled_results.v1"
)

// Capabilities is the immutable set of capabilities a host advertises plus
// its gateway intents. The zero value advertises nothing.
type Capabilities struct {
	names                []string // sorted, unique
	membersIntent        bool
	messageContentIntent bool
}

// NewCapabilities builds a capability set; names are copied and deduplicated.
func NewCapabilities(names []string, membersIntent, messageContentIntent bool) Capabilities {
	sorted := slices.Clone(names)
	sort.Strings(sorted)
	return Capabilities{names: slices.Compact(sorted), membersIntent: membersIntent, messageContentIntent: messageContentIntent}
}

// Has reports whether name is advertised.
func (c Capabilities) Has(name string) bool {
	_, found := slices.BinarySearch(c.names, name)
	return found
}

// Require returns an error unless name is advertised: "the host does not
// provide required capability 'x'".
func (c Capabilities) Require(name string) error {
	if c.Has(name) {
		return nil
	}
	return fmt.Errorf("the host does not provide required capability %s", pyRepr(name))
}

// Names returns the advertised names, sorted (a copy).
func (c Capabilities) Names() []string { return slices.Clone(c.names) }

// MembersIntent reports whether the members gateway intent is enabled.
func (c Capabilities) MembersIntent() bool { return c.membersIntent }

// MessageContentIntent reports whether the message content intent is enabled.
func (c Capabilities) MessageContentIntent() bool { return c.messageContentIntent }
