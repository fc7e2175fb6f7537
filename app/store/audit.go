package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Audit field bounds: a row is a record, not a dump.
const (
	auditFieldMax  = 200
	auditDetailMax = 2000
	// AuditPageMax bounds ListAudit's page size.
	AuditPageMax = 200
)

// AuditEntry is one audit-log row: who did what to which thing, when, from where.
type AuditEntry struct {
	ID     int64
	At     time.Time
	Actor  string // the admin username, "system", "cli" or a module name
	Action string // a dotted key such as "auth.login" or "settings.password"
	Target string // what was acted on, if anything
	Detail string // a short human-readable detail; never a secret
	IP     string // the client address for HTTP actions
}

// auditAddressKey is the context key of WithAuditAddress.
type auditAddressKey struct{}

// WithAuditAddress returns ctx carrying the client address of the request
// it serves: an audit row written under it without an IP records ip, so no
// action taken for a request loses where it came from.
func WithAuditAddress(ctx context.Context, ip string) context.Context {
	if ip == "" {
		return ctx
	}
	return context.WithValue(ctx, auditAddressKey{}, ip)
}

// auditAddress is the client address WithAuditAddress put in ctx ("" none).
func auditAddress(ctx context.Context) string {
	ip, _ := ctx.Value(auditAddressKey{}).(string)
	return ip
}

// Audit records e in its own transaction. A zero At means now; an empty IP
// the request's address (WithAuditAddress).
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	return s.Write(ctx, func(tx *sql.Tx) error { return AuditTx(ctx, tx, e) })
}

// AuditTx records e inside the caller's write transaction, so the audit row
// commits or rolls back with the change it describes.
func AuditTx(ctx context.Context, tx *sql.Tx, e AuditEntry) error {
	if strings.TrimSpace(e.Actor) == "" || strings.TrimSpace(e.Action) == "" {
		return errors.New("store: audit: actor and action are required")
	}
	at := e.At
	if at.IsZero() {
		at = time.Now()
	}
	if e.IP == "" {
		e.IP = auditAddress(ctx)
	}
	_, err := tx.ExecContext(ctx,
		`INSERT INTO kimi_audit_log (at_ms, actor, action, target, detail, ip) VALUES (?, ?, ?, ?, ?, ?)`,
		at.UnixMilli(), clip(e.Actor, auditFieldMax), clip(e.Action, auditFieldMax),
		clip(e.Target, auditFieldMax), clip(e.Detail, auditDetailMax), clip(e.IP, auditFieldMax))
	if err != nil {
		return fmt.Errorf("store: audit %s: %w", e.Action, err)
	}
	return nil
}

// AuditFilter selects audit rows. Empty fields match everything.
type AuditFilter struct {
	Actor  string // exact actor (case-insensitive)
	Action string // exact action, or a prefix ending in "." such as "auth."
	Query  string // substring of target or detail
	Before int64  // return rows with id < Before; 0 starts at the newest
	Limit  int    // page size, default 50, at most AuditPageMax
}

// ListAudit returns one page of audit rows, newest first, and the cursor for
// the next page (0 when this is the last).
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, int64, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, AuditPageMax)
	q, args := auditQuery(f, limit+1)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var ms int64
		if err := rows.Scan(&e.ID, &ms, &e.Actor, &e.Action, &e.Target, &e.Detail, &e.IP); err != nil {
			return nil, 0, fmt.Errorf("store: list audit: %w", err)
		}
		e.At = time.UnixMilli(ms).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: list audit: %w", err)
	}
	var next int64
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// auditActionsQuery lists the distinct actions by hopping through the
// kimi_audit_log_action index from one action to the next greater one, so it
// costs one index seek per distinct action. SELECT DISTINCT scanned the
// whole index: every audit page view grew with the log (about 30 ms at 200k
// rows, which a failed-login flood writes quickly).
const auditActionsQuery = `
	WITH RECURSIVE next(action) AS (
		SELECT min(action) FROM kimi_audit_log
		UNION ALL
		SELECT (SELECT min(action) FROM kimi_audit_log WHERE action > next.action) FROM next WHERE next.action IS NOT NULL
	)
	SELECT action FROM next WHERE action IS NOT NULL`

// auditQuery is ListAudit's statement for f, newest first, at most limit
// rows. An actor or exact action is answered from its (column, id) index
// in id order (the actor compares with kimi_audit_log_actor's NOCASE collation).
// An action prefix such as "auth." deliberately is not: a prefix spans
// several actions, so the index would return every match for sorting,
// while walking ids downwards stops after one page of a common prefix.
func auditQuery(f AuditFilter, limit int) (string, []any) {
	var where []string
	var args []any
	if f.Before > 0 {
		where = append(where, "id < ?")
		args = append(args, f.Before)
	}
	if f.Actor != "" {
		where = append(where, "actor = ? COLLATE NOCASE")
		args = append(args, f.Actor)
	}
	if f.Action != "" {
		if strings.HasSuffix(f.Action, ".") {
			where = append(where, "substr(action, 1, ?) = ?")
			args = append(args, len(f.Action), f.Action)
		} else {
			where = append(where, "action = ?")
			args = append(args, f.Action)
		}
	}
	if f.Query != "" {
		where = append(where, "(instr(lower(target), lower(?)) > 0 OR instr(lower(detail), lower(?)) > 0)")
		args = append(args, f.Query, f.Query)
	}
	q := `SELECT id, at_ms, actor, action, target, detail, ip FROM kimi_audit_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " ORDER BY id DESC LIMIT ?", append(args, limit)
}

// AuditActions returns the distinct recorded actions, sorted, for filters.
func (s *Store) AuditActions(ctx context.Context) ([]string, error) {
	rows, err := s.reader.QueryContext(ctx, auditActionsQuery)
	if err != nil {
		return nil, fmt.Errorf("store: audit actions: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("store: audit actions: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: audit actions: %w", err)
	}
	return out, nil
}

// clip bounds s to n bytes without splitting a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
