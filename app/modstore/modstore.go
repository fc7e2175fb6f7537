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

// ledgerRow is one applied migration.
type ledgerRow struct {
	position int
	name     string
}

// Migrate applies spec's module's pending migrations in order, each in one
// write transaction with its ledger row, confined like the module's writes.
// It returns the names applied. A ledger that names a migration the module
// no longer has at that position, or more migrations than it has, is
// refused with a message naming the module and migration.
func (m *Manager) Migrate(ctx context.Context, module string, perms sdk.Permissions, migrations []sdk.Migration) ([]string, error) {
	if err := hostkit.ValidateModuleName(module); err != nil {
		return nil, err
	}
	if module, ok := store.WriteMark(ctx); ok {
		return nil, nestedError(module)
	}
	seen := map[string]bool{}
	for i, mg := range migrations {
		switch {
		case strings.TrimSpace(mg.Name) == "":
			return nil, contractf("module %s migration %d has an empty name", hostkit.Repr(module), i+1)
		case seen[mg.Name]:
			return nil, contractf("module %s declares migration %s twice", hostkit.Repr(module), hostkit.Repr(mg.Name))
		case mg.Up == nil:
			return nil, contractf("module %s migration %s has no Up function", hostkit.Repr(module), hostkit.Repr(mg.Name))
		}
		seen[mg.Name] = true
	}
	ledger, err := m.ledger(ctx, module)
	if err != nil {
		return nil, err
	}
	for i, row := range ledger {
		if row.position != i {
			return nil, contractf("module %s migration ledger has a gap at position %d", hostkit.Repr(module), i+1)
		}
		if i >= len(migrations) {
			return nil, contractf("module %s migration ledger lists %d migrations but the module declares %d (was it downgraded?); applied %s is unknown to this version",
				hostkit.Repr(module), len(ledger), len(migrations), hostkit.Repr(row.name))
		}
		if migrations[i].Name != row.name {
			return nil, contractf("module %s migration %d is %s but %s was applied at that position; migration names and order are immutable",
				hostkit.Repr(module), i+1, hostkit.Repr(migrations[i].Name), hostkit.Repr(row.name))
		}
	}
	if err := m.refreshNames(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = m.refreshNames(context.WithoutCancel(ctx)) }()
	var applied []string
	for i := len(ledger); i < len(migrations); i++ {
		mg := migrations[i]
		if err := m.applyStep(ctx, module, i, mg); err != nil {
			return applied, err
		}
		applied = append(applied, mg.Name)
		m.log.Info("applied module migration", "module", module, "migration", mg.Name)
	}
	return applied, nil
}

// ledger reads module's ledger rows in position order.
func (m *Manager) ledger(ctx context.Context, module string) ([]ledgerRow, error) {
	rows, err := m.st.Reader().QueryContext(ctx,
		`SELECT position, name FROM kimi_module_migrations WHERE module = ? ORDER BY position`, module)
	if err != nil {
		return nil, fmt.Errorf("modstore: read migration ledger of %s: %w", module, err)
	}
	defer rows.Close()
	var out []ledgerRow
	for rows.Next() {
		var r ledgerRow
		if err := rows.Scan(&r.position, &r.name); err != nil {
			return nil, fmt.Errorf("modstore: read migration ledger of %s: %w", module, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("modstore: read migration ledger of %s: %w", module, err)
	}
	return out, nil
}

// ErrMigrationTooLong reports a module migration step rolled back after
// Options.MaxMigrateStep (or the deadline of Migrate's ctx).
var ErrMigrationTooLong = errors.New("modstore: migration step took too long")

// applyStep runs one migration, confined, and writes its ledger row in the
// same transaction. The step is bounded by Options.MaxMigrateStep and by
// ctx: when either ends first the transaction is rolled back and the
// writer released at once, whether or not Up returns (its later statements
// fail with sql.ErrTxDone).
func (m *Manager) applyStep(ctx context.Context, module string, position int, mg sdk.Migration) error {
	stepCtx, cancel := context.WithTimeoutCause(ctx, m.opts.MaxMigrateStep, ErrMigrationTooLong)
	defer cancel()
	conn, err := m.st.Writer().Conn(stepCtx)
	if err != nil {
		return fmt.Errorf("modstore: migrate %s: %w", module, err)
	}
	defer conn.Close()
	// Not bound to stepCtx: database/sql would roll back on its own when
	// it ends, under the authorizer, which refuses any ROLLBACK but the
	// host's (hostRollback); the select below rolls back instead.
	tx, err := conn.BeginTx(context.WithoutCancel(stepCtx), nil)
	if err != nil {
		return fmt.Errorf("modstore: migrate %s: begin: %w", module, err)
	}
	var hostRollback atomic.Bool
	defer func() { hostRollback.Store(true); _ = tx.Rollback() }() // no-op after Commit
	if err := setAuthorizer(conn, confined(hostkit.TablePrefix(module), true, m.existing, &hostRollback)); err != nil {
		return fmt.Errorf("modstore: migrate %s: %w", module, err)
	}
	done := make(chan error, 1)
	upCtx := store.MarkWrite(stepCtx, module)
	go func() { done <- runStep(upCtx, mg, sdk.MigrationContext{Tx: tx, Module: module}) }()
	var stepErr error
	select {
	case stepErr = <-done:
	case <-stepCtx.Done():
		// Roll back now (this waits only for a statement running under
		// a ctx that is not stepCtx's) and release the writer below.
		hostRollback.Store(true)
		_ = tx.Rollback()
		why := context.Cause(stepCtx)
		if err := setAuthorizer(conn, nil); err != nil {
			why = errors.Join(why, err)
		}
		go func() {
			if late := <-done; late != nil {
				m.log.Warn("migration returned after it was rolled back", "module", module, "migration", mg.Name, "err", late)
			}
		}()
		if errors.Is(why, ErrMigrationTooLong) {
			return fmt.Errorf("modstore: module %s migration %s exceeded %s; rolled back: %w",
				hostkit.Repr(module), hostkit.Repr(mg.Name), m.opts.MaxMigrateStep, why)
		}
		return fmt.Errorf("modstore: module %s migration %s stopped; rolled back: %w",
			hostkit.Repr(module), hostkit.Repr(mg.Name), why)
	}
	if err := setAuthorizer(conn, nil); err != nil {
		return fmt.Errorf("modstore: migrate %s: %w", module, err)
	}
	if stepErr != nil {
		return fmt.Errorf("modstore: module %s migration %s failed: %w", hostkit.Repr(module), hostkit.Repr(mg.Name), stepErr)
	}
	if _, err := tx.ExecContext(stepCtx,
		`INSERT INTO kimi_module_migrations (module, position, name, applied_ms) VALUES (?, ?, ?, ?)`,
		module, position, mg.Name, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("modstore: migrate %s: ledger row for %s: %w", module, mg.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("modstore: migrate %s: commit %s: %w", module, mg.Name, err)
	}
	return nil
}

// runStep runs a migration's Up under recover.
func runStep(ctx context.Context, mg sdk.Migration, mc sdk.MigrationContext) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return mg.Up(ctx, mc)
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

// TableInfo describes one of a module's tables for the admin UI.
type TableInfo struct {
	Name string // physical name
	Rows int64
}

// WriteStats are a module's write wait and hold times.
type WriteStats struct {
	Writes             uint64
	WaitTotal, WaitMax time.Duration // waiting for the single writer
	HoldTotal, HoldMax time.Duration // inside the write transaction
	RolledBackOverlong uint64        // writes rolled back past MaxWriteHold
}

// Port is one module's storage.
type Port struct {
	m      *Manager
	module string
	prefix string
	perms  sdk.Permissions
	reader *sql.DB
	raw    *sql.DB // RawStorage's own unconfined pool (nil without it)
	log    *slog.Logger
	closed atomic.Bool

	statsMu sync.Mutex
	stats   WriteStats
}

var _ sdk.Storage = (*Port)(nil)

// Table implements sdk.Storage.
func (p *Port) Table(name string) string { return hostkit.MustTableName(p.module, name) }

// Reader implements sdk.Storage: the module's own read-only, confined pool.
func (p *Port) Reader() *sql.DB { return p.reader }

// WriteTx implements sdk.Storage. A WriteTx (or any writing port) called
// with the ctx of a running WriteTx fails at once with a contract error
// instead of deadlocking the single writer.
func (p *Port) WriteTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if holder, ok := store.WriteMark(ctx); ok {
		return nestedError(holder)
	}
	start := time.Now()
	conn, err := p.m.st.Writer().Conn(ctx)
	if err != nil {
		return fmt.Errorf("modstore: %s write: %w", p.module, err)
	}
	waited := time.Since(start)
	hold := p.m.opts.MaxWriteHold
	txCtx, cancel := context.WithTimeoutCause(ctx, hold, ErrWriteHeldTooLong)
	defer cancel()
	// Not bound to txCtx (see applyStep): the select below rolls back.
	tx, err := conn.BeginTx(context.WithoutCancel(txCtx), nil)
	if err != nil {
		conn.Close()
		return fmt.Errorf("modstore: %s write: begin: %w", p.module, err)
	}
	begun := time.Now()
	var hostRollback atomic.Bool
	rollback := func() { hostRollback.Store(true); _ = tx.Rollback() }
	if err := setAuthorizer(conn, confined(p.prefix, true, p.m.existing, &hostRollback)); err != nil {
		rollback()
		conn.Close()
		return fmt.Errorf("modstore: %s write: %w", p.module, err)
	}

	type result struct {
		err      error
		panicked bool
		panicVal any
	}
	done := make(chan result, 1)
	fnCtx := store.MarkWrite(txCtx, p.module)
	go func() {
		var r result
		defer func() {
			if v := recover(); v != nil {
				r = result{panicked: true, panicVal: v}
			}
			done <- r
		}()
		r.err = fn(fnCtx, tx)
	}()

	var r result
	returned, overlong := false, false
	select {
	case r = <-done:
		returned = true
	case <-txCtx.Done():
		// Held too long, or the caller gave up: roll back now and free the
		// writer; fn's later statements fail with sql.ErrTxDone. fn's
		// goroutine ends when fn does (a panic then is logged).
		overlong = errors.Is(context.Cause(txCtx), ErrWriteHeldTooLong)
		go func() {
			if late := <-done; late.panicked {
				p.log.Error("write transaction panicked after it was rolled back", "panic", fmt.Sprint(late.panicVal))
			}
		}()
	}
	finish := func() error {
		if err := setAuthorizer(conn, nil); err != nil {
			rollback()
			conn.Close()
			return fmt.Errorf("modstore: %s write: %w", p.module, err)
		}
		return nil
	}
	var out error
	switch {
	case !returned:
		rollback()
		if err := finish(); err != nil {
			out = err
		} else if overlong {
			out = fmt.Errorf("%w: module %s held the writer past %s; rolled back", ErrWriteHeldTooLong, hostkit.Repr(p.module), hold)
			p.log.Error("write transaction held too long; rolled back", "limit", hold)
		} else {
			out = fmt.Errorf("modstore: %s write: %w", p.module, context.Cause(txCtx))
		}
	case r.panicked:
		rollback()
		_ = finish()
	case r.err != nil:
		rollback()
		out = r.err
		if err := finish(); err != nil {
			out = errors.Join(r.err, err)
		}
	default:
		if err := finish(); err != nil {
			out = err
			break
		}
		if err := tx.Commit(); err != nil {
			if errors.Is(context.Cause(txCtx), ErrWriteHeldTooLong) {
				overlong = true
				out = fmt.Errorf("%w: module %s held the writer past %s; rolled back", ErrWriteHeldTooLong, hostkit.Repr(p.module), hold)
			} else {
				out = fmt.Errorf("modstore: %s write: commit: %w", p.module, err)
			}
		}
	}
	if err := conn.Close(); err != nil && out == nil {
		out = fmt.Errorf("modstore: %s write: release writer: %w", p.module, err)
	}
	p.record(waited, time.Since(begun), overlong)
	if r.panicked {
		panic(r.panicVal)
	}
	return out
}

// record adds one write's timings to the stats.
func (p *Port) record(wait, hold time.Duration, overlong bool) {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	s := &p.stats
	s.Writes++
	s.WaitTotal += wait
	s.WaitMax = max(s.WaitMax, wait)
	s.HoldTotal += hold
	s.HoldMax = max(s.HoldMax, hold)
	if overlong {
		s.RolledBackOverlong++
	}
}

// Raw is the unconfined handle for a module that declared RawStorage (nil
// otherwise), for sdk.Runtime.RawStorage: a pool of its own (one
// read-write connection), not the store's writer, closed with the port,
// so closing it or changing its limits touches nothing of the core. Its
// writes still serialize with every other write on SQLite's database lock
// (busy_timeout): a transaction held open on it holds the core's writes
// back, and a write on it from inside a WriteTx waits out the busy_timeout.
func (p *Port) Raw() *sql.DB {
	if !p.perms.RawStorage || p.closed.Load() {
		return nil
	}
	return p.raw
}

// Tables lists the module's tables with their row counts.
func (p *Port) Tables(ctx context.Context) ([]TableInfo, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	return p.m.Tables(ctx, p.module)
}

// Tables lists module's tables with their row counts, whether or not the
// module runs (its tables are kept while it is disabled).
func (m *Manager) Tables(ctx context.Context, module string) ([]TableInfo, error) {
	if err := hostkit.ValidateModuleName(module); err != nil {
		return nil, err
	}
	prefix := hostkit.TablePrefix(module)
	db := m.st.Reader()
	rows, err := db.QueryContext(ctx,
		`SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, ?) = ? ORDER BY name`,
		len(prefix)+1, prefix+"_")
	if err != nil {
		return nil, fmt.Errorf("modstore: %s tables: %w", module, err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("modstore: %s tables: %w", module, err)
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("modstore: %s tables: %w", module, err)
	}
	out := make([]TableInfo, 0, len(names))
	for _, n := range names {
		info := TableInfo{Name: n}
		q := `SELECT count(*) FROM "` + strings.ReplaceAll(n, `"`, `""`) + `"`
		if err := db.QueryRowContext(ctx, q).Scan(&info.Rows); err != nil {
			return nil, fmt.Errorf("modstore: %s tables: count %s: %w", module, n, err)
		}
		out = append(out, info)
	}
	return out, nil
}

// Stats returns the module's write timings.
func (p *Port) Stats() WriteStats {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	return p.stats
}

// Close revokes the port: later calls fail with a clear error (Reader's
// pool is closed: its queries fail with "sql: database is closed").
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.m.mu.Lock()
	delete(p.m.ports, p)
	p.m.mu.Unlock()
	err := p.reader.Close()
	if p.raw != nil {
		err = errors.Join(err, p.raw.Close())
	}
	if err != nil {
		return fmt.Errorf("modstore: close %s: %w", p.module, err)
	}
	return nil
}

// nestedError is the contract error for a write started inside a write.
func nestedError(module string) error {
	return &sdk.ModuleContractError{
		Message: fmt.Sprintf("module %s started a write inside its own write transaction; a writer must never start another writer (it would wait for itself)", hostkit.Repr(module)),
		Err:     store.ErrNestedWrite,
	}
}

func contractf(format string, args ...any) error {
	return &sdk.ModuleContractError{Message: fmt.Sprintf(format, args...)}
}

// setAuthorizer installs fn (nil removes it) on conn's physical connection.
// A failure to remove marks the connection bad, so database/sql discards it
// instead of handing a fail-closed authorizer to core writes.
func setAuthorizer(conn *sql.Conn, fn sqlite.AuthorizerFn) error {
	return conn.Raw(func(dc any) error {
		r, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("the SQLite driver offers no authorizer")
		}
		if err := r.RegisterAuthorizer(fn); err != nil {
			if fn == nil {
				return fmt.Errorf("remove authorizer: %w: %w", err, driver.ErrBadConn)
			}
			return fmt.Errorf("install authorizer: %w", err)
		}
		return nil
	})
}

// introspection are the pragmas a confined module may run on its own
// tables.
var introspection = map[string]bool{
	"table_info": true, "table_xinfo": true, "index_list": true, "index_info": true,
	"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true,
}

// confined is the authorizer of a module whose prefix is prefix: only
// objects named `<prefix>_…` in the main database, writes only when write
// (the writer's transaction, a migration), no transaction control on the
// writer (but the host's own ROLLBACK, once hostRollback is set). existing reports the database's other tables and
// views, for the one read SQLite presents without a column.
//
// Dropping a table or view: SQLite's sqlite3DropTable asks for
// SQLITE_DROP_TABLE (or _VIEW) of the object, then, in the same prepare
// and in this order, compiles nested statements of its own: the drop of
// the table's triggers (reads of sqlite_master.name and .type), for an
// AUTOINCREMENT table `DELETE FROM sqlite_sequence WHERE name=…`, for an
// analyzed one deletes from sqlite_stat1..4, then the delete from
// sqlite_master by tbl_name and the root-page moves. Those reads and
// deletes of SQLite's own tables are allowed only inside that window,
// opened by the drop of an own object and closed by the first action that
// is not part of it (or a refusal); the sqlite_sequence delete at most
// once and only before the sqlite_master delete by tbl_name. A module's
// own `DELETE FROM sqlite_sequence` is always refused: on the writer
// connection a statement's first action cannot be part of a drop's window
// unless that drop's prepare ended in its window, which SQLite's order
// rules out (its last actions are the sqlite_master reads, after which the
// sequence delete is closed).
func confined(prefix string, write bool, existing func(string) bool, hostRollback *atomic.Bool) sqlite.AuthorizerFn {
	own := func(name string) bool { return strings.HasPrefix(name, prefix+"_") }
	reserved := func(name string) bool {
		lower := strings.ToLower(name)
		return strings.HasPrefix(lower, store.ReservedTablePrefix+"_") || strings.HasPrefix(lower, "sqlite_")
	}
	stat := func(name string) bool {
		switch name {
		case "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4":
			return true
		}
		return false
	}
	// The drop window (write authorizers only: each is one connection's,
	// called by one prepare at a time).
	var mu sync.Mutex
	// early: before the sqlite_master delete by tbl_name (the stat and
	// counter deletes come first); seqOK: the counter delete not yet seen.
	inDrop, early, seqOK := false, false, false
	dropStep := func(action sqlite.AuthorizerActionCode, a1, a2 string) bool {
		switch action {
		case sqlite.AuthRead:
			if a1 == "sqlite_master" && a2 == "tbl_name" {
				early, seqOK = false, false
			}
			return a1 == "sqlite_master" || early && (stat(a1) || a1 == "sqlite_sequence" && a2 == "name")
		case sqlite.AuthDelete:
			if a1 == "sqlite_sequence" {
				ok := early && seqOK
				seqOK = false
				return ok
			}
			return a1 == "sqlite_master" || early && stat(a1) || own(a1)
		case sqlite.AuthUpdate:
			return a1 == "sqlite_master"
		case sqlite.AuthDropTrigger:
			return own(a1) && own(a2)
		}
		return false
	}
	return func(action sqlite.AuthorizerActionCode, a1, a2, dbName, _ string) sqlite.AuthorizerReturnCode {
		if dbName != "" && dbName != "main" {
			return sqlite.AuthorizerDeny
		}
		if write {
			mu.Lock()
			defer mu.Unlock()
			if inDrop {
				if dropStep(action, a1, a2) {
					return sqlite.AuthorizerOK
				}
				inDrop, early, seqOK = false, false, false
			}
		}
		ok := false
		switch action {
		case sqlite.AuthSelect, sqlite.AuthRecursive:
			ok = true
		case sqlite.AuthFunction:
			ok = !strings.EqualFold(a2, "load_extension")
		case sqlite.AuthRead:
			// CREATE and DROP update sqlite_master by rowid: that column,
			// and only on the writer, is all of it a module may see.
			switch {
			case own(a1):
				ok = true
			case write && a1 == "sqlite_master" && a2 == "ROWID":
				ok = true
			case a2 == "":
				// A FROM whose columns are unused (count(*)), or a CTE:
				// SQLite names a CTE the same way, so only a name that is
				// neither reserved, nor another object of the database as
				// of the last snapshot, nor shaped like a module's table
				// (any "_": a table created since the snapshot, by
				// another module's WriteTx, has one) passes. A module's
				// CTE names are its own `<prefix>_…` or have no "_".
				ok = !reserved(a1) && !existing(a1) && !strings.Contains(a1, "_")
			}
		case sqlite.AuthInsert, sqlite.AuthUpdate, sqlite.AuthDelete:
			// CREATE, DROP and ALTER first ask to change sqlite_master; a
			// statement of the module's own cannot (SQLite refuses it
			// without writable_schema, a pragma refused here). SQLite's
			// sqlite_sequence is reachable only in a drop's window (above).
			ok = write && (own(a1) || a1 == "sqlite_master")
		case sqlite.AuthCreateTable:
			// The first AUTOINCREMENT table creates SQLite's own counter table.
			ok = write && (own(a1) || a1 == "sqlite_sequence")
		case sqlite.AuthDropTable, sqlite.AuthDropView:
			ok = write && own(a1)
			if ok {
				inDrop, early, seqOK = true, true, action == sqlite.AuthDropTable
			}
		case sqlite.AuthCreateView:
			ok = write && own(a1)
		case sqlite.AuthCreateIndex, sqlite.AuthDropIndex:
			// A PRIMARY KEY or UNIQUE constraint on a non-integer column
			// makes SQLite create "sqlite_autoindex_<table>_<n>" itself.
			ok = write && own(a2) && (own(a1) || strings.HasPrefix(a1, "sqlite_autoindex_"+a2+"_"))
		case sqlite.AuthCreateTrigger, sqlite.AuthDropTrigger:
			ok = write && own(a1) && own(a2)
		case sqlite.AuthAlterTable:
			ok = write && own(a2)
		case sqlite.AuthReindex, sqlite.AuthAnalyze:
			ok = write && own(a1)
		case sqlite.AuthPragma:
			ok = introspection[strings.ToLower(a1)] && own(a2)
		case sqlite.AuthTransaction:
			// The reader's own read transactions; on the writer none: the
			// host begins, commits and rolls back (hostRollback is set
			// just before its own ROLLBACK while the authorizer is still
			// installed — fn may still be running). A module's ROLLBACK
			// would leave it running statements outside the transaction.
			ok = !write || hostRollback != nil && hostRollback.Load() && strings.EqualFold(a1, "ROLLBACK")
		case sqlite.AuthSavepoint:
			ok = write
		}
		if ok {
			return sqlite.AuthorizerOK
		}
		return sqlite.AuthorizerDeny
	}
}
