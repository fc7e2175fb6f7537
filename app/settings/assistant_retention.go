package settings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/kimiapp/kimi/app/store"
)

// SettingAssistantRetentionDays is the settings key of how many days after
// a conversation's last activity its transcript is deleted.
const SettingAssistantRetentionDays = "assistant.retention_days"

// AuditActionAssistantRetention is the audit action of a save of the
// transcript retention.
const AuditActionAssistantRetention = "assistant.retention"

// FieldAssistantRetentionDays is the retention form's field (and its
// Error.Fields key).
const FieldAssistantRetentionDays = "retention_days"

// Bounds and default of the transcript retention, in days; 0 keeps the
// transcripts for ever.
const (
	DefaultRetentionDays = 30
	MinRetentionDays     = 0
	MaxRetentionDays     = 3650
)

// AssistantRetentionUpdate is a submitted retention: the days after a
// conversation's last activity its transcript is kept (0: for ever).
type AssistantRetentionUpdate struct {
	Days int
}

// Validate checks u as SaveAssistantRetention does, without storing it:
// nil, or a *Error naming the field.
func (u AssistantRetentionUpdate) Validate() error {
	if u.Days < MinRetentionDays || u.Days > MaxRetentionDays {
		return &Error{Fields: map[string]string{FieldAssistantRetentionDays: fmt.Sprintf(
			"Enter the days a transcript is kept after its conversation's last activity, from %d (for ever) to %d (default %d).",
			MinRetentionDays, MaxRetentionDays, DefaultRetentionDays)}}
	}
	return nil
}

// LoadAssistantRetention reads the stored retention in days; none stored,
// or a value that does not parse or is out of bounds, is
// DefaultRetentionDays.
func LoadAssistantRetention(ctx context.Context, st Store) (int, error) {
	days, err := readRetention(ctx, st.Reader())
	if err != nil {
		return 0, fmt.Errorf("settings: load assistant retention: %w", err)
	}
	return days, nil
}

func readRetention(ctx context.Context, q querier) (int, error) {
	rows, err := q.QueryContext(ctx, `SELECT value FROM kimi_settings WHERE key = ?`, SettingAssistantRetentionDays)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	days := DefaultRetentionDays
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return 0, err
		}
		if n, err := strconv.Atoi(v); err == nil && n >= MinRetentionDays && n <= MaxRetentionDays {
			days = n
		}
	}
	return days, rows.Err()
}

// SaveAssistantRetention validates u and stores it with an
// AuditActionAssistantRetention row in one write transaction. Invalid
// input returns a *Error and changes nothing.
func SaveAssistantRetention(ctx context.Context, st Store, u AssistantRetentionUpdate, who Actor) error {
	if err := u.Validate(); err != nil {
		return err
	}
	err := st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readRetention(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		if err := writeSettingsTx(ctx, tx, []settingWrite{{SettingAssistantRetentionDays, strconv.Itoa(u.Days), false}}); err != nil {
			return err
		}
		detail := "saved, nothing changed"
		if cur != u.Days {
			detail = fmt.Sprintf("transcript retention %s (was %s)", RetentionLabel(u.Days), RetentionLabel(cur))
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionAssistantRetention, Target: "assistant", Detail: detail, IP: who.IP})
	})
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return err
		}
		return fmt.Errorf("settings: save assistant retention: %w", err)
	}
	return nil
}

// RetentionLabel says a retention in words: "30 days", "1 day" or "for
// ever" for 0.
func RetentionLabel(days int) string {
	switch days {
	case 0:
		return "for ever"
	case 1:
		return "1 day"
	}
	return strconv.Itoa(days) + " days"
}
