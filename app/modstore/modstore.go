// Package modstore is the modules' storage port (sdk.Storage): each module
// reads through a reader pool of its own and writes on the store's single
// writer, confined by SQLite's authorizer to its own `<module>_<table>`
// tables unless it declared RawStorage; its named migrations are applied
// with a ledger (name and position immutable, each step atomic with its
// ledger row, a newer ledger refused).
//
// CONTRACT SKELETON: the exported API below is fixed (app/host codes against
// it); the bodies are placeholders to be replaced by the real
// implementation.
package modstore

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Options configures a Manager.
type Options struct {
	Logger *slog.Logger
	// ReadConns is the size of each module's reader pool (default 2).
	ReadConns int
	// MaxWriteHold rolls back a module write transaction held longer
	// (default 5 s).
	MaxWriteHold time.Duration
}

// Manager hands out module storage ports over one store.
type Manager struct {
	st   *store.Store
	opts Options
}

// New returns a Manager over st (already migrated).
func New(st *store.Store, opts Options) (*Manager, error) {
	return &Manager{st: st, opts: opts}, nil
}

// Migrate applies spec's module's pending migrations in order, each in one
// write transaction with its ledger row, confined like the module's writes.
// It returns the names applied. A ledger that names a migration the module
// no longer has at that position, or more migrations than it has, is
// refused with a message naming the module and migration.
func (m *Manager) Migrate(ctx context.Context, module string, perms sdk.Permissions, migrations []sdk.Migration) ([]string, error) {
	return nil, errors.ErrUnsupported
}

// Open returns module's storage port (confined to its tables unless
// perms.RawStorage). Close it when the module closes.
func (m *Manager) Open(ctx context.Context, module string, perms sdk.Permissions) (*Port, error) {
	return nil, errors.ErrUnsupported
}

// Close closes every open port's reader pool.
func (m *Manager) Close() error { return nil }

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
type Port struct{}

var _ sdk.Storage = (*Port)(nil)

// Table implements sdk.Storage.
func (p *Port) Table(name string) string { return "" }

// Reader implements sdk.Storage: the module's own read-only, confined pool.
func (p *Port) Reader() *sql.DB { return nil }

// WriteTx implements sdk.Storage. A WriteTx (or any writing port) called
// with the ctx of a running WriteTx fails at once with a contract error
// instead of deadlocking the single writer.
func (p *Port) WriteTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return errors.ErrUnsupported
}

// Raw is the unconfined handle for a module that declared RawStorage (nil
// otherwise), for sdk.Runtime.RawStorage.
func (p *Port) Raw() *sql.DB { return nil }

// Tables lists the module's tables with their row counts.
func (p *Port) Tables(ctx context.Context) ([]TableInfo, error) { return nil, errors.ErrUnsupported }

// Stats returns the module's write timings.
func (p *Port) Stats() WriteStats { return WriteStats{} }

// Close revokes the port: later calls fail with a clear error.
func (p *Port) Close() error { return nil }
