package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
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
