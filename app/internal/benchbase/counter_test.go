package benchbase

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
	"modernc.org/sqlite"
)

// TestCounterCountsStatementsCommitsAndFrames: through a store opened with
// a Counter, n single-row write transactions count n statements and n
// commits and about one WAL frame each; an autocommit write counts a
// commit; reads count as reads, not statements, and no commit; hostkit.DriverConn still
// reaches SQLite's own connection under the counter.
func TestCounterCountsStatementsCommitsAndFrames(t *testing.T) {
	ctx := context.Background()
	var c Counter
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{WrapConnector: c.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Writer().ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	base := c.Counts()
	const n = 50
	for i := range n {
		if err := st.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO t (v) VALUES (?)`, i)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	d := c.Counts().Sub(base)
	if d.Statements != n || d.Reads != 0 || d.Commits != n {
		t.Fatalf("%d statements, %d commits for %d single-row transactions", d.Statements, d.Commits, n)
	}
	if d.WALFrames < n || d.WALFrames > 3*n {
		t.Fatalf("%d WAL frames for %d single-row commits, want about one each", d.WALFrames, n)
	}

	base = c.Counts()
	if _, err := st.Writer().ExecContext(ctx, `INSERT INTO t (v) VALUES ('auto')`); err != nil {
		t.Fatal(err)
	}
	if d := c.Counts().Sub(base); d.Statements != 1 || d.Commits != 1 || d.WALFrames < 1 {
		t.Fatalf("an autocommit insert counted %+v", d)
	}

	base = c.Counts()
	var count int
	if err := st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if d := c.Counts().Sub(base); count != n+1 || d.Statements != 0 || d.Reads != 1 || d.Commits != 0 || d.WALFrames != 0 {
		t.Fatalf("a read of %d rows counted %+v", count, d)
	}

	conn, err := st.Writer().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error {
		if _, ok := hostkit.DriverConn(dc).(sqlite.AuthorizerRegisterer); !ok {
			t.Fatalf("DriverConn reached %T, not SQLite's connection", hostkit.DriverConn(dc))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
