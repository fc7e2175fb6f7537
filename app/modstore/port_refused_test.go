package modstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/internal/fulldisk"
	"github.com/kimiapp/kimi/app/store"
)

// TestWriteTxRefusedByTheDatabase: a module's WriteTx on a full disk, under
// another program's lock, or queued behind a write of Kimi's own that holds
// the writer fails with the store's ErrDiskFull or ErrBusy after one bounded
// wait (WriteWait, the queueing included), and updates the write health the
// banner and /readyz read, as a core write does; the next commit clears it.
func TestWriteTxRefusedByTheDatabase(t *testing.T) {
	insert := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES (?)`, string(make([]byte, 8192)))
		return err
	}
	for _, tc := range []struct {
		name   string
		want   error
		break_ func(*testing.T, *fixture) (mend func())
		since  func(store.WriteHealth) time.Time
	}{
		{"full disk", store.ErrDiskFull, func(t *testing.T, f *fixture) func() {
			if err := fulldisk.Fill(context.Background(), f.st); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := fulldisk.Free(context.Background(), f.st); err != nil {
					t.Fatal(err)
				}
			}
		}, func(h store.WriteHealth) time.Time { return h.DiskFullSince }},
		{"another program's lock", store.ErrBusy, func(t *testing.T, f *fixture) func() {
			other, err := sql.Open("sqlite", store.DSN(f.st.Path(), false))
			if err != nil {
				t.Fatal(err)
			}
			held, err := other.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := held.Exec(`UPDATE kimi_settings SET key = key WHERE 0`); err != nil {
				t.Fatal(err)
			}
			return func() { _ = held.Rollback(); other.Close() }
		}, func(h store.WriteHealth) time.Time { return h.BusySince }},
		{"queued behind Kimi's own write", store.ErrBusy, func(t *testing.T, f *fixture) func() {
			holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				done <- f.st.Write(context.Background(), func(*sql.Tx) error {
					close(holding)
					<-release
					return nil
				})
			}()
			<-holding
			return func() {
				close(release)
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		}, func(h store.WriteHealth) time.Time { return h.BusySince }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureStore(t, store.Options{WriteWait: 300 * time.Millisecond}, Options{})
			var once sync.Once
			mendOnce := tc.break_(t, f)
			mend := func() { once.Do(mendOnce) }
			t.Cleanup(mend) // before the store closes, also after a failure
			// A caller's ctx far longer than the budget: the budget ends the wait.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := bounded(t, "WriteTx on a refusing database", func() error { return f.kudos.WriteTx(ctx, insert) })
			if !errors.Is(err, tc.want) {
				t.Fatalf("WriteTx = %v, want %v", err, tc.want)
			}
			if tc.since(f.st.WriteHealth()).IsZero() {
				t.Errorf("write health %+v does not record the refusal", f.st.WriteHealth())
			}
			mend()
			if err := f.kudos.WriteTx(ctx, insert); err != nil {
				t.Fatalf("WriteTx once mended: %v", err)
			}
			if h := f.st.WriteHealth(); h != (store.WriteHealth{}) {
				t.Errorf("write health after a commit = %+v, want cleared", h)
			}
		})
	}
}
