package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Setting returns the value stored under key and whether it exists.
func (s *Store) Setting(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.reader.QueryRowContext(ctx, `SELECT value FROM kimi_settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: read setting %q: %w", key, err)
	}
	return v, true, nil
}

// SetSetting stores value under key, replacing any previous value.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	return s.Write(ctx, func(tx *sql.Tx) error { return SetSettingTx(ctx, tx, key, value) })
}

// SetSettingTx stores value under key inside the caller's write transaction,
// as an ordinary (not secret) setting that every backup carries.
func SetSettingTx(ctx context.Context, tx *sql.Tx, key, value string) error {
	return setSettingTx(ctx, tx, key, value, false)
}

// SetSecretSettingTx stores value under key inside the caller's write
// transaction and marks it secret (an API key, a token): a backup written
// with BackupOptions.WithoutSecrets leaves it out. A full backup still holds
// it in plain text.
func SetSecretSettingTx(ctx context.Context, tx *sql.Tx, key, value string) error {
	return setSettingTx(ctx, tx, key, value, true)
}

func setSettingTx(ctx context.Context, tx *sql.Tx, key, value string, secret bool) error {
	if key == "" {
		return errors.New("store: set setting: empty key")
	}
	_, err := tx.ExecContext(ctx,
		`INSERT INTO kimi_settings (key, value, updated_at, secret) VALUES (?, ?, ?, ?)
		 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, secret = excluded.secret`,
		key, value, time.Now().Unix(), secret)
	if err != nil {
		return fmt.Errorf("store: set setting %q: %w", key, err)
	}
	return nil
}

// DeleteSettingTx removes key inside the caller's write transaction.
func DeleteSettingTx(ctx context.Context, tx *sql.Tx, key string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_settings WHERE key = ?`, key); err != nil {
		return fmt.Errorf("store: delete setting %q: %w", key, err)
	}
	return nil
}
