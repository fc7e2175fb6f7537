package guildcfg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// DB is what the Service needs of the store: write transactions on the
// single writer and the read-only pool. *store.Store implements it.
type DB interface {
	Write(ctx context.Context, fn func(tx *sql.Tx) error) error
	Reader() *sql.DB
}

// querier is a *sql.DB or *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// storedDocument is one documents row.
type storedDocument struct {
	target    string
	kind      Kind
	content   string
	revision  string
	updatedAt time.Time
	updatedBy string
}

func readDocument(ctx context.Context, q querier, target string) (storedDocument, bool, error) {
	var d storedDocument
	var ms int64
	err := q.QueryRowContext(ctx,
		`SELECT target, kind, content, revision, updated_ms, updated_by FROM kimi_documents WHERE target = ?`, target).
		Scan(&d.target, &d.kind, &d.content, &d.revision, &ms, &d.updatedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return storedDocument{}, false, nil
	}
	if err != nil {
		return storedDocument{}, false, fmt.Errorf("guildcfg: read document %s: %w", target, err)
	}
	d.updatedAt = time.UnixMilli(ms).UTC()
	return d, true, nil
}

func readAllDocuments(ctx context.Context, q querier) ([]storedDocument, error) {
	rows, err := q.QueryContext(ctx,
		`SELECT target, kind, content, revision, updated_ms, updated_by FROM kimi_documents ORDER BY target`)
	if err != nil {
		return nil, fmt.Errorf("guildcfg: read documents: %w", err)
	}
	defer rows.Close()
	var out []storedDocument
	for rows.Next() {
		var d storedDocument
		var ms int64
		if err := rows.Scan(&d.target, &d.kind, &d.content, &d.revision, &ms, &d.updatedBy); err != nil {
			return nil, fmt.Errorf("guildcfg: read documents: %w", err)
		}
		d.updatedAt = time.UnixMilli(ms).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("guildcfg: read documents: %w", err)
	}
	return out, nil
}

// historyRow is one revisions row.
type historyRow struct {
	id             int64
	target         string
	at             time.Time
	actorKind      ActorKind
	actor          string
	action         string
	revertedFrom   int64
	beforeRevision string
	afterRevision  string
	content        string
}

const historyColumns = `id, target, at_ms, actor_kind, actor, action, coalesce(reverted_from, 0), before_revision, after_revision, content`

func scanHistory(sc interface{ Scan(...any) error }) (historyRow, error) {
	var h historyRow
	var ms int64
	err := sc.Scan(&h.id, &h.target, &ms, &h.actorKind, &h.actor, &h.action, &h.revertedFrom, &h.beforeRevision, &h.afterRevision, &h.content)
	h.at = time.UnixMilli(ms).UTC()
	return h, err
}

func readHistoryRow(ctx context.Context, q querier, target string, id int64) (historyRow, error) {
	h, err := scanHistory(q.QueryRowContext(ctx,
		`SELECT `+historyColumns+` FROM kimi_revisions WHERE id = ? AND target = ?`, id, target))
	if errors.Is(err, sql.ErrNoRows) {
		return historyRow{}, ErrUnknownHistory
	}
	if err != nil {
		return historyRow{}, fmt.Errorf("guildcfg: read history %d: %w", id, err)
	}
	return h, nil
}

// readHistory returns up to limit rows of target older than before (0:
// the newest), newest first.
func readHistory(ctx context.Context, q querier, target string, before int64, limit int) ([]historyRow, error) {
	query := `SELECT ` + historyColumns + ` FROM kimi_revisions WHERE target = ?`
	args := []any{target}
	if before > 0 {
		query += ` AND id < ?`
		args = append(args, before)
	}
	query += ` ORDER BY id DESC LIMIT ?`
	rows, err := q.QueryContext(ctx, query, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("guildcfg: read history of %s: %w", target, err)
	}
	defer rows.Close()
	var out []historyRow
	for rows.Next() {
		h, err := scanHistory(rows)
		if err != nil {
			return nil, fmt.Errorf("guildcfg: read history of %s: %w", target, err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("guildcfg: read history of %s: %w", target, err)
	}
	return out, nil
}

func writeDocument(ctx context.Context, tx *sql.Tx, d storedDocument) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO kimi_documents (target, kind, content, revision, updated_ms, updated_by) VALUES (?, ?, ?, ?, ?, ?)
		 ON CONFLICT (target) DO UPDATE SET content = excluded.content, revision = excluded.revision,
		   updated_ms = excluded.updated_ms, updated_by = excluded.updated_by`,
		d.target, string(d.kind), d.content, d.revision, d.updatedAt.UnixMilli(), d.updatedBy)
	if err != nil {
		return fmt.Errorf("guildcfg: write document %s: %w", d.target, err)
	}
	return nil
}

func insertHistory(ctx context.Context, tx *sql.Tx, h historyRow) (int64, error) {
	var revertedFrom any
	if h.revertedFrom > 0 {
		revertedFrom = h.revertedFrom
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO kimi_revisions (target, at_ms, actor_kind, actor, action, reverted_from, before_revision, after_revision, content)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		h.target, h.at.UnixMilli(), string(h.actorKind), h.actor, h.action, revertedFrom, h.beforeRevision, h.afterRevision, h.content)
	if err != nil {
		return 0, fmt.Errorf("guildcfg: write history of %s: %w", h.target, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("guildcfg: write history of %s: %w", h.target, err)
	}
	return id, nil
}
