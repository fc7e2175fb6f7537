package settings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/kimiapp/kimi/app/store"
)

// SettingChecklistDismissed is set once an admin dismissed the overview's
// first-run checklist.
const SettingChecklistDismissed = "admin.checklist.dismissed"

// AuditActionChecklistDismiss is the audit action of dismissing the
// first-run checklist.
const AuditActionChecklistDismiss = "overview.checklist.dismiss"

// ChecklistDismissed reports whether the first-run checklist was dismissed.
func ChecklistDismissed(ctx context.Context, st Store) (bool, error) {
	var v string
	err := st.Reader().QueryRowContext(ctx, `SELECT value FROM kimi_settings WHERE key = ?`, SettingChecklistDismissed).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("settings: read the checklist's dismissal: %w", err)
	}
	return v == "true", nil
}

// DismissChecklist hides the first-run checklist for good, with an
// AuditActionChecklistDismiss row naming the steps still open (pending).
func DismissChecklist(ctx context.Context, st Store, pending string, who Actor) error {
	err := st.Write(ctx, func(tx *sql.Tx) error {
		if err := store.SetSettingTx(ctx, tx, SettingChecklistDismissed, "true"); err != nil {
			return err
		}
		detail := "every step done"
		if pending != "" {
			detail = "dismissed with steps open: " + pending
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionChecklistDismiss, Target: "overview", Detail: detail, IP: who.IP})
	})
	if err != nil {
		return fmt.Errorf("settings: dismiss the checklist: %w", err)
	}
	return nil
}
