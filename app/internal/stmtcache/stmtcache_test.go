package stmtcache

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/kimiapp/kimi/app/store"
)

// TestPreparedAfterFirstUse: a statement runs unprepared the first time,
// is prepared after the transaction, and runs prepared from then on with
// the same results; Close empties the cache.
func TestPreparedAfterFirstUse(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := New(st.Writer(), slog.New(slog.DiscardHandler))
	const q = `SELECT ? + 1`
	for i := range 3 {
		var got int
		err := st.Write(ctx, func(tx *sql.Tx) error {
			return c.Tx(tx).QueryRowContext(ctx, q, i).Scan(&got)
		})
		if err != nil || got != i+1 {
			t.Fatalf("round %d: got %d, %v", i, got, err)
		}
		if i == 0 && (!c.Pending() || len(c.stmts) != 0) {
			t.Fatalf("after the first use: pending %v, prepared %d", c.Pending(), len(c.stmts))
		}
		c.PrepareSeen(ctx)
		if c.Pending() || c.stmts[q] == nil {
			t.Fatalf("round %d: not prepared", i)
		}
	}
	c.Close()
	if len(c.stmts) != 0 {
		t.Fatal("Close left statements")
	}
}
