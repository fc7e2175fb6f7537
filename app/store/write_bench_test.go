package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkWriteSetting is one small write transaction on the writer, the
// shape of most core writes (its statements pass the writer's statement
// wrapper unarmed).
func BenchmarkWriteSetting(b *testing.B) {
	s := openTest(b, filepath.Join(b.TempDir(), "kimi.db"))
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if err := s.SetSetting(ctx, "bench.key", strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteInserts is a transaction of 100 parameterized inserts, a
// bulk write's shape.
func BenchmarkWriteInserts(b *testing.B) {
	s := openTest(b, filepath.Join(b.TempDir(), "kimi.db"))
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		err := s.Write(ctx, func(tx *sql.Tx) error {
			for range 100 {
				i++
				if err := SetSettingTx(ctx, tx, "bench."+strconv.Itoa(i%500), strconv.Itoa(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrite is one small committed insert through Write (the bounded
// wait: a pooled connection, busy_timeout set to the budget left, BEGIN,
// busy_timeout restored) beside the same insert in a plain BeginTx on the
// writer, so the cost of bounding the wait is the difference.
func BenchmarkWrite(b *testing.B) {
	ctx := context.Background()
	st := openTest(b, filepath.Join(b.TempDir(), "kimi.db"))
	if _, err := st.Writer().Exec("CREATE TABLE t (v INTEGER NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	insert := func(tx *sql.Tx) error { _, err := tx.Exec("INSERT INTO t (v) VALUES (1)"); return err }
	b.Run("Write", func(b *testing.B) {
		for b.Loop() {
			if err := st.Write(ctx, insert); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BeginTx", func(b *testing.B) {
		for b.Loop() {
			tx, err := st.Writer().BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := insert(tx); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCommitLatency is the commit path with the checkpoint off it: b.N
// single-row transactions of a page-sized row through Write, their p50,
// p99 and slowest commit (p50-ms, p99-ms, max-ms), beside the same writes
// on a store whose writer checkpoints inline as SQLite does by default
// (wal_autocheckpoint 1000, which the store turns off: inline-p99-ms,
// inline-max-ms) in the same run. One commit in every few hundred paid
// for the whole checkpoint inline.
func BenchmarkCommitLatency(b *testing.B) {
	ctx := context.Background()
	run := func(st *Store) []time.Duration {
		if _, err := st.Writer().Exec("CREATE TABLE IF NOT EXISTS t (v BLOB NOT NULL)"); err != nil {
			b.Fatal(err)
		}
		blob := make([]byte, 3000)
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			start := time.Now()
			if err := st.Write(ctx, func(tx *sql.Tx) error {
				_, err := tx.Exec("INSERT INTO t (v) VALUES (?)", blob)
				return err
			}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat
	}
	ms := func(lat []time.Duration, p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	background := run(openTest(b, filepath.Join(b.TempDir(), "kimi.db")))
	b.StopTimer()
	inlineStore := openTest(b, filepath.Join(b.TempDir(), "kimi.db"))
	if _, err := inlineStore.Writer().Exec("PRAGMA wal_autocheckpoint = 1000"); err != nil {
		b.Fatal(err)
	}
	inline := run(inlineStore)
	b.ReportMetric(ms(background, 0.50), "p50-ms")
	b.ReportMetric(ms(background, 0.99), "p99-ms")
	b.ReportMetric(ms(background, 1), "max-ms")
	b.ReportMetric(ms(inline, 0.99), "inline-p99-ms")
	b.ReportMetric(ms(inline, 1), "inline-max-ms")
}
