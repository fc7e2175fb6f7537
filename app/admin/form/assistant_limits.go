package form

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/settings"
)

// Field names of the /assistant limits form (POST /assistant/limits): the
// names the settings package keys its errors by.
const (
	AssistantUserTurnsPer10Min = settings.FieldAssistantUserTurnsPer10Min
	AssistantUserDailyTokens   = settings.FieldAssistantUserDailyTokens
	AssistantGuildDailyTokens  = settings.FieldAssistantGuildDailyTokens
	AssistantMonthlyTokens     = settings.FieldAssistantMonthlyTokens
	AssistantLimitsExemptStaff = settings.FieldAssistantLimitsExemptStaff
)

// MsgAssistantLimitsNotSaved heads a refused limits form.
const MsgAssistantLimitsNotSaved = "The limits were not saved. Correct the fields marked below."

// AssistantLimits is the submitted limits form, the numbers as typed.
type AssistantLimits struct {
	UserTurnsPer10Min, UserDailyTokens, GuildDailyTokens, MonthlyTokens string
	ExemptStaff                                                         bool
}

// ParseAssistantLimits reads the form from r.
func ParseAssistantLimits(r *http.Request) AssistantLimits {
	return AssistantLimits{UserTurnsPer10Min: value(r, AssistantUserTurnsPer10Min), UserDailyTokens: value(r, AssistantUserDailyTokens),
		GuildDailyTokens: value(r, AssistantGuildDailyTokens), MonthlyTokens: value(r, AssistantMonthlyTokens),
		ExemptStaff: checked(r, AssistantLimitsExemptStaff)}
}

// AssistantLimitsOf is the form showing the stored limits l.
func AssistantLimitsOf(l settings.AssistantLimits) AssistantLimits {
	return AssistantLimits{UserTurnsPer10Min: strconv.Itoa(l.UserTurnsPer10Min), UserDailyTokens: strconv.FormatInt(l.UserDailyTokens, 10),
		GuildDailyTokens: strconv.FormatInt(l.GuildDailyTokens, 10), MonthlyTokens: strconv.FormatInt(l.MonthlyTokens, 10),
		ExemptStaff: l.ExemptStaff}
}

// Update is the form as a change to the stored limits.
func (f AssistantLimits) Update() settings.AssistantLimitsUpdate {
	return settings.AssistantLimitsUpdate{UserTurnsPer10Min: f.UserTurnsPer10Min, UserDailyTokens: f.UserDailyTokens,
		GuildDailyTokens: f.GuildDailyTokens, MonthlyTokens: f.MonthlyTokens, ExemptStaff: f.ExemptStaff}
}

// Validate checks the form as the save does: the settings' bounds, each
// refusal on its field with the FieldForm message.
func (f AssistantLimits) Validate() Errors {
	return AssistantLimitsErrors(f.Update().Validate())
}

// AssistantLimitsErrors turns a refusal of settings.SaveAssistantLimits
// into Errors with the FieldForm message; nil for nil or any other error.
func AssistantLimitsErrors(err error) Errors {
	return settingsRefusal(err, MsgAssistantLimitsNotSaved, func(field string) bool {
		switch field {
		case AssistantUserTurnsPer10Min, AssistantUserDailyTokens, AssistantGuildDailyTokens, AssistantMonthlyTokens:
			return true
		}
		return false
	})
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Hints of the limits form's fields, from the settings' bounds.
var (
	HintAssistantUserTurnsPer10Min = "The turns one member may start in one guild in any ten minutes, " + strconv.Itoa(settings.MinUserTurnsPer10Min) +
		" to " + strconv.Itoa(settings.MaxUserTurnsPer10Min) + " (default " + strconv.Itoa(settings.DefaultUserTurnsPer10Min) +
		"). Past it the member gets one “Try again in N s” reply, then silence until the window frees. Kept in memory: a restart forgets it."
	HintAssistantUserDailyTokens = "Prompt and completion tokens one member may use in one guild per UTC day, " + thousands(settings.MinDailyTokens) +
		" to " + thousands(settings.MaxDailyTokens) + " (default " + thousands(settings.DefaultUserDailyTokens) + ")."
	HintAssistantGuildDailyTokens = "Tokens one guild may use per UTC day, " + thousands(settings.MinDailyTokens) + " to " +
		thousands(settings.MaxDailyTokens) + " (default " + thousands(settings.DefaultGuildDailyTokens) +
		"); a guild's own assistant.daily_tokens (its page under Guilds) overrides it."
	HintAssistantMonthlyTokens     = "Tokens of every guild and direct message together per UTC month; 0 turns the cap off (the default)."
	HintAssistantLimitsExemptStaff = "The bot owner is always exempt. With this on, staff are too."
)
