package store

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// sqliteComplete is SQLite's own sqlite3_complete.
func sqliteComplete(t *testing.T, tls *libc.TLS, s string) bool {
	t.Helper()
	p, err := libc.CString(s)
	if err != nil {
		t.Fatal(err)
	}
	defer libc.Xfree(tls, p)
	return sqlite3.Xsqlite3_complete(tls, p) != 0
}

// TestSplitStatementsAgreesWithSQLite: on random SQL-shaped text, the
// split ends a statement after a ';' exactly where SQLite's
// sqlite3_complete turns from incomplete to complete. The text avoids what
// the split deliberately reads as SQLite's tokenizer does rather than as
// complete.c ('\v', a byte-order mark, parameters; hostkit's
// TestSplitStatements covers those) and starts with a token, so no empty
// statement comes first.
func TestSplitStatementsAgreesWithSQLite(t *testing.T) {
	tls := libc.NewTLS()
	defer tls.Close()
	fragments := []string{
		"CREATE", "create", "TRIGGER", "trigger", "TEMP", "TEMPORARY", "END", "end", "EXPLAIN", "BEGIN", "SELECT", "x", "1",
		";", ";", ";", ";", " ", " ", "\n", "\t", "\r", "\f", "'", `"`, "`", "[", "]", "--", "/*", "*/", "/", "*", "-", "(", ")",
		"é", "_", "a;b", "''", "CASE", ",",
	}
	rng := rand.New(rand.NewPCG(23, 1))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		b.WriteString("x ")
		for range rng.IntN(24) {
			b.WriteString(fragments[rng.IntN(len(fragments))])
			if rng.IntN(3) == 0 {
				b.WriteString(" ")
			}
		}
		in := b.String()
		var ends []int
		for i := 1; i <= len(in); i++ {
			if in[i-1] == ';' && sqliteComplete(t, tls, in[:i]) && !sqliteComplete(t, tls, in[:i-1]) {
				ends = append(ends, i)
			}
		}
		got := hostkit.SplitStatements(in)
		if len(got) != len(ends) && len(got) != len(ends)+1 {
			t.Fatalf("SplitStatements(%q) = %q; SQLite ends statements at %v", in, got, ends)
		}
		prev := 0
		for k, end := range ends {
			if !strings.HasSuffix(in[prev:end], got[k]) || strings.TrimSpace(got[k]) == "" {
				t.Fatalf("SplitStatements(%q) = %q; statement %d should end at byte %d (SQLite's boundaries %v)", in, got, k+1, end, ends)
			}
			prev = end
		}
		if len(got) > len(ends) && !strings.HasSuffix(in[prev:], got[len(ends)]) {
			t.Fatalf("SplitStatements(%q) = %q; the rest after byte %d is %q", in, got, prev, in[prev:])
		}
	}
}

// recordingHook counts statement boundaries and what ran between them.
type recordingHook struct {
	begins, ends int
	open         bool
}

func (h *recordingHook) BeginStatement() { h.begins++; h.open = true }
func (h *recordingHook) EndStatement()   { h.ends++; h.open = false }

// TestStatementConnOnTheWriter: the writer's connections are
// StatementConns. Unarmed, a multi-statement string runs as the driver
// runs it and the driver's own interfaces stay reachable (DriverConn);
// armed, each statement runs on its own between a BeginStatement and an
// EndStatement with the same results as the driver's, a Prepare of more
// than one statement is refused, and a connection returned to the pool is
// disarmed.
func TestStatementConnOnTheWriter(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "kimi.db"))
	ctx := context.Background()
	conn, err := s.Writer().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Raw(func(dc any) error {
		if _, ok := dc.(*hostkit.StatementConn); !ok {
			t.Errorf("the writer's connection is %T, not a StatementConn", dc)
		}
		if _, ok := hostkit.DriverConn(dc).(sqlite.AuthorizerRegisterer); !ok {
			t.Errorf("DriverConn(%T) offers no authorizer", dc)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t (v) VALUES (1)`); err != nil {
		t.Fatalf("unarmed multi-statement Exec: %v", err)
	}
	h := &recordingHook{}
	if err := hostkit.ArmStatements(conn, h); err != nil {
		t.Fatal(err)
	}

	t.Run("exec runs each statement, returns the last one's result", func(t *testing.T) {
		*h = recordingHook{}
		res, err := conn.ExecContext(ctx, `INSERT INTO t (v) VALUES (?); -- a comment
			INSERT INTO t (v) VALUES (?), (?);;`, 2, 3)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		n, _ := res.RowsAffected()
		if id != 4 || n != 2 || h.begins != 2 || h.ends != 2 || h.open {
			t.Fatalf("last id %d, rows %d, hook %+v; want 4, 2, two statements", id, n, *h)
		}
	})
	t.Run("query runs the earlier statements, returns the last one's rows", func(t *testing.T) {
		*h = recordingHook{}
		var sum int
		if err := conn.QueryRowContext(ctx, `INSERT INTO t (v) VALUES (10); SELECT sum(v) FROM t`).Scan(&sum); err != nil {
			t.Fatal(err)
		}
		// Each statement binds from the same arguments, as the driver's
		// own multi-statement Exec does: the second insert took 2 and 3.
		if sum != 1+2+2+3+10 || h.begins != 2 || h.ends != 2 {
			t.Fatalf("sum %d, hook %+v", sum, *h)
		}
	})
	t.Run("a trigger's body is one statement", func(t *testing.T) {
		*h = recordingHook{}
		if _, err := conn.ExecContext(ctx, `CREATE TRIGGER t_t AFTER INSERT ON t BEGIN UPDATE t SET v = v; UPDATE t SET v = v; END; DROP TRIGGER t_t`); err != nil {
			t.Fatal(err)
		}
		if h.begins != 2 {
			t.Fatalf("hook %+v, want two statements", *h)
		}
	})
	// Where complete.c and SQLite's tokenizer disagree, the split follows
	// the tokenizer: a Tcl-style parameter holding a quote does not hide
	// the statement after it, and '\v' after a space is whitespace between
	// CREATE and TRIGGER (complete.c's reading would split the trigger's
	// body, and SQLite would find its first half incomplete).
	t.Run("a Tcl parameter's quote ends no later than SQLite's statement", func(t *testing.T) {
		*h = recordingHook{}
		if _, err := conn.ExecContext(ctx, `SELECT $a('x); INSERT INTO t (v) VALUES (100); --'`, sql.Named("a('x)", 1)); err != nil {
			t.Fatal(err)
		}
		statements := h.begins
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE v = 100`).Scan(&n); err != nil || n != 1 || statements != 2 {
			t.Fatalf("rows %d, %v; hook %+v; want the insert run as a statement of its own", n, err, *h)
		}
		if _, err := conn.ExecContext(ctx, `DELETE FROM t WHERE v = 100`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a vertical tab before TRIGGER", func(t *testing.T) {
		*h = recordingHook{}
		if _, err := conn.ExecContext(ctx, "CREATE \vTRIGGER t_v AFTER INSERT ON t BEGIN UPDATE t SET v = v; END; DROP TRIGGER t_v"); err != nil {
			t.Fatal(err)
		}
		if h.begins != 2 {
			t.Fatalf("hook %+v, want two statements", *h)
		}
	})
	t.Run("SQL without a statement", func(t *testing.T) {
		res, err := conn.ExecContext(ctx, ` -- nothing ;`)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := res.RowsAffected(); n != 0 || err != nil {
			t.Fatalf("RowsAffected = %d, %v", n, err)
		}
		rows, err := conn.QueryContext(ctx, `/* nothing */`)
		if err != nil {
			t.Fatal(err)
		}
		if rows.Next() {
			t.Fatal("rows from SQL without a statement")
		}
		rows.Close()
	})
	t.Run("prepare takes one statement", func(t *testing.T) {
		if _, err := conn.PrepareContext(ctx, `SELECT 1; SELECT 2`); err == nil || !strings.Contains(err.Error(), "2 statements in one Prepare") {
			t.Fatalf("Prepare of two statements = %v", err)
		}
		*h = recordingHook{}
		st, err := conn.PrepareContext(ctx, `SELECT count(*) FROM t;`)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var n int
		if err := st.QueryRowContext(ctx).Scan(&n); err != nil || n != 5 || h.begins != 1 || h.ends != 1 {
			t.Fatalf("prepared count = %d, %v; hook %+v", n, err, *h)
		}
	})
	t.Run("a connection back in the pool is disarmed", func(t *testing.T) {
		conn.Close()
		*h = recordingHook{}
		again, err := s.Writer().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		if _, err := again.ExecContext(ctx, `INSERT INTO t (v) VALUES (1); INSERT INTO t (v) VALUES (2)`); err != nil {
			t.Fatal(err)
		}
		if h.begins != 0 {
			t.Fatalf("the pooled connection still calls the hook: %+v", *h)
		}
	})
	t.Run("a pool that is not wrapped cannot be armed", func(t *testing.T) {
		rc, err := s.Reader().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if err := hostkit.ArmStatements(rc, h); err == nil {
			t.Fatal("ArmStatements on a plain connection succeeded")
		}
	})
}
