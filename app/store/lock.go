package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrLocked reports that another process holds the database lock.
var ErrLocked = errors.New("store: the database is in use by another Kimi process (stop `kimi serve` first)")

// Lock is an exclusive advisory lock on a database, held by `kimi serve` for
// its lifetime and by offline maintenance (restore, migrate up) so the two
// never overlap. Online operations such as backup do not need it.
//
// The lock is a flock(2) on the database's directory itself, not on a lock
// file beside the database: a lock file can be deleted while its holder runs,
// after which a second process creates a fresh file and "holds" the lock too
// (a second server, or a restore under a live one). A non-empty directory
// cannot be removed, and when the whole directory goes the database goes
// with it. Locking kimi.db instead would follow the wrong file after a
// restore renames a new database into place. flock and the POSIX fcntl locks
// SQLite takes on kimi.db are independent on Linux, so the two never
// interfere.
type Lock struct{ f *os.File }

// AcquireLock takes the exclusive lock on the directory holding dbPath
// without waiting. It fails with ErrLocked when another process holds it.
// The kernel drops the lock when the process dies, so a kill -9 never leaves
// a stale lock. The directory must exist.
func AcquireLock(dbPath string) (*Lock, error) {
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		return nil, fmt.Errorf("store: lock: %w", err)
	}
	f, err := os.Open(filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("store: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dbPath)
		}
		return nil, fmt.Errorf("store: lock %s: %w", filepath.Dir(abs), err)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock. It is safe to call on a nil Lock and more than once.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
