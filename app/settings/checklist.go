package settings

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/kimiapp/kimi/app/internal/stmtcache"
	"github.com/kimiapp/kimi/app/store"
)

// SettingChecklistDismissed is set once an admin dismissed the overview's
// first-run checklist.
const SettingChecklistDismissed = "admin.checklist.dismissed"

// AuditActionChecklistDismiss is the audit action of dismissing the
// first-run checklist.
const AuditActionChecklistDismiss = "overview.checklist.dismiss"

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

// Checklist is what the overview's first-run checklist reads of the
// settings: whether it was dismissed, and the stored Discord token's
// presence and the privileged intents.
type Checklist struct {
	Dismissed, Token, Members, MessageContent bool
}

// ReadChecklist reads the checklist's settings in one statement, prepared
// once: the overview reads it on every request (parsed afresh, its two
// reads were half of the page's CPU).
func ReadChecklist(ctx context.Context, st Store) (Checklist, error) {
	stmt, err := stmtcache.OnPool(ctx, st.Reader(), `SELECT key, value FROM kimi_settings WHERE key IN (?, ?, ?, ?)`)
	if err != nil {
		return Checklist{}, fmt.Errorf("settings: read the checklist: %w", err)
	}
	rows, err := stmt.QueryContext(ctx, SettingChecklistDismissed, SettingDiscordToken, SettingDiscordMembers, SettingDiscordMessageContent)
	if err != nil {
		return Checklist{}, fmt.Errorf("settings: read the checklist: %w", err)
	}
	defer rows.Close()
	var c Checklist
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return Checklist{}, fmt.Errorf("settings: read the checklist: %w", err)
		}
		switch k {
		case SettingChecklistDismissed:
			c.Dismissed = v == "true"
		case SettingDiscordToken:
			c.Token = v != ""
		case SettingDiscordMembers:
			c.Members = v == "true"
		case SettingDiscordMessageContent:
			c.MessageContent = v == "true"
		}
	}
	if err := rows.Err(); err != nil {
		return Checklist{}, fmt.Errorf("settings: read the checklist: %w", err)
	}
	return c, nil
}
