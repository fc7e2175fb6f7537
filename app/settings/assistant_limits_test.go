package settings

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/store"
)

func validLimits() AssistantLimitsUpdate {
	return AssistantLimitsUpdate{UserTurnsPer10Min: "10", UserDailyTokens: "100000", GuildDailyTokens: "1000000", MonthlyTokens: "0"}
}

// TestAssistantLimitsRefusals: each limit's bounds, with its message, and
// nothing stored.
func TestAssistantLimitsRefusals(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*AssistantLimitsUpdate)
		field string
		msg   string
	}{
		{"turns zero", func(u *AssistantLimitsUpdate) { u.UserTurnsPer10Min = "0" }, FieldAssistantUserTurnsPer10Min, "from 1 to 10000"},
		{"turns text", func(u *AssistantLimitsUpdate) { u.UserTurnsPer10Min = "ten" }, FieldAssistantUserTurnsPer10Min, "ten minutes"},
		{"user tokens low", func(u *AssistantLimitsUpdate) { u.UserDailyTokens = "999" }, FieldAssistantUserDailyTokens, "a member's tokens a day"},
		{"guild tokens high", func(u *AssistantLimitsUpdate) { u.GuildDailyTokens = "1000000001" }, FieldAssistantGuildDailyTokens, "a guild's tokens a day"},
		{"monthly negative", func(u *AssistantLimitsUpdate) { u.MonthlyTokens = "-1" }, FieldAssistantMonthlyTokens, "0 (no cap)"},
		{"monthly tiny", func(u *AssistantLimitsUpdate) { u.MonthlyTokens = "5" }, FieldAssistantMonthlyTokens, "0 (no cap)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openSettingsStore(t)
			u := validLimits()
			tt.edit(&u)
			_, err := SaveAssistantLimits(context.Background(), st, u, Actor{Name: "admin"})
			var se *Error
			if !errors.As(err, &se) || len(se.Fields) != 1 || !strings.Contains(se.Fields[tt.field], tt.msg) {
				t.Fatalf("err = %v, want %s: %q", err, tt.field, tt.msg)
			}
			if got, _ := LoadAssistantLimits(context.Background(), st); !reflect.DeepEqual(got, DefaultAssistantLimits()) {
				t.Fatalf("stored after a refusal: %+v", got)
			}
		})
	}
}

// TestAssistantLimitsSave: a save round-trips, is audited with what
// changed, and a stored value out of bounds reads as the default.
func TestAssistantLimitsSave(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)
	if got, err := LoadAssistantLimits(ctx, st); err != nil || got.UserTurnsPer10Min != 10 || got.UserDailyTokens != 100000 ||
		got.GuildDailyTokens != 1000000 || got.MonthlyTokens != 0 || got.ExemptStaff {
		t.Fatalf("defaults = %+v, %v", got, err)
	}
	u := AssistantLimitsUpdate{UserTurnsPer10Min: "3", UserDailyTokens: "5,000", GuildDailyTokens: "20000", MonthlyTokens: "900000", ExemptStaff: true}
	want := AssistantLimits{UserTurnsPer10Min: 3, UserDailyTokens: 5000, GuildDailyTokens: 20000, MonthlyTokens: 900000, ExemptStaff: true}
	if got, err := SaveAssistantLimits(ctx, st, u, Actor{Name: "admin"}); err != nil || got != want {
		t.Fatalf("save = %+v, %v", got, err)
	}
	if got, err := LoadAssistantLimits(ctx, st); err != nil || got != want {
		t.Fatalf("load = %+v, %v", got, err)
	}
	rows, _, err := st.ListAudit(ctx, store.AuditFilter{Action: AuditActionAssistantLimits, Limit: store.AuditPageMax})
	if err != nil || len(rows) != 1 || !strings.Contains(rows[0].Detail, "member turns per 10 min 3") || !strings.Contains(rows[0].Detail, "staff exempt true") {
		t.Fatalf("audit = %+v, %v", rows, err)
	}
	if err := st.SetSetting(ctx, SettingAssistantUserDailyTokens, "12"); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadAssistantLimits(ctx, st); got.UserDailyTokens != DefaultUserDailyTokens {
		t.Fatalf("an out-of-bounds stored value reads as %d", got.UserDailyTokens)
	}
}
