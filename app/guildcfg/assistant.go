package guildcfg

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// KeyAssistant is the server-setup document's assistant mapping.
const KeyAssistant = "assistant"

// Keys of the assistant mapping; a channel document (channel:<id>) may set
// KeyBlockedTools and KeyPinnedTools at its top level.
const (
	AssistantKeyEnabled = "enabled"
	AssistantKeyMinTier = "min_tier"
	// AssistantKeyDailyTokens overrides the guild's daily token budget
	// (prompt plus completion tokens per UTC day; absent: the
	// assistant's default on /assistant).
	AssistantKeyDailyTokens = "daily_tokens"
	KeyBlockedTools         = "blocked_tools"
	KeyPinnedTools          = "pinned_tools"
)

// TierOwner is the min_tier choice that limits the assistant to the
// deployment's bot owner (it is no sdk.TrustTier: the owner is a person,
// not a tier).
const TierOwner = "owner"

// Bounds of assistant.daily_tokens (the same as /assistant's guild
// budget).
const (
	MinDailyTokens = 1000
	MaxDailyTokens = 1_000_000_000
)

// assistantTierChoices are min_tier's choices, lowest first.
var assistantTierChoices = []string{"member", "regular", "staff", TierOwner}

// AssistantConfig is a server-setup document's assistant mapping.
type AssistantConfig struct {
	// Enabled is the explicit enabled value; nil when the document does
	// not set it (the default: on in every active guild once a model
	// provider is configured).
	Enabled *bool
	// MinTier is the lowest tier the assistant answers above member (0:
	// member, the default, so an absent and an explicit member read the
	// same); OwnerOnly is min_tier: owner (then MinTier is TierStaff).
	MinTier   sdk.TrustTier
	OwnerOnly bool
	// BlockedTools are never offered here; PinnedTools are offered from
	// the first iteration even when searchable. Sorted, without duplicates.
	BlockedTools []string
	PinnedTools  []string
	// DailyTokens is the guild's daily token budget (0: not set, the
	// assistant's default applies).
	DailyTokens int64
}

// IsDefault reports whether c says nothing the defaults do not (the
// document then leaves the mapping out).
func (c AssistantConfig) IsDefault() bool {
	return c.Enabled == nil && c.MinTier.Or(sdk.TierMember) == sdk.TierMember && !c.OwnerOnly &&
		len(c.BlockedTools) == 0 && len(c.PinnedTools) == 0 && c.DailyTokens == 0
}

// TierName is min_tier as the document writes it: member, regular, staff
// or owner.
func (c AssistantConfig) TierName() string {
	if c.OwnerOnly {
		return TierOwner
	}
	return c.MinTier.Or(sdk.TierMember).String()
}

// ChannelConfig is what a channel document (channel:<id>) says to the
// assistant: tools blocked or pinned in that channel, on top of the
// guild's. Other keys are kept for the features that read them.
type ChannelConfig struct {
	BlockedTools []string
	PinnedTools  []string
	// Body is the text after the frontmatter.
	Body string
}

// ParseChannelDocument parses a channel document and validates the keys
// the assistant reads. A refusal is a *ValidationError with one
// FieldError per bad key.
func ParseChannelDocument(text string) (ChannelConfig, error) {
	fm, err := ParseFrontmatter(text)
	if err != nil {
		return ChannelConfig{}, err
	}
	cfg := ChannelConfig{Body: fm.Body}
	var problems []FieldError
	for _, key := range []string{KeyBlockedTools, KeyPinnedTools} {
		list, msg := toolList(key, fm.Values[key])
		if msg != "" {
			problems = append(problems, FieldError{Field: key, Line: fm.Lines[key], Message: msg})
			continue
		}
		if key == KeyBlockedTools {
			cfg.BlockedTools = list
		} else {
			cfg.PinnedTools = list
		}
	}
	if len(problems) > 0 {
		return ChannelConfig{}, invalid("", joinMessages(problems), problems)
	}
	return cfg, nil
}

var assistantFields = []sdk.GuildSettingField{
	{Name: KeyAssistant + "." + AssistantKeyEnabled, Kind: sdk.GuildSettingBool},
	{Name: KeyAssistant + "." + AssistantKeyMinTier, Kind: sdk.GuildSettingEnum, Default: "member", Choices: assistantTierChoices},
	{Name: KeyAssistant + "." + AssistantKeyDailyTokens, Kind: sdk.GuildSettingInt},
}

// parseAssistant reads the assistant mapping; absent means the defaults.
func parseAssistant(raw any) (AssistantConfig, []FieldError) {
	var cfg AssistantConfig
	if raw == nil {
		return cfg, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return cfg, []FieldError{{Field: KeyAssistant, Message: KeyAssistant + " must be a mapping of enabled, min_tier, daily_tokens, blocked_tools and pinned_tools"}}
	}
	var problems []FieldError
	known := []string{AssistantKeyEnabled, AssistantKeyMinTier, AssistantKeyDailyTokens, KeyBlockedTools, KeyPinnedTools}
	var unknown []string
	for k := range m {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		problems = append(problems, FieldError{Field: KeyAssistant + "." + k, Message: "unknown setting " + hostkit.Repr(KeyAssistant+"."+k)})
	}
	if v, set := m[AssistantKeyEnabled]; set && v != nil {
		b, err := assistantFields[0].Coerce(v)
		if err != nil {
			problems = append(problems, FieldError{Field: assistantFields[0].Name, Message: err.Error()})
		} else {
			on := b.(bool)
			cfg.Enabled = &on
		}
	}
	if t, err := assistantFields[1].Coerce(m[AssistantKeyMinTier]); err != nil {
		problems = append(problems, FieldError{Field: assistantFields[1].Name, Message: err.Error()})
	} else if t == TierOwner {
		cfg.MinTier, cfg.OwnerOnly = sdk.TierStaff, true
	} else if t != "member" {
		cfg.MinTier, _ = sdk.ParseTrustTier(t.(string))
	}
	if v, set := m[AssistantKeyDailyTokens]; set && v != nil {
		n, err := assistantFields[2].Coerce(v)
		switch {
		case err != nil:
			problems = append(problems, FieldError{Field: assistantFields[2].Name, Message: err.Error()})
		case n.(int64) < MinDailyTokens || n.(int64) > MaxDailyTokens:
			problems = append(problems, FieldError{Field: assistantFields[2].Name,
				Message: fmt.Sprintf("%s must be from %d to %d tokens", assistantFields[2].Name, MinDailyTokens, MaxDailyTokens)})
		default:
			cfg.DailyTokens = n.(int64)
		}
	}
	for _, key := range []string{KeyBlockedTools, KeyPinnedTools} {
		field := KeyAssistant + "." + key
		list, msg := toolList(field, m[key])
		if msg != "" {
			problems = append(problems, FieldError{Field: field, Message: msg})
			continue
		}
		if key == KeyBlockedTools {
			cfg.BlockedTools = list
		} else {
			cfg.PinnedTools = list
		}
	}
	return cfg, problems
}

// toolList coerces a list of tool names: text entries that follow the tool
// name rule providers accept, sorted and deduplicated. Whether a module
// declares them is not checked here (modules come and go): see
// Service.ToolWarnings.
func toolList(field string, raw any) ([]string, string) {
	f := sdk.GuildSettingField{Name: field, Kind: sdk.GuildSettingStrList}
	v, err := f.Coerce(raw)
	if err != nil {
		return nil, err.Error()
	}
	list, _ := v.([]string)
	out := make([]string, 0, len(list))
	for _, name := range list {
		name = strings.TrimSpace(name)
		if !hostkit.ValidToolName(name) {
			return nil, fmt.Sprintf("%s contains an invalid tool name %s: use 1 to 64 letters, digits, '_' or '-'", field, hostkit.Repr(name))
		}
		out = append(out, name)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, ""
	}
	return out, ""
}

// renderAssistant writes the assistant mapping when it differs from the
// defaults (enabled only when set).
func renderAssistant(b *strings.Builder, c AssistantConfig) {
	if c.IsDefault() {
		return
	}
	b.WriteString(KeyAssistant + ":\n")
	if c.Enabled != nil {
		fmt.Fprintf(b, "  %s: %t\n", AssistantKeyEnabled, *c.Enabled)
	}
	fmt.Fprintf(b, "  %s: %s\n", AssistantKeyMinTier, c.TierName())
	if c.DailyTokens > 0 {
		fmt.Fprintf(b, "  %s: %d\n", AssistantKeyDailyTokens, c.DailyTokens)
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{KeyBlockedTools, c.BlockedTools}, {KeyPinnedTools, c.PinnedTools}} {
		if len(l.list) > 0 {
			quoted := make([]string, len(l.list))
			for i, name := range l.list {
				quoted[i] = `"` + name + `"` // ASCII letters, digits, '_', '-': never "true" or 1 read back
			}
			fmt.Fprintf(b, "  %s: [%s]\n", l.key, strings.Join(quoted, ", "))
		}
	}
}
