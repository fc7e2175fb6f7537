package settings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/kimiapp/kimi/app/store"
)

// SettingAssistantShowTranscripts is the key of Show transcripts: whether
// the admin's conversation pages show message text and tool-call excerpts
// ("on"), or only the structure of each turn (anything else; the default).
const SettingAssistantShowTranscripts = "assistant.show_transcripts"

// AuditActionAssistantTranscripts is the audit action of turning Show
// transcripts on or off; its detail is "on" or "off".
const AuditActionAssistantTranscripts = "assistant.transcripts"

// LoadAssistantShowTranscripts reads Show transcripts; nothing stored is
// off.
func LoadAssistantShowTranscripts(ctx context.Context, st Store) (bool, error) {
	var v string
	err := st.Reader().QueryRowContext(ctx, `SELECT value FROM kimi_settings WHERE key = ?`, SettingAssistantShowTranscripts).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("settings: load show transcripts: %w", err)
	}
	return v == "on", nil
}

// SaveAssistantShowTranscripts turns Show transcripts on or off, with an
// audit row in the same transaction.
func SaveAssistantShowTranscripts(ctx context.Context, st Store, on bool, who Actor) error {
	v := "off"
	if on {
		v = "on"
	}
	err := st.Write(ctx, func(tx *sql.Tx) error {
		if err := store.SetSettingTx(ctx, tx, SettingAssistantShowTranscripts, v); err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionAssistantTranscripts,
			Target: "assistant", Detail: v, IP: who.IP})
	})
	if err != nil {
		return fmt.Errorf("settings: save show transcripts: %w", err)
	}
	return nil
}
