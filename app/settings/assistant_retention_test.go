package settings

import (
	"context"
	"errors"
	"testing"
)

// TestAssistantRetention: the retention defaults to 30 days, accepts 0 to
// 3650 (0 keeps for ever), refuses what is outside without storing it, and
// each save writes an audit row naming the change.
func TestAssistantRetention(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)
	if got, err := LoadAssistantRetention(ctx, st); err != nil || got != DefaultRetentionDays {
		t.Fatalf("empty store: %d, %v; want %d", got, err, DefaultRetentionDays)
	}
	tests := []struct {
		days    int
		ok      bool
		want    int
		details string
	}{
		{7, true, 7, "transcript retention 7 days (was 30 days)"},
		{0, true, 0, "transcript retention for ever (was 7 days)"},
		{3650, true, 3650, "transcript retention 3650 days (was for ever)"},
		{3650, true, 3650, "saved, nothing changed"},
		{-1, false, 3650, ""},
		{3651, false, 3650, ""},
	}
	for _, tt := range tests {
		err := SaveAssistantRetention(ctx, st, AssistantRetentionUpdate{Days: tt.days}, Actor{Name: "ann", IP: "192.0.2.1"})
		var se *Error
		switch {
		case tt.ok && err != nil:
			t.Fatalf("save %d: %v", tt.days, err)
		case !tt.ok && (!errors.As(err, &se) || se.Fields[FieldAssistantRetentionDays] == ""):
			t.Fatalf("save %d: %v, want a field error", tt.days, err)
		}
		if v := (AssistantRetentionUpdate{Days: tt.days}).Validate(); (v == nil) != tt.ok {
			t.Errorf("Validate(%d) = %v", tt.days, v)
		}
		if got, err := LoadAssistantRetention(ctx, st); err != nil || got != tt.want {
			t.Errorf("after save %d: %d, %v; want %d", tt.days, got, err, tt.want)
		}
		if tt.ok {
			var actor, detail string
			if err := st.Reader().QueryRowContext(ctx, `SELECT actor, detail FROM kimi_audit_log WHERE action = ? ORDER BY id DESC LIMIT 1`,
				AuditActionAssistantRetention).Scan(&actor, &detail); err != nil || actor != "ann" || detail != tt.details {
				t.Errorf("save %d audited %q %q (%v), want ann %q", tt.days, actor, detail, err, tt.details)
			}
		}
	}
	// A stored value out of bounds reads as the default.
	if _, err := st.Writer().ExecContext(ctx, `UPDATE kimi_settings SET value = '99999' WHERE key = ?`, SettingAssistantRetentionDays); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadAssistantRetention(ctx, st); got != DefaultRetentionDays {
		t.Errorf("stored 99999 reads as %d, want the default", got)
	}
}
