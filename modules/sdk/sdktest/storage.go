package sdktest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite" // the pure-Go SQLite driver the appliance uses

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Storage is an sdk.Storage over a real SQLite file in t.TempDir(), set up
// like the appliance's database: WAL, busy_timeout, foreign keys, one
// writer connection whose transactions start with BEGIN IMMEDIATE (so
// writers serialize instead of failing with SQLITE_BUSY), and a small
// query-only reader pool. Tests therefore exercise the module's real SQL.
type Storage struct {
	module string
	path   string
	writer *sql.DB
	reader *sql.DB
	// names is the schema's tables and views as of the last snapshot
	// (taken at open and after Migrate, as the host takes it), for the
	// reader's confinement.
	names atomic.Pointer[map[string]bool]
}

var _ sdk.Storage = (*Storage)(nil)

// migrationLedger is the fake's record of applied module migrations, kept
// in the same file so a second runtime over the same Storage (a restart)
// applies only new steps.
const migrationLedger = "sdktest_module_migrations"

// OpenStorage creates a fresh database file for module in t.TempDir() and
// closes it when the test ends.
func OpenStorage(t testing.TB, module string) *Storage {
	t.Helper()
	s, err := openStorage(filepath.Join(t.TempDir(), "module.db"), module)
	if err != nil {
		t.Fatalf("sdktest: open storage: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openStorage(path, module string) (*Storage, error) {
	dsn := func(extra string) string {
		q := url.Values{}
		for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(ON)"} {
			q.Add("_pragma", p)
		}
		if extra != "" {
			q.Add("_pragma", extra)
		}
		q.Set("_txlock", "immediate")
		q.Set("_time_format", "sqlite")
		return "file:" + path + "?" + q.Encode()
	}
	// Like the host's writer, its connections are hostkit.StatementConns,
	// armed during migrations.
	base, err := sqlite.NewConnector(dsn(""))
	if err != nil {
		return nil, fmt.Errorf("sdktest: open writer: %w", err)
	}
	writer := sql.OpenDB(hostkit.NewStatementConnector(base))
	writer.SetMaxOpenConns(1)
	// Create the file (and switch it to WAL) before readers open it
	// query-only.
	if _, err := writer.Exec(`CREATE TABLE IF NOT EXISTS ` + migrationLedger + ` (
		module TEXT NOT NULL, position INTEGER NOT NULL, name TEXT NOT NULL,
		PRIMARY KEY (module, position))`); err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("sdktest: create migration ledger: %w", err)
	}
	s := &Storage{module: module, path: path, writer: writer}
	if err := s.refreshNames(context.Background()); err != nil {
		_ = writer.Close()
		return nil, err
	}
	readBase, err := sqlite.NewConnector(dsn("query_only(1)"))
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("sdktest: open reader: %w", err)
	}
	// Every reader connection is confined from its first statement, as
	// the host's reader pool is (app/modstore): the same Confinement,
	// read-only.
	c := hostkit.NewConfinement(hostkit.TablePrefix(module), false, s.existing, nil)
	s.reader = sql.OpenDB(confinedConnector{Connector: readBase, c: c})
	s.reader.SetMaxOpenConns(4)
	return s, nil
}

// confinedConnector installs c on each connection it opens and hands out
// the driver's own connection (no wrapper hides its optional interfaces).
type confinedConnector struct {
	driver.Connector
	c *hostkit.Confinement
}

// Connect implements driver.Connector.
func (cc confinedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := cc.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := registerAuthorizer(conn, cc.c); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// refreshNames rereads the schema's table and view names.
func (s *Storage) refreshNames(ctx context.Context) error {
	names, err := schemaNames(ctx, s.writer)
	if err != nil {
		return err
	}
	s.names.Store(&names)
	return nil
}

// existing reports whether name is a table or view of the last snapshot.
func (s *Storage) existing(name string) bool {
	names := s.names.Load()
	return names != nil && (*names)[strings.ToLower(name)]
}

// Path returns the database file.
func (s *Storage) Path() string { return s.path }

// Module returns the module the storage is scoped to.
func (s *Storage) Module() string { return s.module }

// Table returns the quoted physical name of a logical table; it panics with
// *sdk.ModuleContractError on an invalid name, like the host.
func (s *Storage) Table(name string) string { return hostkit.MustTableName(s.module, name) }

// Reader returns the query-only pool, confined like the host's reader:
// only the module's own `<prefix>_…` tables and views (no kimi_… table,
// no other module's, no sqlite_* table, no dbstat).
func (s *Storage) Reader() *sql.DB { return s.reader }

// Writer returns the single-connection writer pool, for test fixtures that
// need to write outside a module's own transactions.
func (s *Storage) Writer() *sql.DB { return s.writer }

type inWriteTx struct{}

// WriteTx runs fn in a write transaction (BEGIN IMMEDIATE on the single
// writer connection): committed when fn returns nil, rolled back on an
// error or a panic (which is re-raised). Starting a writer inside fn would
// wait for itself forever in the host; here it fails at once with an
// error saying so. fn's statements are confined as the host confines them
// (hostkit.Confinement: only the module's own `<prefix>_…` objects, no
// transaction control, no sqlite_* table), so SQL the host would refuse
// fails here too with SQLite's "authorization denied".
func (s *Storage) WriteTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return s.writeTx(ctx, fn, nil)
}

// writeTx is WriteTx with after, run unconfined once fn succeeded, in the
// same transaction (the migration ledger's row). A migration (after not
// nil) runs as the host runs it: with statement boundaries armed, so its
// ALTER TABLE works, and refused when it changed a schema object that is
// not the module's own.
func (s *Storage) writeTx(ctx context.Context, fn, after func(ctx context.Context, tx *sql.Tx) error) (err error) {
	if ctx.Value(inWriteTx{}) != nil {
		return errors.New("sdktest: WriteTx called inside WriteTx; a writer must never start another writer")
	}
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sdktest: begin write transaction: %w", err)
	}
	defer conn.Close()
	// Not bound to ctx: database/sql would roll back on its own when it
	// ends, under the authorizer, which refuses any ROLLBACK but ours.
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return fmt.Errorf("sdktest: begin write transaction: %w", err)
	}
	var rolling atomic.Bool
	committed, confined := false, false
	defer func() {
		if !committed {
			rolling.Store(true)
			_ = tx.Rollback()
		}
		if confined {
			_ = hostkit.ArmStatements(conn, nil)
			_ = setAuthorizer(conn, nil)
		}
	}()
	existing, err := schemaNames(ctx, tx)
	if err != nil {
		return err
	}
	prefix := hostkit.TablePrefix(s.module)
	var foreign hostkit.ForeignObjects
	if after != nil {
		if foreign, err = foreignSchema(ctx, conn, prefix); err != nil {
			return fmt.Errorf("sdktest: %w", err)
		}
	}
	c := hostkit.NewConfinement(prefix, true, func(name string) bool { return existing[strings.ToLower(name)] }, rolling.Load)
	if err := setAuthorizer(conn, c); err != nil {
		return err
	}
	confined = true
	if after != nil {
		if err := hostkit.ArmStatements(conn, c); err != nil {
			return fmt.Errorf("sdktest: %w", err)
		}
	}
	if err := fn(context.WithValue(ctx, inWriteTx{}, true), tx); err != nil {
		return err
	}
	if err := errors.Join(hostkit.ArmStatements(conn, nil), setAuthorizer(conn, nil)); err != nil {
		return err
	}
	confined = false
	if after != nil {
		changed, err := foreignSchema(ctx, conn, prefix)
		if err != nil {
			return fmt.Errorf("sdktest: %w", err)
		}
		if err := foreign.Changed(changed); err != nil {
			return fmt.Errorf("rolled back: %w", err)
		}
		if err := after(ctx, tx); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sdktest: commit write transaction: %w", err)
	}
	committed = true
	return nil
}

// foreignSchema is hostkit.ForeignSchema on conn's driver connection.
func foreignSchema(ctx context.Context, conn *sql.Conn, prefix string) (out hostkit.ForeignObjects, err error) {
	err = conn.Raw(func(dc any) error {
		q, ok := hostkit.DriverConn(dc).(driver.QueryerContext)
		if !ok {
			return errors.New("the SQLite driver offers no Query")
		}
		out, err = hostkit.ForeignSchema(ctx, q, prefix)
		return err
	})
	return out, err
}

// querier is what schemaNames reads through: the writer pool or its
// transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// schemaNames are the database's tables and views, lower-cased.
func schemaNames(ctx context.Context, q querier) (map[string]bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')`)
	if err != nil {
		return nil, fmt.Errorf("sdktest: read table names: %w", err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("sdktest: read table names: %w", err)
		}
		names[strings.ToLower(n)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sdktest: read table names: %w", err)
	}
	return names, nil
}

// setAuthorizer installs c's decisions (nil removes them) on conn's
// physical connection. A failure to remove marks the connection bad, so
// database/sql discards it instead of keeping a confined writer.
func setAuthorizer(conn *sql.Conn, c *hostkit.Confinement) error {
	return conn.Raw(func(dc any) error { return registerAuthorizer(dc, c) })
}

// registerAuthorizer installs c's decisions (nil removes them) on the
// driver connection dc.
func registerAuthorizer(dc any, c *hostkit.Confinement) error {
	r, ok := hostkit.DriverConn(dc).(sqlite.AuthorizerRegisterer)
	if !ok {
		return errors.New("sdktest: the SQLite driver offers no authorizer")
	}
	if c == nil {
		if err := r.RegisterAuthorizer(nil); err != nil {
			return fmt.Errorf("sdktest: remove authorizer: %w: %w", err, driver.ErrBadConn)
		}
		return nil
	}
	err := r.RegisterAuthorizer(func(action sqlite.AuthorizerActionCode, a1, a2, dbName, trigger string) sqlite.AuthorizerReturnCode {
		if c.Allow(hostkit.SQLiteAction(action), a1, a2, dbName, trigger) {
			return sqlite.AuthorizerOK
		}
		return sqlite.AuthorizerDeny
	})
	if err != nil {
		return fmt.Errorf("sdktest: install authorizer: %w", err)
	}
	return nil
}

// Migrate applies, in order, the migrations not yet recorded for the
// module, each in its own write transaction together with its ledger row,
// as the host does, and confined as WriteTx's fn is, except that, as on
// the host, a migration may ALTER TABLE its own tables (its statements run
// one at a time, and a step that changed a schema object not its own, a
// table renamed out of its prefix, is rolled back). The list must pass hostkit.ValidateMigrations, and
// released steps may not change: a recorded position whose name differs,
// or a recorded step missing from the list, is refused.
func (s *Storage) Migrate(ctx context.Context, migrations []sdk.Migration) error {
	if err := hostkit.ValidateMigrations(s.module, migrations); err != nil {
		return err
	}
	// The reader's snapshot of the schema, as the host's, is retaken
	// once the migrations ran.
	defer func() { _ = s.refreshNames(context.WithoutCancel(ctx)) }()
	applied := map[int]string{}
	rows, err := s.writer.QueryContext(ctx, `SELECT position, name FROM `+migrationLedger+` WHERE module = ?`, s.module)
	if err != nil {
		return fmt.Errorf("sdktest: read migration ledger: %w", err)
	}
	for rows.Next() {
		var pos int
		var name string
		if err := rows.Scan(&pos, &name); err != nil {
			_ = rows.Close()
			return fmt.Errorf("sdktest: read migration ledger: %w", err)
		}
		applied[pos] = name
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("sdktest: read migration ledger: %w", err)
	}
	for pos, name := range applied {
		if pos > len(migrations) {
			return &sdk.ModuleContractError{Message: fmt.Sprintf("module %s migration %s was applied but is no longer declared", hostkit.Repr(s.module), hostkit.Repr(name))}
		}
		if migrations[pos-1].Name != name {
			return &sdk.ModuleContractError{Message: fmt.Sprintf("module %s migration %d was released as %s and may not change to %s",
				hostkit.Repr(s.module), pos, hostkit.Repr(name), hostkit.Repr(migrations[pos-1].Name))}
		}
	}
	for i, m := range migrations {
		pos := i + 1
		if _, done := applied[pos]; done {
			continue
		}
		err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			// A panic (an invalid table name in MigrationContext.Table)
			// becomes an error, so the step rolls back cleanly.
			mc := sdk.MigrationContext{Tx: tx, Module: s.module}
			return recovering(func() error { return m.Up(ctx, mc) })
		}, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+migrationLedger+` (module, position, name) VALUES (?, ?, ?)`, s.module, pos, m.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("sdktest: module %s migration %s: %w", s.module, m.Name, err)
		}
	}
	return nil
}

// Close closes both pools.
func (s *Storage) Close() error {
	return errors.Join(s.reader.Close(), s.writer.Close())
}
