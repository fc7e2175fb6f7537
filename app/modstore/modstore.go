// Package modstore is the modules' storage port (sdk.Storage): each module
// reads through a reader pool of its own and writes on the store's single
// writer, confined by SQLite's authorizer to its own `<module>_<table>`
// tables unless it declared RawStorage; its named migrations are applied
// with a ledger (name and position immutable, each step atomic with its
// ledger row, a newer ledger refused).
//
// Confinement: the authorizer (modernc.org/sqlite's RegisterAuthorizer, one
// per physical connection) is installed on every connection of the module's
// reader pool when it opens, and on the shared writer connection for the
// span of the module's transaction only (after BEGIN, removed before
// COMMIT, so core writes never see it; a connection whose authorizer cannot
// be removed is discarded). Under it a module may read, write, create and
// drop only objects named with its prefix, may not BEGIN, COMMIT or ROLLBACK,
// ATTACH, read sqlite_schema or run any PRAGMA but the introspection of its
// own tables. Triggers and views are checked statement by statement, so a
// module's view over kimi_sessions is refused when it is read. Raw (the
// escape hatch of RawStorage) is an unconfined pool of the port's own.
//
// A module's write transaction is held at most Options.MaxWriteHold: then
// its context is cancelled (which interrupts a statement running under it),
// the transaction is rolled back, the writer released, and WriteTx returns
// ErrWriteHeldTooLong. Go cannot interrupt a statement the module runs with
// a context not derived from fn's; the rollback then waits for it.
package modstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// ErrClosed is returned by a Port (or Manager) used after Close.
var ErrClosed = errors.New("modstore: storage port closed")

// ErrWriteHeldTooLong reports a module write transaction rolled back after
// Options.MaxWriteHold.
var ErrWriteHeldTooLong = errors.New("modstore: write transaction held too long")

// Options configures a Manager.
type Options struct {
	Logger *slog.Logger
	// ReadConns is the size of each module's reader pool (default 2).
	ReadConns int
	// MaxWriteHold rolls back a module write transaction held longer
	// (default 5 s).
	MaxWriteHold time.Duration
	// MaxMigrateStep rolls back one migration step (one Up and its
	// ledger row) held longer, releasing the writer (default 60 s).
	// Migrate's ctx deadline bounds the steps too.
	MaxMigrateStep time.Duration
}

// Manager hands out module storage ports over one store.
type Manager struct {
	st   *store.Store
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	closed bool
	ports  map[*Port]struct{}

	// names are the database's tables and views (lower-cased) as of the
	// last Open or Migrate: the authorizer refuses a FROM without columns
	// (`SELECT count(*) FROM t`, which SQLite presents without a column,
	// exactly like a CTE's name) on any of them that is not the module's.
	names atomic.Pointer[map[string]bool]
}

// refreshNames rereads the schema's table and view names.
func (m *Manager) refreshNames(ctx context.Context) error {
	rows, err := m.st.Reader().QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')`)
	if err != nil {
		return fmt.Errorf("modstore: read table names: %w", err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return fmt.Errorf("modstore: read table names: %w", err)
		}
		names[strings.ToLower(n)] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("modstore: read table names: %w", err)
	}
	m.names.Store(&names)
	return nil
}

// existing reports whether name is a table or view of the last snapshot.
func (m *Manager) existing(name string) bool {
	names := m.names.Load()
	return names != nil && (*names)[strings.ToLower(name)]
}

// New returns a Manager over st (already migrated).
func New(st *store.Store, opts Options) (*Manager, error) {
	if st == nil {
		return nil, errors.New("modstore: new: nil store")
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 2
	}
	if opts.MaxWriteHold <= 0 {
		opts.MaxWriteHold = 5 * time.Second
	}
	if opts.MaxMigrateStep <= 0 {
		opts.MaxMigrateStep = 60 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Manager{st: st, opts: opts, log: logger, ports: map[*Port]struct{}{}}, nil
}

// Open returns module's storage port (confined to its tables unless
// perms.RawStorage). Close it when the module closes.
func (m *Manager) Open(ctx context.Context, module string, perms sdk.Permissions) (*Port, error) {
	if err := hostkit.ValidateModuleName(module); err != nil {
		return nil, err
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if err := m.refreshNames(ctx); err != nil {
		return nil, err
	}
	prefix := hostkit.TablePrefix(module)
	policy := confined(prefix, false, m.existing, nil)
	reader, err := m.st.OpenReadPool(ctx, m.opts.ReadConns, func(c driver.Conn) error {
		r, ok := c.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("modstore: the SQLite driver offers no authorizer")
		}
		return r.RegisterAuthorizer(policy)
	})
	if err != nil {
		return nil, fmt.Errorf("modstore: open %s: %w", module, err)
	}
	var raw *sql.DB
	if perms.RawStorage {
		if raw, err = m.st.OpenRawPool(ctx, 1); err != nil {
			reader.Close()
			return nil, fmt.Errorf("modstore: open %s: %w", module, err)
		}
	}
	p := &Port{m: m, module: module, prefix: prefix, perms: perms, reader: reader, raw: raw,
		log: m.log.With("module", module)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		reader.Close()
		if raw != nil {
			raw.Close()
		}
		return nil, ErrClosed
	}
	m.ports[p] = struct{}{}
	return p, nil
}

// Close closes every open port's reader pool.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	ports := make([]*Port, 0, len(m.ports))
	for p := range m.ports {
		ports = append(ports, p)
	}
	m.mu.Unlock()
	var errs []error
	for _, p := range ports {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
