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
