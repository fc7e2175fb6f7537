package host

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/kimiapp/kimi/app/store"
)

// Audit actions of the host.
const (
	ActionModuleEnable  = "modules.enable"
	ActionModuleDisable = "modules.disable"
	ActionModuleRestart = "modules.restart"
	ActionSettingsSave  = "modules.settings"
)

// storedSelection reads the enabled modules in request order.
func (h *Host) storedSelection(ctx context.Context) ([]string, error) {
	if h.store == nil {
		return nil, nil
	}
	rows, err := h.store.Reader().QueryContext(ctx, `SELECT name FROM kimi_modules WHERE enabled = 1 ORDER BY position, name`)
	if err != nil {
		return nil, fmt.Errorf("host: read the module selection: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("host: read the module selection: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("host: read the module selection: %w", err)
	}
	return out, nil
}

// writeSelection stores a module's enabled flag with an audit row.
func (h *Host) writeSelection(ctx context.Context, name string, enabled bool, actor string) error {
	action := ActionModuleDisable
	if enabled {
		action = ActionModuleEnable
	}
	err := h.store.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO kimi_modules (name, enabled, position, updated_ms, updated_by)
			VALUES (?, ?, (SELECT coalesce(max(position), 0) + 1 FROM kimi_modules), ?, ?)
			ON CONFLICT (name) DO UPDATE SET
				enabled = excluded.enabled,
				position = CASE WHEN kimi_modules.enabled = excluded.enabled THEN kimi_modules.position ELSE excluded.position END,
				updated_ms = excluded.updated_ms, updated_by = excluded.updated_by`,
			name, enabled, h.now().UnixMilli(), actor)
		if err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: actor, Action: action, Target: name, Detail: "enabled=" + strconv.FormatBool(enabled)})
	})
	if err != nil {
		return fmt.Errorf("host: save the module selection: %w", err)
	}
	return nil
}

// ErrStarted is a change refused because the host already started.
var ErrStarted = errors.New("host: already started")

// SelectInstalled stores every installed module that has no place in the
// stored selection yet (never enabled nor disabled by anyone) as enabled,
// in the order installed, with an audit row each, and starts nothing: it
// is for a data directory's first start (demo mode), before Start reads
// the selection; after Start it is ErrStarted. It returns the modules it
// selected.
func (h *Host) SelectInstalled(ctx context.Context, actor string) ([]string, error) {
	h.op.Lock()
	defer h.op.Unlock()
	switch {
	case h.isClosed():
		return nil, fmt.Errorf("host: select the installed modules: %w", ErrClosed)
	case h.booted.Load():
		return nil, fmt.Errorf("host: select the installed modules: %w", ErrStarted)
	case h.store == nil:
		return nil, nil
	}
	rows, err := h.store.Reader().QueryContext(ctx, `SELECT name FROM kimi_modules`)
	if err != nil {
		return nil, fmt.Errorf("host: select the installed modules: %w", err)
	}
	known := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("host: select the installed modules: %w", err)
		}
		known[n] = true
	}
	err = errors.Join(rows.Err(), rows.Close())
	if err != nil {
		return nil, fmt.Errorf("host: select the installed modules: %w", err)
	}
	var out []string
	for _, n := range h.ordered {
		if known[n] {
			continue
		}
		known[n] = true // a duplicate spec is stored once
		if err := h.writeSelection(ctx, n, true, actor); err != nil {
			return out, err
		}
		out = append(out, n)
	}
	return out, nil
}
