package modstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

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
	prefix := hostkit.TablePrefix(module)
	// What is not the module's own must be as it was after Up (a RENAME
	// TO's new name never reaches the authorizer).
	var foreign hostkit.ForeignObjects
	if err := conn.Raw(func(dc any) (err error) {
		foreign, err = foreignSchema(stepCtx, dc, prefix)
		return err
	}); err != nil {
		return fmt.Errorf("modstore: migrate %s: %w", module, err)
	}
	// The confinement is also the connection's statement hook: its ALTER
	// TABLE window needs each statement's exact boundaries.
	c := newConfinement(prefix, true, m.existing, &hostRollback)
	if err := setAuthorizer(conn, authorizer(c)); err != nil {
		return fmt.Errorf("modstore: migrate %s: %w", module, err)
	}
	// The authorizer stays installed until the transaction has ended: a
	// goroutine Up started may still run statements on tx.
	defer func() {
		hostRollback.Store(true)
		_ = tx.Rollback()
		_ = setAuthorizer(conn, nil) // a failure discards the connection
	}()
	if err := hostkit.ArmStatements(conn, c); err != nil {
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
		if err := errors.Join(hostkit.ArmStatements(conn, nil), setAuthorizer(conn, nil)); err != nil {
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
	if err := hostkit.ArmStatements(conn, nil); err != nil {
		return fmt.Errorf("modstore: migrate %s: %w", module, err)
	}
	if stepErr != nil {
		return fmt.Errorf("modstore: module %s migration %s failed: %w", hostkit.Repr(module), hostkit.Repr(mg.Name), stepErr)
	}
	// The host's check and ledger row run on the driver's connection
	// under Raw, with the authorizer lifted only there: no statement of
	// tx's (a goroutine of Up's) can run in between.
	var changed error
	if err := conn.Raw(func(dc any) error {
		r, ok := hostkit.DriverConn(dc).(sqlite.AuthorizerRegisterer)
		e, eok := hostkit.DriverConn(dc).(driver.ExecerContext)
		if !ok || !eok {
			return errors.New("the SQLite driver offers no authorizer or Exec")
		}
		if err := r.RegisterAuthorizer(nil); err != nil {
			return fmt.Errorf("remove authorizer: %w", err)
		}
		after, err := foreignSchema(stepCtx, dc, prefix)
		if err == nil {
			if changed = foreign.Changed(after); changed == nil {
				_, err = e.ExecContext(stepCtx,
					`INSERT INTO kimi_module_migrations (module, position, name, applied_ms) VALUES (?, ?, ?, ?)`,
					[]driver.NamedValue{{Ordinal: 1, Value: module}, {Ordinal: 2, Value: int64(position)}, {Ordinal: 3, Value: mg.Name}, {Ordinal: 4, Value: time.Now().UnixMilli()}})
				if err != nil {
					err = fmt.Errorf("ledger row for %s: %w", mg.Name, err)
				}
			}
		}
		if rerr := r.RegisterAuthorizer(authorizer(c)); rerr != nil {
			// Never hand tx back unconfined: discard the connection.
			return errors.Join(err, fmt.Errorf("reinstall authorizer: %w: %w", rerr, driver.ErrBadConn))
		}
		return err
	}); err != nil {
		return fmt.Errorf("modstore: migrate %s: %w", module, err)
	}
	if changed != nil {
		return fmt.Errorf("modstore: module %s migration %s failed; rolled back: %w", hostkit.Repr(module), hostkit.Repr(mg.Name), changed)
	}
	c.EndTransaction("COMMIT")
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

// foreignSchema is hostkit.ForeignSchema on dc, a sql.Conn.Raw argument.
func foreignSchema(ctx context.Context, dc any, prefix string) (hostkit.ForeignObjects, error) {
	q, ok := hostkit.DriverConn(dc).(driver.QueryerContext)
	if !ok {
		return nil, errors.New("the SQLite driver offers no Query")
	}
	return hostkit.ForeignSchema(ctx, q, prefix)
}
