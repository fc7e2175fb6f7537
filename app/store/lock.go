package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrLocked reports that another process holds the database lock.
var ErrLocked = errors.New("store: the database is in use by another Kimi process (stop `kimi serve` first)")

// Lock is an exclusive advisory lock on a database, held by `kimi serve` for
// its lifetime and by offline maintenance (restore) so the two never overlap.
// Online operations such as backup do not need it.
type Lock struct{ f *os.File }

// AcquireLock takes the exclusive lock file <dbPath>.lock without waiting.
// It fails with ErrLocked when another process holds it. The kernel drops the
// lock when the process dies, so a kill -9 never leaves a stale lock.
func AcquireLock(dbPath string) (*Lock, error) {
	f, err := os.OpenFile(dbPath+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dbPath)
		}
		return nil, fmt.Errorf("store: lock: %w", err)
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
