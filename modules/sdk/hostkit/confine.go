package hostkit

import (
	"strings"
	"sync"
)

// SQLiteAction is an action SQLite presents to a connection's authorizer
// (sqlite3_set_authorizer's second argument), with the C API's stable
// numbering, so the confinement below needs no SQLite driver: a host or a
// fake adapts its driver's authorizer callback to Confinement.Allow.
type SQLiteAction int32

// The SQLite authorizer action codes (SQLITE_CREATE_INDEX … SQLITE_RECURSIVE).
const (
	ActionCreateIndex       SQLiteAction = 1
	ActionCreateTable       SQLiteAction = 2
	ActionCreateTempIndex   SQLiteAction = 3
	ActionCreateTempTable   SQLiteAction = 4
	ActionCreateTempTrigger SQLiteAction = 5
	ActionCreateTempView    SQLiteAction = 6
	ActionCreateTrigger     SQLiteAction = 7
	ActionCreateView        SQLiteAction = 8
	ActionDelete            SQLiteAction = 9
	ActionDropIndex         SQLiteAction = 10
	ActionDropTable         SQLiteAction = 11
	ActionDropTempIndex     SQLiteAction = 12
	ActionDropTempTable     SQLiteAction = 13
	ActionDropTempTrigger   SQLiteAction = 14
	ActionDropTempView      SQLiteAction = 15
	ActionDropTrigger       SQLiteAction = 16
	ActionDropView          SQLiteAction = 17
	ActionInsert            SQLiteAction = 18
	ActionPragma            SQLiteAction = 19
	ActionRead              SQLiteAction = 20
	ActionSelect            SQLiteAction = 21
	ActionTransaction       SQLiteAction = 22
	ActionUpdate            SQLiteAction = 23
	ActionAttach            SQLiteAction = 24
	ActionDetach            SQLiteAction = 25
	ActionAlterTable        SQLiteAction = 26
	ActionReindex           SQLiteAction = 27
	ActionAnalyze           SQLiteAction = 28
	ActionCreateVTable      SQLiteAction = 29
	ActionDropVTable        SQLiteAction = 30
	ActionFunction          SQLiteAction = 31
	ActionSavepoint         SQLiteAction = 32
	ActionRecursive         SQLiteAction = 33
)

// CoreTablePrefix is the prefix of the core's tables (kimi_…), which no
// confined module reaches.
const CoreTablePrefix = "kimi"

// introspection are the pragmas a confined module may run on its own
// tables.
var introspection = map[string]bool{
	"table_info": true, "table_xinfo": true, "index_list": true, "index_info": true,
	"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true,
}

// Confinement is the authorizer's decision for a module whose table prefix
// is Prefix: only objects named `<prefix>_…` in the main database, writes
// only when Write (the writer's transaction, a migration), no transaction
// control on the writer but the host's own COMMIT or ROLLBACK, once
// EndTransaction was called or HostRollback reports true (and then
// nothing else). Existing reports the database's other tables and views,
// for the one read SQLite presents without a column. The host
// (app/modstore) and the storage fake (sdktest) install the same one, so a
// module's SQL is refused alike by both. A write Confinement belongs to one
// connection (its drop window is that connection's); create one per
// transaction with NewConfinement.
//
// Dropping a table or view (an index or a trigger likewise: its window
// has no counter or stat deletes): SQLite's sqlite3DropTable asks for
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
// sequence delete is closed). BeginStatement and EndStatement close it too.
//
// Altering a table: SQLite's ALTER TABLE asks for SQLITE_ALTER_TABLE of
// the table (DROP COLUMN with the column as the third argument, the slot
// of the database name elsewhere) and then, in the same prepare, compiles
// nested statements that read and rewrite the schema: SELECTs, functions
// (printf, like, sqlite_rename_column, sqlite_drop_column, …), reads of
// every column of sqlite_master and updates of its sql, tbl_name and
// name, the same of sqlite_temp_master in "temp", and for RENAME TO the
// update of sqlite_sequence.name. Those are indistinguishable from a
// statement of the module's own that reads sqlite_master, so the window
// for them needs exact statement boundaries: it opens only when the ALTER
// of an own table in main is the first action of a statement an armed
// StatementConn delimits (BeginStatement … EndStatement; this type is its
// StatementHook) and closes at EndStatement. Without boundaries (a
// runtime WriteTx, or SQL a connection runs outside them, such as a
// prepared statement re-prepared later) ALTER TABLE is refused. The new
// name of RENAME TO is not shown to the authorizer: the host checks after
// the migration that nothing but the module's own objects changed
// (ForeignSchema).
type Confinement struct {
	prefix       string
	write        bool
	existing     func(string) bool
	hostRollback func() bool

	mu sync.Mutex
	// ending is the statement the host ends the transaction with
	// (EndTransaction).
	ending string
	// The drop window. early: before the sqlite_master delete by
	// tbl_name (the stat and counter deletes come first); seqOK: the
	// counter delete not yet seen.
	inDrop, early, seqOK bool
	// The statement boundaries: delimited between BeginStatement and
	// EndStatement, fresh until the statement's first action; inAlter:
	// the ALTER window, open until EndStatement.
	delimited, fresh, inAlter bool
}

var _ StatementHook = (*Confinement)(nil)

// BeginStatement implements StatementHook: a single statement's prepare
// begins; every window closes.
func (c *Confinement) BeginStatement() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeWindows()
	c.delimited, c.fresh = true, true
}

// EndStatement implements StatementHook: the statement is prepared (and
// run); every window closes.
func (c *Confinement) EndStatement() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeWindows()
	c.delimited, c.fresh = false, false
}

// EndTransaction tells c that the host is about to end the transaction
// with stmt ("COMMIT"): from now on that statement is all c lets
// through, whatever else a goroutine of the module's still runs on the
// transaction. Once hostRollback reports true, the same holds for
// "ROLLBACK". The host keeps c installed until the transaction has
// ended.
func (c *Confinement) EndTransaction(stmt string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ending = stmt
}

// endingWith is the statement the host ends the transaction with, or "".
func (c *Confinement) endingWith() string {
	if c.ending != "" {
		return c.ending
	}
	if c.hostRollback != nil && c.hostRollback() {
		return "ROLLBACK"
	}
	return ""
}

func (c *Confinement) closeWindows() {
	c.inDrop, c.early, c.seqOK, c.inAlter = false, false, false, false
}

// NewConfinement returns the confinement of the module whose table prefix
// is prefix (TablePrefix(module)). existing may be nil (no other objects
// known); hostRollback may be nil (no ROLLBACK allowed on the writer).
func NewConfinement(prefix string, write bool, existing func(string) bool, hostRollback func() bool) *Confinement {
	if existing == nil {
		existing = func(string) bool { return false }
	}
	return &Confinement{prefix: prefix, write: write, existing: existing, hostRollback: hostRollback}
}

// sqliteOwn reports SQLite's own names (sqlite_master, sqlite_dbpage,
// sqlite_stat1, …): never a module's, whatever its prefix. The exceptions
// SQLite needs (sqlite_sequence, sqlite_autoindex_…, a drop's window) are
// named where they are allowed.
func sqliteOwn(name string) bool { return strings.HasPrefix(strings.ToLower(name), "sqlite_") }

func (c *Confinement) own(name string) bool {
	return strings.HasPrefix(name, c.prefix+"_") && !sqliteOwn(name)
}

func reservedName(name string) bool {
	lower := strings.ToLower(name)
	// dbstat is SQLite's page-statistics table, present without a schema
	// entry (its name has no "_", like a CTE's).
	return strings.HasPrefix(lower, CoreTablePrefix+"_") || sqliteOwn(lower) || lower == "dbstat"
}

func statTable(name string) bool {
	switch name {
	case "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4":
		return true
	}
	return false
}

func (c *Confinement) dropStep(action SQLiteAction, a1, a2 string) bool {
	switch action {
	case ActionRead:
		if a1 == "sqlite_master" && a2 == "tbl_name" {
			c.early, c.seqOK = false, false
		}
		return a1 == "sqlite_master" || c.early && (statTable(a1) || a1 == "sqlite_sequence" && a2 == "name")
	case ActionDelete:
		if a1 == "sqlite_sequence" {
			ok := c.early && c.seqOK
			c.seqOK = false
			return ok
		}
		return a1 == "sqlite_master" || c.early && statTable(a1) || c.own(a1)
	case ActionUpdate:
		return a1 == "sqlite_master"
	case ActionDropTrigger:
		return c.own(a1) && c.own(a2)
	}
	return false
}

// alterStep reports the actions of SQLite's own inside an ALTER TABLE's
// prepare (SELECTs and functions pass the ordinary rules): the schema
// tables' reads and updates, sqlite_sequence's name for RENAME TO, and
// the quick_check of the module's table for ADD COLUMN … CHECK.
func (c *Confinement) alterStep(action SQLiteAction, a1, a2, dbName string) bool {
	schema := a1 == "sqlite_master" && dbName == "main" || a1 == "sqlite_temp_master" && dbName == "temp"
	switch action {
	case ActionRead:
		// ADD COLUMN with a CHECK constraint checks the table's rows
		// with pragma_quick_check(table).
		return schema || a1 == "sqlite_sequence" && a2 == "name" && dbName == "main" ||
			a1 == "pragma_quick_check" && a2 == "quick_check" && dbName == "main"
	case ActionPragma:
		return strings.EqualFold(a1, "quick_check") && c.own(a2) && dbName == "main"
	case ActionUpdate:
		switch {
		case schema:
			return a2 == "sql" || a2 == "tbl_name" || a2 == "name" && a1 == "sqlite_master"
		case a1 == "sqlite_sequence" && dbName == "main":
			return a2 == "name"
		}
	}
	return false
}

// Allow reports whether the action may be compiled; the arguments are the
// authorizer callback's (SQLite's NULLs as "").
func (c *Confinement) Allow(action SQLiteAction, a1, a2, dbName, _ string) bool {
	if c.write {
		c.mu.Lock()
		defer c.mu.Unlock()
		if end := c.endingWith(); end != "" {
			return action == ActionTransaction && strings.EqualFold(a1, end)
		}
		first := c.fresh
		c.fresh = false
		if c.inAlter && c.alterStep(action, a1, a2, dbName) {
			return true
		}
		if action == ActionAlterTable {
			// a1 is the database, a2 the table; dbName is DROP COLUMN's
			// column.
			if first && c.delimited && a1 == "main" && c.own(a2) {
				c.inAlter = true
				return true
			}
			return false
		}
	}
	if dbName != "" && dbName != "main" {
		return false
	}
	if c.write {
		if c.inDrop {
			if c.dropStep(action, a1, a2) {
				return true
			}
			c.inDrop, c.early, c.seqOK = false, false, false
		}
	}
	write := c.write
	switch action {
	case ActionSelect, ActionRecursive:
		return true
	case ActionFunction:
		return !strings.EqualFold(a2, "load_extension")
	case ActionRead:
		// CREATE and DROP update sqlite_master by rowid: that column,
		// and only on the writer, is all of it a module may see.
		switch {
		case c.own(a1):
			return true
		case write && a1 == "sqlite_master" && a2 == "ROWID":
			return true
		case a2 == "":
			// A FROM whose columns are unused (count(*)), or a CTE:
			// SQLite names a CTE the same way, so only a name that is
			// neither reserved, nor another object of the database as
			// of the last snapshot, nor shaped like a module's table
			// (any "_": a table created since the snapshot, by
			// another module's WriteTx, has one) passes. A module's
			// CTE names are its own `<prefix>_…` or have no "_".
			return !reservedName(a1) && !c.existing(a1) && !strings.Contains(a1, "_")
		}
	case ActionInsert, ActionUpdate, ActionDelete:
		// CREATE, DROP and ALTER first ask to change sqlite_master; a
		// statement of the module's own cannot (SQLite refuses it
		// without writable_schema, a pragma refused here). SQLite's
		// sqlite_sequence is reachable only in a drop's window (above).
		return write && (c.own(a1) || a1 == "sqlite_master")
	case ActionCreateTable:
		// The first AUTOINCREMENT table creates SQLite's own counter table.
		return write && (c.own(a1) || a1 == "sqlite_sequence")
	case ActionDropTable, ActionDropView:
		if write && c.own(a1) {
			c.inDrop, c.early, c.seqOK = true, true, action == ActionDropTable
			return true
		}
	case ActionCreateView:
		return write && c.own(a1)
	case ActionCreateIndex, ActionDropIndex:
		// A PRIMARY KEY or UNIQUE constraint on a non-integer column
		// makes SQLite create "sqlite_autoindex_<table>_<n>" itself.
		ok := write && c.own(a2) && (c.own(a1) || strings.HasPrefix(a1, "sqlite_autoindex_"+a2+"_"))
		if ok && action == ActionDropIndex {
			c.inDrop, c.early, c.seqOK = true, false, false
		}
		return ok
	case ActionCreateTrigger, ActionDropTrigger:
		ok := write && c.own(a1) && c.own(a2)
		if ok && action == ActionDropTrigger {
			c.inDrop, c.early, c.seqOK = true, false, false
		}
		return ok
	case ActionReindex, ActionAnalyze:
		return write && c.own(a1)
	case ActionPragma:
		return introspection[strings.ToLower(a1)] && c.own(a2)
	case ActionTransaction:
		// The reader's own read transactions; on the writer none: the
		// host begins, commits and rolls back (EndTransaction, or
		// hostRollback reporting true, just before its own COMMIT or
		// ROLLBACK while the authorizer is still installed — fn, or a
		// goroutine of its, may still be running; see above). A
		// module's ROLLBACK would leave it running statements outside
		// the transaction.
		return !write
	case ActionSavepoint:
		return write
	}
	return false
}
