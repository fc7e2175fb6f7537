package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"modernc.org/sqlite"
)

// testClock is a controllable clock.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// fullDisk is one way of making the database's disk full for real: fill
// makes the next write fail, free makes room again.
type fullDisk struct {
	name string
	dir  func(t *testing.T) string
	fill func(t *testing.T, st *Store)
	free func(t *testing.T, st *Store)
}

// fullDisks lists the injected full disk (PRAGMA max_page_count: SQLite
// answers SQLITE_FULL as for a full filesystem; runs everywhere) and, where
// this process may mount one, a real 1 MiB tmpfs filled by a ballast file.
func fullDisks(t *testing.T) []fullDisk {
	disks := []fullDisk{{
		name: "max_page_count",
		dir:  func(t *testing.T) string { return t.TempDir() },
		fill: func(t *testing.T, st *Store) {
			var pages int
			if err := st.Writer().QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Writer().Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
				t.Fatal(err)
			}
		},
		free: func(t *testing.T, st *Store) {
			if _, err := st.Writer().Exec("PRAGMA max_page_count = 1073741823"); err != nil {
				t.Fatal(err)
			}
		},
	}}
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.Mkdir(probe, 0o700); err == nil && syscall.Mount("tmpfs", probe, "tmpfs", 0, "size=1m") == nil {
		_ = syscall.Unmount(probe, 0)
		ballast := func(st *Store) string { return filepath.Join(st.DataDir(), "ballast") }
		disks = append(disks, fullDisk{
			name: "tmpfs",
			dir: func(t *testing.T) string {
				dir := filepath.Join(t.TempDir(), "fs")
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
				return dir
			},
			fill: func(t *testing.T, st *Store) {
				f, err := os.Create(ballast(st))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				chunk := make([]byte, 4096)
				for {
					if _, err := f.Write(chunk); err != nil {
						if !errors.Is(err, syscall.ENOSPC) {
							t.Fatal(err)
						}
						return
					}
				}
			},
			free: func(t *testing.T, st *Store) {
				if err := os.Remove(ballast(st)); err != nil {
					t.Fatal(err)
				}
			},
		})
	}
	return disks
}

func TestWriteOnFullDiskIsErrDiskFullAndHealthSaysSince(t *testing.T) {
	for _, disk := range fullDisks(t) {
		t.Run(disk.name, func(t *testing.T) {
			ctx := context.Background()
			clock := &testClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
			var logs syncBuffer
			st, err := Open(ctx, filepath.Join(disk.dir(t), "kimi.db"), Options{
				Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: clock.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if _, err := st.Writer().Exec("CREATE TABLE saved (v BLOB NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			disk.fill(t, st)
			save := func() error {
				return st.Write(ctx, func(tx *sql.Tx) error {
					_, err := tx.Exec("INSERT INTO saved (v) VALUES (?)", bytes.Repeat([]byte("v"), 64<<10))
					return err
				})
			}
			since := clock.Now()
			err = save()
			var se *sqlite.Error
			if !errors.Is(err, ErrDiskFull) || !errors.As(err, &se) || se.Code()&0xff != sqliteFull {
				t.Fatalf("write on a full disk = %v, want ErrDiskFull wrapping SQLITE_FULL", err)
			}
			if h := st.WriteHealth(); !h.DiskFullSince.Equal(since) {
				t.Errorf("WriteHealth after the failure = %+v, want DiskFullSince %v", h, since)
			}
			clock.Add(10 * time.Second)
			if err := save(); !errors.Is(err, ErrDiskFull) {
				t.Fatalf("second write = %v, want ErrDiskFull", err)
			}
			if h := st.WriteHealth(); !h.DiskFullSince.Equal(since) {
				t.Errorf("a later failure moved DiskFullSince: %+v, want %v", h, since)
			}
			if n := strings.Count(logs.String(), "the disk is full; nothing was saved"); n != 1 {
				t.Errorf("%d disk-full lines within a minute, want 1:\n%s", n, logs.String())
			}
			clock.Add(time.Minute)
			if err := save(); !errors.Is(err, ErrDiskFull) {
				t.Fatalf("third write = %v, want ErrDiskFull", err)
			}
			if n := strings.Count(logs.String(), "the disk is full; nothing was saved"); n != 2 || !strings.Contains(logs.String(), "suppressed=1") {
				t.Errorf("a minute later: %d lines, want 2, the second with suppressed=1:\n%s", n, logs.String())
			}
			var rows int
			if err := st.Reader().QueryRow("SELECT count(*) FROM saved").Scan(&rows); err != nil || rows != 0 {
				t.Errorf("rows saved on a full disk = %d (%v), want 0", rows, err)
			}
			disk.free(t, st)
			if err := save(); err != nil {
				t.Fatalf("write after space was freed = %v", err)
			}
			if h := st.WriteHealth(); h != (WriteHealth{}) {
				t.Errorf("WriteHealth after a successful write = %+v, want zero", h)
			}
		})
	}
}

func TestWriteUnderAnotherProcessLockIsErrBusyWithinOneBudget(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	var logs syncBuffer
	const budget = time.Second
	st, err := Open(ctx, path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), WriteWait: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Writer().Exec("CREATE TABLE saved (v TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	// The other program: its own connection on the same file, holding the
	// write lock in an open transaction as a sqlite3 shell's BEGIN would.
	other, err := sql.Open("sqlite", DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	lock := func() *sql.Tx {
		tx, err := other.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO saved (v) VALUES ('other')"); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	save := func() (time.Duration, error) {
		start := time.Now()
		err := st.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec("INSERT INTO saved (v) VALUES ('kimi')")
			return err
		})
		return time.Since(start), err
	}
	held := lock()
	type outcome struct {
		took time.Duration
		err  error
	}
	first := make(chan outcome, 1)
	go func() { took, err := save(); first <- outcome{took, err} }()
	// The second write queues behind the first for the single writer.
	for st.Writer().Stats().InUse == 0 {
		time.Sleep(time.Millisecond)
	}
	took, err := save()
	a := <-first
	for _, o := range []outcome{a, {took, err}} {
		if !errors.Is(o.err, ErrBusy) {
			t.Fatalf("write under another process's lock = %v, want ErrBusy", o.err)
		}
		// One budget in all: the queueing counts, the busy wait gets the rest.
		if o.took >= 2*budget {
			t.Errorf("a write waited %v, want under %v (one budget of %v, queueing included)", o.took, 2*budget, budget)
		}
	}
	if st.WriteHealth().BusySince.IsZero() {
		t.Error("WriteHealth().BusySince is zero after busy failures")
	}
	const warn = "another process holds a write lock on kimi.db"
	if n := strings.Count(logs.String(), warn); n != 1 {
		t.Errorf("%d lock warnings for one episode, want 1:\n%s", n, logs.String())
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := save(); err != nil {
		t.Fatalf("write after the lock was released = %v", err)
	}
	var kimis int
	if err := st.Reader().QueryRow("SELECT count(*) FROM saved WHERE v = 'kimi'").Scan(&kimis); err != nil || kimis != 1 {
		t.Errorf("saved rows = %d (%v), want 1 (only the write after the release)", kimis, err)
	}
	if h := st.WriteHealth(); h != (WriteHealth{}) {
		t.Errorf("WriteHealth after a successful write = %+v, want zero", h)
	}
	held = lock()
	defer held.Rollback()
	if _, err := save(); !errors.Is(err, ErrBusy) {
		t.Fatalf("write under a new lock = %v, want ErrBusy", err)
	}
	if n := strings.Count(logs.String(), warn); n != 2 {
		t.Errorf("%d lock warnings after a second episode, want 2", n)
	}
}

func TestWriteQueuedBehindKimisOwnLongWriteIsErrBusyNamingTheQueue(t *testing.T) {
	ctx := context.Background()
	var logs syncBuffer
	st, err := Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), WriteWait: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	holding, release := make(chan struct{}), make(chan struct{})
	long := make(chan error, 1)
	go func() {
		long <- st.Write(ctx, func(*sql.Tx) error { close(holding); <-release; return nil })
	}()
	<-holding
	err = st.Write(ctx, func(*sql.Tx) error { return nil })
	close(release)
	if !errors.Is(err, ErrBusy) || !errors.Is(err, errQueueWait) {
		t.Fatalf("write queued behind a long write = %v, want ErrBusy from the queue", err)
	}
	if err := <-long; err != nil {
		t.Fatalf("the long write = %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "waited its whole budget for Kimi's single writer connection") ||
		strings.Contains(out, "another process holds a write lock") {
		t.Errorf("the warning does not name the queue (or blames another process):\n%s", out)
	}
}

func TestWriteWhoseCtxEndsBeforeTheBudgetUnderALockIsErrBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	st := openTest(t, path) // the default budget, 5 s
	if _, err := st.Writer().Exec("CREATE TABLE saved (v TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	held, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.Exec("INSERT INTO saved (v) VALUES ('other')"); err != nil {
		t.Fatal(err)
	}
	// A request's own timeout, shorter than the budget: the busy wait gets
	// what is left of it and the answer is still "busy", not a timeout.
	reqCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = st.Write(reqCtx, func(tx *sql.Tx) error { _, err := tx.Exec("INSERT INTO saved (v) VALUES ('kimi')"); return err })
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("write under a lock with a 300 ms ctx = %v, want ErrBusy", err)
	}
	if took := time.Since(start); took >= DefaultWriteWait {
		t.Errorf("the write waited %v: the ctx's deadline did not bound the busy wait", took)
	}
}

// TestWriteThatQueuedGetsOnlyTheRestOfItsBudget: the time a write spends
// queueing for the single writer is taken from its busy wait, so a write
// that queued for most of its budget and then meets another program's
// lock fails when the budget is spent, not a whole busy timeout later.
func TestWriteThatQueuedGetsOnlyTheRestOfItsBudget(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	const budget = time.Second
	st, err := Open(ctx, path, Options{Logger: slog.New(slog.DiscardHandler), WriteWait: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Writer().Exec("CREATE TABLE saved (v TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	// Kimi's single writer connection is taken (as a module's write holds
	// it) while another program holds the database's write lock.
	busyConn, err := st.Writer().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	held, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.Exec("INSERT INTO saved (v) VALUES ('other')"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- st.Write(ctx, func(*sql.Tx) error { return nil }) }()
	for st.Writer().Stats().WaitCount == 0 {
		time.Sleep(time.Millisecond) // until the write queues for the connection
	}
	time.Sleep(budget * 6 / 10) // it queues for most of its budget
	busyConn.Close()
	err = <-done
	took := time.Since(start)
	if !errors.Is(err, ErrBusy) || !errors.Is(err, errLockWait) {
		t.Fatalf("write = %v, want ErrBusy from the lock wait", err)
	}
	if limit := budget + 400*time.Millisecond; took >= limit {
		t.Errorf("the write took %v, want under %v: its busy wait did not get only the rest of its %v budget", took, limit, budget)
	}
}
