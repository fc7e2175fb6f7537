package store

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openCheckpointTest opens a store at a new path with the given
// checkpoint thresholds and a table of rows holding a page-sized blob.
func openCheckpointTest(t testing.TB, path string, frames int, walLimit int64) *Store {
	t.Helper()
	st, err := Open(context.Background(), path, Options{CheckpointFrames: frames, WALLimit: walLimit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Writer().Exec(`CREATE TABLE IF NOT EXISTS ck (id INTEGER PRIMARY KEY, v BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return st
}

// writeRows commits n transactions of one row each, ids from first on.
func writeRows(t testing.TB, st *Store, first, n int) {
	t.Helper()
	ctx := context.Background()
	blob := make([]byte, 3000) // about one page a row
	for i := first; i < first+n; i++ {
		if err := st.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO ck (id, v) VALUES (?, ?)`, i, blob)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitCheckpoints waits until the checkpointer has run at least n
// passive checkpoints and is idle after them: nothing signalled, nothing
// running, no quiet timer, no frames left uncopied.
func waitCheckpoints(t testing.TB, st *Store, n int64) CheckpointStats {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		s := st.Checkpoints()
		c := st.ckpt
		if s.Passive >= n && len(c.wake) == 0 && !c.running.Load() && !c.armed.Load() && c.frames.Load() == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoints: %+v, want %d passive", s, n)
		}
	}
}

// walFrames is the WAL's frames now (a PASSIVE checkpoint run by the test
// itself on the writer: it reports the log's size).
func walFrames(t testing.TB, st *Store) (log, copied int64) {
	t.Helper()
	// -1: the checkpointer's own checkpoint ran at the same moment.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		var busy int
		if err := st.Writer().QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &copied); err != nil {
			t.Fatal(err)
		}
		if log >= 0 || time.Now().After(deadline) {
			return log, copied
		}
	}
}

// TestWriterNeverCheckpointsInline: the writer's automatic checkpoint is
// off (a commit never copies the WAL), the readers never write.
func TestWriterNeverCheckpointsInline(t *testing.T) {
	st := openCheckpointTest(t, filepath.Join(t.TempDir(), "kimi.db"), 0, 0)
	defer st.Close()
	var n int
	if err := st.Writer().QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the writer's wal_autocheckpoint = %d, want 0", n)
	}
}

// TestBackgroundCheckpoints: the checkpointer runs a passive checkpoint
// every threshold of frames. A passive checkpoint that runs beside the
// writes never catches their last frames, so the WAL starts over only
// when the writes pause (bursts: the next write after a pause restarts
// it, with no RESTART) or, under sustained writes, when it passes the hard
// limit and a RESTART copies the rest: its file stays within a few limits.
// A reader holding an old snapshot lets it grow past the limit; the
// RESTARTs its reads outlast are tried again only as the WAL doubles, and
// once the reader lets go the WAL starts over.
func TestBackgroundCheckpoints(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name        string
		walLimit    int64
		bursts      int // bursts of rows/bursts rows with a pause after each
		rows        int
		pin         bool // a reader holds a snapshot during the first half
		wantRestart bool
	}{
		{name: "bursts", bursts: 3, rows: 600},
		{name: "sustained writes", walLimit: limit, bursts: 1, rows: 4000, wantRestart: true},
		{name: "a reader pins a snapshot", walLimit: limit, bursts: 1, rows: 1500, pin: true, wantRestart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "kimi.db")
			st := openCheckpointTest(t, path, 100, tt.walLimit)
			defer st.Close()
			writeRows(t, st, 0, 1)
			next := 1
			if tt.pin {
				pinned, err := st.Reader().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				var n int
				if err := pinned.QueryRow(`SELECT count(*) FROM ck`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				writeRows(t, st, next, tt.rows/2)
				next += tt.rows / 2
				during := waitCheckpoints(t, st, 1)
				if log, _ := walFrames(t, st); log*4120 < tt.walLimit {
					t.Fatalf("with a snapshot pinned the WAL holds %d frames, want past the limit", log)
				}
				// ~9 MB of WAL past a 1 MiB limit: tries at 1, 2, 4, 8 MiB.
				if during.Restart > 6 {
					t.Fatalf("%d RESTARTs while a reader held its snapshot, want a few (the WAL doubling between)", during.Restart)
				}
				if err := pinned.Rollback(); err != nil {
					t.Fatal(err)
				}
			}
			per := (tt.rows - (next - 1)) / tt.bursts
			for range tt.bursts {
				writeRows(t, st, next, per)
				next += per
				waitCheckpoints(t, st, 1)
			}
			s := st.Checkpoints()
			// Wakes that come while a checkpoint runs merge into one.
			if tt.wantRestart != (s.Restart > 0) || s.Failed != 0 || s.Passive < int64(tt.bursts) {
				t.Fatalf("checkpoints %+v: restart wanted %v, a passive one at least per burst", s, tt.wantRestart)
			}
			if tt.walLimit > 0 && !tt.pin {
				// The file keeps its largest size: the limit plus what
				// the writes add while a checkpoint runs (a few MiB
				// here), far below all that was written (49 MB).
				fi, err := os.Stat(path + "-wal")
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("WAL file %d bytes for %d written: %+v", fi.Size(), int64(tt.rows)*3*4096, st.Checkpoints())
				if written := int64(tt.rows) * 3 * 4096; fi.Size() > 8*tt.walLimit {
					t.Fatalf("the WAL file grew to %d bytes with a %d-byte limit, for %d bytes written", fi.Size(), tt.walLimit, written)
				}
			}
			// The pause after the last writes let the checkpoint copy it
			// all: the next write starts the WAL over.
			writeRows(t, st, next, 1)
			if log, copied := walFrames(t, st); log > 10 || copied != log {
				t.Fatalf("after a pause and one more write the WAL holds %d frames (%d copied), want it started over", log, copied)
			}
			var n int
			if err := st.Reader().QueryRow(`SELECT count(*) FROM ck`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != next+1 {
				t.Fatalf("%d rows, want %d", n, next+1)
			}
		})
	}
}

// TestCloseCheckpointsIntoTheDatabase: Close stops the checkpointer and
// copies the WAL into kimi.db (the WAL is empty or gone), and every row is
// there on the next open.
func TestCloseCheckpointsIntoTheDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kimi.db")
	st := openCheckpointTest(t, path, 0, 0)
	writeRows(t, st, 0, 300)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Fatalf("the WAL holds %d bytes after Close", fi.Size())
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	st = openCheckpointTest(t, path, 0, 0)
	defer st.Close()
	var n int
	if err := st.Reader().QueryRow(`SELECT count(*) FROM ck`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 300 {
		t.Fatalf("%d rows after reopening, want 300", n)
	}
}

// crashChildEnv names the data file a re-executed test binary writes to
// (TestKill9DuringBackgroundCheckpoints' child).
const crashChildEnv = "KIMI_STORE_CRASH_CHILD"

// TestMain runs the crash test's child when the environment asks for it.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		os.Exit(crashChild(path))
	}
	os.Exit(m.Run())
}

// crashChild writes rows from the id after the last one in the file on,
// one transaction each, checkpointing every 8 frames (so a checkpoint is
// nearly always running), and prints "ack <id> <passive checkpoints>"
// after each commit returns, until it is killed.
func crashChild(path string) int {
	ctx := context.Background()
	st, err := Open(ctx, path, Options{CheckpointFrames: 8})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := st.Writer().Exec(`CREATE TABLE IF NOT EXISTS ck (id INTEGER PRIMARY KEY, v BLOB NOT NULL)`); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var next int
	if err := st.Reader().QueryRow(`SELECT coalesce(max(id) + 1, 0) FROM ck`).Scan(&next); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	blob := make([]byte, 3000)
	out := bufio.NewWriter(os.Stdout)
	for i := next; ; i++ {
		if err := st.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO ck (id, v) VALUES (?, ?)`, i, blob)
			return err
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintf(out, "ack %d %d\n", i, st.Checkpoints().Passive)
		out.Flush()
	}
}

// TestKill9DuringBackgroundCheckpoints: a process writing rows as fast as
// it can while its checkpointer copies the WAL every 8 frames is killed
// with SIGKILL three times, each after a different number of
// acknowledgements (mid-write and, with checkpoints back to back,
// mid-checkpoint); every row it acknowledged is there afterwards and the
// database passes its checks.
func TestKill9DuringBackgroundCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kimi.db")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	acked := -1
	var passive int64
	for round, after := range []int{150, 700, 2000} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		seen := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "ack" {
				t.Fatalf("child printed %q", sc.Text())
			}
			id, _ := strconv.Atoi(f[1])
			// A round's first row follows the last committed one, which
			// may have been killed before its acknowledgement.
			if id != acked+1 && (seen > 0 || id < acked+1) {
				t.Fatalf("round %d: acknowledged %d after %d", round, id, acked)
			}
			acked = id
			passive, _ = strconv.ParseInt(f[2], 10, 64)
			if seen++; seen == after {
				break
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if seen < after {
			t.Fatalf("round %d: the child stopped after %d acknowledgements: %s", round, seen, stderr.String())
		}
		if passive == 0 {
			t.Fatalf("round %d: no background checkpoint ran in %d writes", round, seen)
		}
	}
	st, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n, maxID int
	if err := st.Reader().QueryRow(`SELECT count(*), max(id) FROM ck`).Scan(&n, &maxID); err != nil {
		t.Fatal(err)
	}
	// Rows past the last acknowledged may have committed unacknowledged.
	if maxID < acked || n != maxID+1 {
		t.Fatalf("%d rows up to id %d after three kills; %d were acknowledged (ids 0–%d, none missing)", n, maxID, acked+1, acked)
	}
	rep, err := Check(context.Background(), path)
	if err != nil || len(rep.Integrity) != 1 || rep.Integrity[0] != "ok" {
		t.Fatalf("check after the kills: %+v %v", rep, err)
	}
}
