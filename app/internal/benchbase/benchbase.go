// Package benchbase holds the baselines the budget benchmarks report
// their figures beside (make bench): measured in the same run, on the same
// kind of store, so a ratio survives a noisy machine. Only benchmarks
// import it.
package benchbase

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// RawCommitRate commits n single-row INSERT transactions through st's
// writer (into a table of its own, created once) and returns the rate per
// second: the raw SQLite commit rate a durable queue is compared with.
func RawCommitRate(b testing.TB, st *store.Store, n int) float64 {
	b.Helper()
	ctx := context.Background()
	if _, err := st.Writer().Exec(`CREATE TABLE IF NOT EXISTS benchraw (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range n {
		if err := st.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO benchraw (v) VALUES (?)`, fmt.Sprintf("row-%d", i))
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}
