package guildcfg

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // task policies name IANA zones; the static binary may run where the host has none

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Keys of the server-setup document (guild:<id>), as the original's
// servers/<id>.md frontmatter (reference/kimi-agent-host.md §5.1, §7, §10).
const (
	KeyBotActive         = "bot_active"
	KeyStaffUserIDs      = "staff_user_ids"
	KeyStaffRoleIDs      = "staff_role_ids"
	KeyRegularRoleIDs    = "regular_role_ids"
	KeyAllowedChannelIDs = "allowed_channel_ids"
	KeyProposalChannelID = "proposal_channel_id"
	KeyScheduledTasks    = "scheduled_tasks"
)

// Keys of the scheduled_tasks policy mapping.
const (
	TaskKeyEnabled      = "enabled"
	TaskKeyMinTier      = "min_tier"
	TaskKeyTimezone     = "timezone"
	TaskKeyDestinations = "destinations"
)

// GuildConfig is a valid server-setup document.
type GuildConfig struct {
	// BotActive is the document's bot_active (required, a YAML boolean).
	BotActive bool
	// StaffUserIDs, StaffRoleIDs and RegularRoleIDs add to the deployment's
	// global trust lists (a guild can add, never remove).
	StaffUserIDs   []uint64
	StaffRoleIDs   []uint64
	RegularRoleIDs []uint64
	// AllowedChannelIDs lists the channels the bot answers in (empty: the
	// deployment's default).
	AllowedChannelIDs []uint64
	// ProposalChannelID is where proposal review cards go (0: the
	// proposer's channel).
	ProposalChannelID uint64
	// Tasks is the scheduled-task policy.
	Tasks TaskPolicy
	// Assistant is the assistant mapping (the defaults when absent).
	Assistant AssistantConfig
	// Body is the text after the frontmatter (the server's instructions).
	Body string
}

// TaskPolicy is a guild's scheduled_tasks mapping; absent means disabled.
type TaskPolicy struct {
	Enabled      bool
	MinTier      sdk.TrustTier // default staff
	Timezone     string        // IANA name, default "UTC"
	Destinations []uint64
}

// The documented fields, checked with the SDK's coercion so their messages
// are the ones module settings use ("bot_active must be true or false",
// "staff_role_ids has more than 512 entries", ...).
var (
	guildFields = []sdk.GuildSettingField{
		{Name: KeyBotActive, Kind: sdk.GuildSettingBool, Required: true},
		{Name: KeyStaffUserIDs, Kind: sdk.GuildSettingIDList},
		{Name: KeyStaffRoleIDs, Kind: sdk.GuildSettingIDList},
		{Name: KeyRegularRoleIDs, Kind: sdk.GuildSettingIDList},
		{Name: KeyAllowedChannelIDs, Kind: sdk.GuildSettingIDList},
		{Name: KeyProposalChannelID, Kind: sdk.GuildSettingID},
	}
	taskFields = []sdk.GuildSettingField{
		{Name: KeyScheduledTasks + "." + TaskKeyEnabled, Kind: sdk.GuildSettingBool, Default: false},
		{Name: KeyScheduledTasks + "." + TaskKeyMinTier, Kind: sdk.GuildSettingEnum, Default: "staff", Choices: []string{"member", "regular", "staff"}},
		{Name: KeyScheduledTasks + "." + TaskKeyTimezone, Kind: sdk.GuildSettingStr, Default: "UTC"},
		{Name: KeyScheduledTasks + "." + TaskKeyDestinations, Kind: sdk.GuildSettingIDList},
	}
)

// ParseGuildDocument parses and validates a server-setup document. Other
// top-level keys are kept for the features that read them and are not
// checked here, as in the original. A refusal is a *ValidationError with
// MsgGuildInvalid and one FieldError per bad key.
func ParseGuildDocument(text string) (GuildConfig, error) {
	fm, err := ParseFrontmatter(text)
	if err != nil {
		return GuildConfig{}, err
	}
	var cfg GuildConfig
	var problems []FieldError
	fail := func(field, msg string) {
		problems = append(problems, FieldError{Field: field, Line: fm.Lines[topKey(field)], Message: msg})
	}
	values := map[string]any{}
	for _, f := range guildFields {
		v, err := f.Coerce(fm.Values[f.Name])
		if err != nil {
			fail(f.Name, err.Error())
			continue
		}
		if msg := zeroID(f.Name, v); msg != "" {
			fail(f.Name, msg)
			continue
		}
		values[f.Name] = v
	}
	cfg.BotActive, _ = values[KeyBotActive].(bool)
	cfg.StaffUserIDs, _ = values[KeyStaffUserIDs].([]uint64)
	cfg.StaffRoleIDs, _ = values[KeyStaffRoleIDs].([]uint64)
	cfg.RegularRoleIDs, _ = values[KeyRegularRoleIDs].([]uint64)
	cfg.AllowedChannelIDs, _ = values[KeyAllowedChannelIDs].([]uint64)
	cfg.ProposalChannelID, _ = values[KeyProposalChannelID].(uint64)

	tasks, taskProblems := parseTaskPolicy(fm.Values[KeyScheduledTasks])
	for _, p := range taskProblems {
		fail(p.Field, p.Message)
	}
	cfg.Tasks = tasks
	assistant, assistantProblems := parseAssistant(fm.Values[KeyAssistant])
	for _, p := range assistantProblems {
		fail(p.Field, p.Message)
	}
	cfg.Assistant = assistant
	cfg.Body = fm.Body
	if len(problems) > 0 {
		return GuildConfig{}, invalid("", MsgGuildInvalid, problems)
	}
	return cfg, nil
}

func topKey(field string) string {
	k, _, _ := strings.Cut(field, ".")
	return k
}

// zeroID refuses id 0, which the SDK's digit check lets through but no
// Discord object has (the original's targets and ids are > 0).
func zeroID(field string, v any) string {
	switch t := v.(type) {
	case uint64:
		if t == 0 {
			return field + " must be a positive Discord id"
		}
	case []uint64:
		if slices.Contains(t, 0) {
			return field + " contains an invalid id 0"
		}
	}
	return ""
}

func parseTaskPolicy(raw any) (TaskPolicy, []FieldError) {
	policy := TaskPolicy{MinTier: sdk.TierStaff, Timezone: "UTC"}
	if raw == nil {
		return policy, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return policy, []FieldError{{Field: KeyScheduledTasks, Message: KeyScheduledTasks + " must be a mapping of enabled, min_tier, timezone and destinations"}}
	}
	var problems []FieldError
	var unknown []string
	for k := range m {
		if !slices.ContainsFunc(taskFields, func(f sdk.GuildSettingField) bool { return f.Name == KeyScheduledTasks+"."+k }) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		problems = append(problems, FieldError{Field: KeyScheduledTasks + "." + k, Message: "unknown setting " + hostkit.Repr(KeyScheduledTasks+"."+k)})
	}
	for _, f := range taskFields {
		v, err := f.Coerce(m[strings.TrimPrefix(f.Name, KeyScheduledTasks+".")])
		if err == nil {
			if msg := zeroID(f.Name, v); msg != "" {
				err = fmt.Errorf("%s", msg)
			}
		}
		if err != nil {
			problems = append(problems, FieldError{Field: f.Name, Message: err.Error()})
			continue
		}
		switch strings.TrimPrefix(f.Name, KeyScheduledTasks+".") {
		case TaskKeyEnabled:
			policy.Enabled = v.(bool)
		case TaskKeyMinTier:
			policy.MinTier, _ = sdk.ParseTrustTier(v.(string))
		case TaskKeyTimezone:
			tz := v.(string)
			if _, err := time.LoadLocation(tz); err != nil || tz == "" || tz == "Local" {
				problems = append(problems, FieldError{Field: f.Name, Message: f.Name + " must be an IANA time zone such as Europe/Berlin"})
				continue
			}
			policy.Timezone = tz
		case TaskKeyDestinations:
			policy.Destinations, _ = v.([]uint64)
		}
	}
	return policy, problems
}

// RenderGuildDocument renders cfg as a server-setup document: the
// documented keys in a fixed order (empty lists and a zero channel left
// out, the task policy and the assistant mapping only when they differ
// from the defaults), then the body. ParseGuildDocument reads back the same GuildConfig.
func RenderGuildDocument(cfg GuildConfig) string {
	var b strings.Builder
	b.WriteString("---\n")
	fmt.Fprintf(&b, "%s: %t\n", KeyBotActive, cfg.BotActive)
	ids := func(key string, list []uint64) {
		if len(list) == 0 {
			return
		}
		parts := make([]string, len(list))
		for i, id := range list {
			parts[i] = strconv.FormatUint(id, 10)
		}
		fmt.Fprintf(&b, "%s: [%s]\n", key, strings.Join(parts, ", "))
	}
	ids(KeyStaffUserIDs, cfg.StaffUserIDs)
	ids(KeyStaffRoleIDs, cfg.StaffRoleIDs)
	ids(KeyRegularRoleIDs, cfg.RegularRoleIDs)
	ids(KeyAllowedChannelIDs, cfg.AllowedChannelIDs)
	if cfg.ProposalChannelID != 0 {
		fmt.Fprintf(&b, "%s: %d\n", KeyProposalChannelID, cfg.ProposalChannelID)
	}
	t := cfg.Tasks
	if t.Enabled || (t.MinTier != 0 && t.MinTier != sdk.TierStaff) || (t.Timezone != "" && t.Timezone != "UTC") || len(t.Destinations) > 0 {
		tier := t.MinTier.Or(sdk.TierStaff)
		tz := t.Timezone
		if tz == "" {
			tz = "UTC"
		}
		tzJSON, _ := json.Marshal(tz)
		fmt.Fprintf(&b, "%s:\n  %s: %t\n  %s: %s\n  %s: %s\n", KeyScheduledTasks, TaskKeyEnabled, t.Enabled, TaskKeyMinTier, tier, TaskKeyTimezone, tzJSON)
		if len(t.Destinations) > 0 {
			parts := make([]string, len(t.Destinations))
			for i, id := range t.Destinations {
				parts[i] = strconv.FormatUint(id, 10)
			}
			fmt.Fprintf(&b, "  %s: [%s]\n", TaskKeyDestinations, strings.Join(parts, ", "))
		}
	}
	renderAssistant(&b, cfg.Assistant)
	b.WriteString("---\n")
	b.WriteString(cfg.Body)
	return b.String()
}
