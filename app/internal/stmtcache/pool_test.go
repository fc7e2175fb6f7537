package stmtcache

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/app/store"
)

// TestOnPoolPreparesOncePerPool: concurrent first uses of a text on one
// read pool share one statement, another pool gets its own, a text that
// does not compile is an error and is not kept.
func TestOnPoolPreparesOncePerPool(t *testing.T) {
	ctx := context.Background()
	open := func(name string) *store.Store {
		st, err := store.Open(ctx, filepath.Join(t.TempDir(), name), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	a, b := open("a.db"), open("b.db")
	const q = `SELECT ? * 2`
	got := make(chan any, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			st, err := OnPool(ctx, a.Reader(), q)
			if err != nil {
				t.Error(err)
				return
			}
			var n int
			if err := st.QueryRowContext(ctx, 21).Scan(&n); err != nil || n != 42 {
				t.Errorf("query = %d, %v", n, err)
			}
			got <- st
		})
	}
	wg.Wait()
	close(got)
	first := <-got
	for st := range got {
		if st != first {
			t.Fatal("two statements for one text on one pool")
		}
	}
	other, err := OnPool(ctx, b.Reader(), q)
	if err != nil || any(other) == first {
		t.Fatalf("another pool's statement = %p, %v; want its own", other, err)
	}
	if _, err := OnPool(ctx, a.Reader(), `SELEKT 1`); err == nil {
		t.Fatal("a text that does not compile was prepared")
	}
	if _, ok := pooled.Load(poolKey{a.Reader(), `SELEKT 1`}); ok {
		t.Fatal("a failed preparation was kept")
	}
}
