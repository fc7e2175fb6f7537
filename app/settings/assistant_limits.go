package settings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/store"
)

// Keys of the assistant's limits and budgets (issue 26 item 2) in the
// settings table.
const (
	SettingAssistantUserTurnsPer10Min = "assistant.user_turns_per_10min"
	SettingAssistantUserDailyTokens   = "assistant.user_daily_tokens"
	SettingAssistantGuildDailyTokens  = "assistant.guild_daily_tokens"
	SettingAssistantMonthlyTokens     = "assistant.monthly_tokens"
	SettingAssistantLimitsExemptStaff = "assistant.limits_exempt_staff"
)

// AuditActionAssistantLimits is the audit action of a save of the limits;
// its detail names what changed.
const AuditActionAssistantLimits = "assistant.limits"

// Field names of the limits (Error.Fields keys and the form's field
// names).
const (
	FieldAssistantUserTurnsPer10Min = "user_turns_per_10min"
	FieldAssistantUserDailyTokens   = "user_daily_tokens"
	FieldAssistantGuildDailyTokens  = "guild_daily_tokens"
	FieldAssistantMonthlyTokens     = "monthly_tokens"
	FieldAssistantLimitsExemptStaff = "limits_exempt_staff"
)

// Bounds and defaults of the limits. Tokens are prompt plus completion
// tokens as the provider reported them.
const (
	DefaultUserTurnsPer10Min = 10
	MinUserTurnsPer10Min     = 1
	MaxUserTurnsPer10Min     = 10000
	DefaultUserDailyTokens   = 100_000
	DefaultGuildDailyTokens  = 1_000_000
	MinDailyTokens           = 1000
	MaxDailyTokens           = 1_000_000_000
	// MonthlyTokens 0 turns the global monthly cap off.
	MaxMonthlyTokens = 100_000_000_000
)

// AssistantLimits are the limits that refuse a turn before any provider
// call: a member's turns per guild in a sliding ten minutes, a member's
// and a guild's tokens per UTC day, and an optional global cap per UTC
// month. The bot owner is always exempt; staff only with ExemptStaff.
type AssistantLimits struct {
	UserTurnsPer10Min int
	UserDailyTokens   int64
	// GuildDailyTokens is the default of a guild's budget; its guild
	// document's assistant.daily_tokens overrides it.
	GuildDailyTokens int64
	// MonthlyTokens caps every guild and DM together per UTC month (0:
	// off).
	MonthlyTokens int64
	ExemptStaff   bool
}

// DefaultAssistantLimits is what an empty store gives: 10 turns in ten
// minutes, 100,000 tokens a member a day, 1,000,000 a guild a day, no
// monthly cap, staff not exempt.
func DefaultAssistantLimits() AssistantLimits {
	return AssistantLimits{UserTurnsPer10Min: DefaultUserTurnsPer10Min, UserDailyTokens: DefaultUserDailyTokens,
		GuildDailyTokens: DefaultGuildDailyTokens}
}

// AssistantLimitsUpdate is a submitted change, the numbers as typed.
type AssistantLimitsUpdate struct {
	UserTurnsPer10Min, UserDailyTokens, GuildDailyTokens, MonthlyTokens string
	ExemptStaff                                                         bool
}

// Validate checks u as SaveAssistantLimits does, without storing it: nil,
// or a *Error naming each refused field.
func (u AssistantLimitsUpdate) Validate() error {
	_, err := u.parse()
	return err
}

func parseBounded(s string, lo, hi int64) (int64, bool) {
	n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 10, 64)
	return n, err == nil && n >= lo && n <= hi
}

func (u AssistantLimitsUpdate) parse() (AssistantLimits, error) {
	f := map[string]string{}
	l := AssistantLimits{ExemptStaff: u.ExemptStaff}
	if n, ok := parseBounded(u.UserTurnsPer10Min, MinUserTurnsPer10Min, MaxUserTurnsPer10Min); ok {
		l.UserTurnsPer10Min = int(n)
	} else {
		f[FieldAssistantUserTurnsPer10Min] = fmt.Sprintf("Enter the turns a member may start in ten minutes, from %d to %d (default %d).",
			MinUserTurnsPer10Min, MaxUserTurnsPer10Min, DefaultUserTurnsPer10Min)
	}
	var ok bool
	if l.UserDailyTokens, ok = parseBounded(u.UserDailyTokens, MinDailyTokens, MaxDailyTokens); !ok {
		f[FieldAssistantUserDailyTokens] = fmt.Sprintf("Enter a member's tokens a day, from %d to %d (default %d).",
			MinDailyTokens, MaxDailyTokens, DefaultUserDailyTokens)
	}
	if l.GuildDailyTokens, ok = parseBounded(u.GuildDailyTokens, MinDailyTokens, MaxDailyTokens); !ok {
		f[FieldAssistantGuildDailyTokens] = fmt.Sprintf("Enter a guild's tokens a day, from %d to %d (default %d).",
			MinDailyTokens, MaxDailyTokens, DefaultGuildDailyTokens)
	}
	if l.MonthlyTokens, ok = parseBounded(u.MonthlyTokens, 0, MaxMonthlyTokens); !ok || (l.MonthlyTokens > 0 && l.MonthlyTokens < MinDailyTokens) {
		f[FieldAssistantMonthlyTokens] = fmt.Sprintf("Enter the tokens of all guilds a month, 0 (no cap) or from %d to %d.",
			MinDailyTokens, MaxMonthlyTokens)
	}
	if len(f) > 0 {
		return AssistantLimits{}, &Error{Fields: f}
	}
	return l, nil
}

var limitsKeys = []string{SettingAssistantUserTurnsPer10Min, SettingAssistantUserDailyTokens, SettingAssistantGuildDailyTokens,
	SettingAssistantMonthlyTokens, SettingAssistantLimitsExemptStaff}

// LoadAssistantLimits reads the stored limits over DefaultAssistantLimits;
// a stored value that does not parse or is out of bounds leaves the
// default.
func LoadAssistantLimits(ctx context.Context, st Store) (AssistantLimits, error) {
	l, err := readLimits(ctx, st.Reader())
	if err != nil {
		return AssistantLimits{}, fmt.Errorf("settings: load assistant limits: %w", err)
	}
	return l, nil
}

func readLimits(ctx context.Context, q querier) (AssistantLimits, error) {
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM kimi_settings WHERE key IN (?, ?, ?, ?, ?)`,
		limitsKeys[0], limitsKeys[1], limitsKeys[2], limitsKeys[3], limitsKeys[4])
	if err != nil {
		return AssistantLimits{}, err
	}
	defer rows.Close()
	l := DefaultAssistantLimits()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return AssistantLimits{}, err
		}
		switch k {
		case SettingAssistantUserTurnsPer10Min:
			if n, ok := parseBounded(v, MinUserTurnsPer10Min, MaxUserTurnsPer10Min); ok {
				l.UserTurnsPer10Min = int(n)
			}
		case SettingAssistantUserDailyTokens:
			if n, ok := parseBounded(v, MinDailyTokens, MaxDailyTokens); ok {
				l.UserDailyTokens = n
			}
		case SettingAssistantGuildDailyTokens:
			if n, ok := parseBounded(v, MinDailyTokens, MaxDailyTokens); ok {
				l.GuildDailyTokens = n
			}
		case SettingAssistantMonthlyTokens:
			if n, ok := parseBounded(v, 0, MaxMonthlyTokens); ok {
				l.MonthlyTokens = n
			}
		case SettingAssistantLimitsExemptStaff:
			l.ExemptStaff = v == "true"
		}
	}
	return l, rows.Err()
}

// SaveAssistantLimits validates u and stores it with an
// AuditActionAssistantLimits row in one write transaction. Invalid input
// returns a *Error and changes nothing.
func SaveAssistantLimits(ctx context.Context, st Store, u AssistantLimitsUpdate, who Actor) (AssistantLimits, error) {
	next, err := u.parse()
	if err != nil {
		return AssistantLimits{}, err
	}
	err = st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readLimits(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		if err := writeSettingsTx(ctx, tx, []settingWrite{
			{SettingAssistantUserTurnsPer10Min, strconv.Itoa(next.UserTurnsPer10Min), false},
			{SettingAssistantUserDailyTokens, strconv.FormatInt(next.UserDailyTokens, 10), false},
			{SettingAssistantGuildDailyTokens, strconv.FormatInt(next.GuildDailyTokens, 10), false},
			{SettingAssistantMonthlyTokens, strconv.FormatInt(next.MonthlyTokens, 10), false},
			{SettingAssistantLimitsExemptStaff, strconv.FormatBool(next.ExemptStaff), false},
		}); err != nil {
			return err
		}
		detail := "saved, nothing changed"
		if changes := diffLimits(cur, next); len(changes) > 0 {
			detail = strings.Join(changes, "; ")
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionAssistantLimits, Target: "assistant", Detail: detail, IP: who.IP})
	})
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return AssistantLimits{}, err
		}
		return AssistantLimits{}, fmt.Errorf("settings: save assistant limits: %w", err)
	}
	return next, nil
}

func diffLimits(cur, next AssistantLimits) []string {
	var out []string
	if cur.UserTurnsPer10Min != next.UserTurnsPer10Min {
		out = append(out, "member turns per 10 min "+strconv.Itoa(next.UserTurnsPer10Min))
	}
	if cur.UserDailyTokens != next.UserDailyTokens {
		out = append(out, "member daily tokens "+strconv.FormatInt(next.UserDailyTokens, 10))
	}
	if cur.GuildDailyTokens != next.GuildDailyTokens {
		out = append(out, "guild daily tokens "+strconv.FormatInt(next.GuildDailyTokens, 10))
	}
	if cur.MonthlyTokens != next.MonthlyTokens {
		out = append(out, "monthly tokens "+strconv.FormatInt(next.MonthlyTokens, 10))
	}
	if cur.ExemptStaff != next.ExemptStaff {
		out = append(out, "staff exempt "+strconv.FormatBool(next.ExemptStaff))
	}
	return out
}
