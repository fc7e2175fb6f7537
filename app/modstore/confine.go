package modstore

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kimiapp/kimi/app/store"
	"modernc.org/sqlite"
)

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
