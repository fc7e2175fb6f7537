package guildcfg

import (
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// coreToolNames are the tools the assistant itself offers (no module
// declares them), so a document may block or pin them without a warning.
var coreToolNames = []string{"browse_tools"}

// AssistantPolicy is what a guild's documents say to the assistant about
// one place (a channel, or a thread by its parent). Its slices may be
// shared with the Service's snapshot: treat them as read-only.
type AssistantPolicy struct {
	// Enabled is the guild's assistant.enabled, true when the document
	// does not set it. The assistant answers only when a model provider is
	// configured as well.
	Enabled bool
	// MinTier is the lowest tier answered; OwnerOnly (min_tier: owner)
	// answers the deployment's bot owner only.
	MinTier   sdk.TrustTier
	OwnerOnly bool
	// AllowedChannelIDs is the guild's allowed_channel_ids (empty: every
	// channel); ChannelAllowed says whether this place passes it (a thread
	// by its parent).
	AllowedChannelIDs []uint64
	ChannelAllowed    bool
	// BlockedTools and PinnedTools are the guild's, the parent channel's
	// and the channel's own, merged (sorted, no duplicates). A blocked
	// tool is never pinned.
	BlockedTools []string
	PinnedTools  []string
	// Instructions is the server's instructions: the server-setup
	// document's body, operator text for the system prompt.
	Instructions string
	// DailyTokens is the guild's assistant.daily_tokens (0: not set).
	DailyTokens int64
}

// Allows reports whether a caller of tier (and owner status) passes the
// policy's min_tier.
func (p AssistantPolicy) Allows(tier sdk.TrustTier, owner bool) bool {
	if p.OwnerOnly {
		return owner
	}
	return tier.AtLeast(p.MinTier.Or(sdk.TierMember))
}

// AssistantFor returns the assistant's policy in a place of a guild:
// channelID is where the message is, parentID the thread's parent channel
// (0 for a channel). ok is false when the guild is not active (no valid
// server-setup document, bot_active false, or blocked by a module's
// invalid settings): the assistant stays silent there. It reads the
// in-memory snapshot and allocates only when a channel document adds
// tools to the guild's lists.
func (s *Service) AssistantFor(guildID, channelID, parentID uint64) (AssistantPolicy, bool) {
	snap := s.snap.Load()
	g := snap.guilds[guildID]
	if g == nil || !g.valid || !g.active {
		return AssistantPolicy{}, false
	}
	cfg := &g.config
	a := &cfg.Assistant
	p := AssistantPolicy{
		Enabled: a.Enabled == nil || *a.Enabled, MinTier: a.MinTier.Or(sdk.TierMember), OwnerOnly: a.OwnerOnly,
		AllowedChannelIDs: cfg.AllowedChannelIDs, BlockedTools: a.BlockedTools, PinnedTools: a.PinnedTools,
		Instructions: cfg.Body, DailyTokens: a.DailyTokens,
	}
	place := channelID
	if parentID != 0 {
		place = parentID
	}
	p.ChannelAllowed = len(cfg.AllowedChannelIDs) == 0 || slices.Contains(cfg.AllowedChannelIDs, place)
	for _, id := range []uint64{parentID, channelID} {
		if id == 0 {
			continue
		}
		if ch, ok := snap.channels[id]; ok {
			p.BlockedTools = union(p.BlockedTools, ch.BlockedTools)
			p.PinnedTools = union(p.PinnedTools, ch.PinnedTools)
		}
	}
	if len(p.BlockedTools) > 0 && len(p.PinnedTools) > 0 {
		p.PinnedTools = slices.DeleteFunc(slices.Clone(p.PinnedTools), func(n string) bool {
			_, found := slices.BinarySearch(p.BlockedTools, n)
			return found
		})
	}
	return p, true
}

// union merges two sorted, deduplicated lists; it returns a itself when b
// adds nothing (no allocation on the common path).
func union(a, b []string) []string {
	extra := 0
	for _, n := range b {
		if _, found := slices.BinarySearch(a, n); !found {
			extra++
		}
	}
	if extra == 0 {
		return a
	}
	out := make([]string, 0, len(a)+extra)
	out = append(out, a...)
	for _, n := range b {
		if _, found := slices.BinarySearch(a, n); !found {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// ToolWarnings names the tools a guild or channel document's text blocks
// or pins that neither a module of this build declares nor the assistant
// offers itself. They are warnings, not refusals: the text is stored (a
// module may be added later). A text that does not parse has none.
func (s *Service) ToolWarnings(target Target, text string) []FieldError {
	type toolField struct {
		field string
		names []string
	}
	var lists []toolField
	switch target.Kind {
	case KindGuild:
		cfg, err := ParseGuildDocument(text)
		if err != nil {
			return nil
		}
		lists = []toolField{{KeyAssistant + "." + KeyBlockedTools, cfg.Assistant.BlockedTools},
			{KeyAssistant + "." + KeyPinnedTools, cfg.Assistant.PinnedTools}}
	case KindChannel:
		cfg, err := ParseChannelDocument(text)
		if err != nil {
			return nil
		}
		lists = []toolField{{KeyBlockedTools, cfg.BlockedTools}, {KeyPinnedTools, cfg.PinnedTools}}
	default:
		return nil
	}
	var out []FieldError
	for _, l := range lists {
		for _, name := range l.names {
			if !s.knownTool(name) {
				out = append(out, FieldError{Field: l.field, Message: fmt.Sprintf("%s names %q, which no module of this build declares; it is kept in case the module is added later", l.field, name)})
			}
		}
	}
	return out
}

func (s *Service) knownTool(name string) bool {
	if slices.Contains(coreToolNames, name) {
		return true
	}
	for _, spec := range s.specs {
		if slices.Contains(spec.Tools, name) {
			return true
		}
	}
	return false
}
