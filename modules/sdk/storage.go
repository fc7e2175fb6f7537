package sdk

import (
	"context"
	"database/sql"
)

// Storage is a module's view of the appliance's SQLite database. Isolation
// is naming discipline: a module touches only its own tables, named through
// Table. Migrations create them (see Module.Migrations).
type Storage interface {
	// Table returns the quoted physical name `"<prefix>_<name>"` of a
	// logical table; name matches `[a-z][a-z0-9_]{0,62}`. It panics with a
	// *ModuleContractError ("module 'm' table name 'x' is not a valid
	// identifier") on an invalid name, a programming error.
	Table(name string) string
	// Reader returns a read-only handle for queries (a reader pool with
	// query_only set). Never write through it.
	Reader() *sql.DB
	// WriteTx runs fn in a serialized write transaction: committed when fn
	// returns nil, rolled back on error or panic. A writer must never start
	// another writer from inside fn (it would wait for itself).
	WriteTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error
}
