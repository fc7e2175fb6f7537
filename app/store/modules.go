package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
)

// This file holds what the module storage port (app/modstore) needs of the
// store: extra read-only pools whose connections a hook sets up (an
// authorizer), the mark a module write transaction puts on its context, and
// the schema check's allowance for module tables.

// ErrNestedWrite reports a write started with the context of a running
// module write transaction: it would wait for the single writer that
// transaction holds, forever.
var ErrNestedWrite = errors.New("store: write started inside a module's write transaction")

// writeMarkKey marks a context as a module write transaction's.
type writeMarkKey struct{}

// MarkWrite returns ctx marked as the context of module's running write
// transaction: Write (and every writing port built on it) refuses it with
// ErrNestedWrite instead of deadlocking the single writer.
func MarkWrite(ctx context.Context, module string) context.Context {
	return context.WithValue(ctx, writeMarkKey{}, module)
}

// WriteMark reports the module whose write transaction ctx belongs to.
func WriteMark(ctx context.Context) (module string, ok bool) {
	module, ok = ctx.Value(writeMarkKey{}).(string)
	return module, ok
}

// OpenReadPool opens a further read-only (query_only) pool of at most conns
// connections on the database, separate from Reader, so a caller that
// holds its connections cannot starve the store's own readers. setup, when
// not nil, runs on every new connection before database/sql uses it (for
// example to install an authorizer through sqlite.AuthorizerRegisterer);
// an error closes that connection and fails the operation that opened it.
func (s *Store) OpenReadPool(ctx context.Context, conns int, setup func(driver.Conn) error) (*sql.DB, error) {
	if s.closed.Load() {
		return nil, errors.New("store: open read pool: store closed")
	}
	base, err := sqlite.NewConnector(DSN(s.path, true))
	if err != nil {
		return nil, fmt.Errorf("store: open read pool: %w", err)
	}
	db := sql.OpenDB(hookConnector{Connector: base, setup: setup})
	db.SetMaxOpenConns(max(conns, 1))
	db.SetMaxIdleConns(max(conns, 1))
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open read pool: %w", err)
	}
	return db, nil
}

// OpenRawPool opens a pool of conns read-write connections on the
// database, unconfined and separate from the store's own single writer,
// for a module that declared RawStorage: closing it or changing its limits
// cannot touch the store's pools. Its writes still serialize with every
// other write on SQLite's database lock (busy_timeout 10 s, BEGIN
// IMMEDIATE), outside the store's writer queue: a transaction held open on
// it holds every other write back. The caller closes it.
func (s *Store) OpenRawPool(ctx context.Context, conns int) (*sql.DB, error) {
	if s.closed.Load() {
		return nil, errors.New("store: open raw pool: store closed")
	}
	db, err := sql.Open("sqlite", DSN(s.path, false))
	if err != nil {
		return nil, fmt.Errorf("store: open raw pool: %w", err)
	}
	db.SetMaxOpenConns(max(conns, 1))
	db.SetMaxIdleConns(max(conns, 1))
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open raw pool: %w", err)
	}
	return db, nil
}

// hookConnector runs setup on each connection it opens and hands out the
// driver's own connection (no wrapper hides its optional interfaces).
type hookConnector struct {
	driver.Connector
	setup func(driver.Conn) error
}

// Connect implements driver.Connector.
func (c hookConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil || c.setup == nil {
		return conn, err
	}
	if err := c.setup(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("store: set up connection: %w", err)
	}
	return conn, nil
}

var _ driver.Connector = hookConnector{}

// moduleObject reports a schema object a module's migrations may have
// created: a table, index, trigger or view named `<prefix>_<name>` whose
// table is also a module's. Nothing named with the reserved prefix (or
// SQLite's own sqlite_) qualifies, nor anything on a core table: a crafted
// trigger on kimi_sessions is refused whatever its name.
func moduleObject(o SchemaObject) bool {
	named := func(n string) bool {
		lower := strings.ToLower(n)
		return strings.Contains(n, "_") &&
			!strings.HasPrefix(lower, ReservedTablePrefix+"_") &&
			!strings.HasPrefix(lower, "sqlite_")
	}
	switch o.Type {
	case "table", "index":
		return named(o.Name) && named(o.Table)
	case "trigger", "view":
		// A trigger's body or a view's query runs with the rights of
		// whoever fires or reads it (the core too): one that names a core
		// object is refused whatever it is called.
		return named(o.Name) && named(o.Table) && !namesReserved(o.SQL)
	}
	return false
}

// namesReserved reports whether sql names an object with the reserved
// prefix: any identifier — bare, "double-quoted", `backticked`,
// [bracketed], or a 'string' (SQLite takes a string where a name is
// expected) — that starts with "kimi_", case-insensitively; comments are
// skipped, so they cannot hide or fake one.
func namesReserved(sql string) bool {
	reserved := func(tok string) bool {
		return strings.HasPrefix(strings.ToLower(tok), ReservedTablePrefix+"_")
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return false
			}
			i += end + 4
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			var tok strings.Builder
			i++
			for i < len(sql) {
				if sql[i] == closer {
					if closer != ']' && i+1 < len(sql) && sql[i+1] == closer {
						tok.WriteByte(closer) // a doubled quote
						i += 2
						continue
					}
					break
				}
				tok.WriteByte(sql[i])
				i++
			}
			i++ // the closing quote
			if reserved(tok.String()) {
				return true
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			start := i
			for i < len(sql) && (sql[i] == '_' || sql[i] == '$' || sql[i] >= 'a' && sql[i] <= 'z' || sql[i] >= 'A' && sql[i] <= 'Z' || sql[i] >= '0' && sql[i] <= '9' || sql[i] >= 0x80) {
				i++
			}
			if reserved(sql[start:i]) {
				return true
			}
		default:
			i++
		}
	}
	return false
}
