package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLockSurvivesLockFileDeletion: deleting kimi.db.lock (what an operator
// "cleaning up" would do) must not let a second holder in.
func TestLockSurvivesLockFileDeletion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kimi.db")
	l1, err := AcquireLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Release()
	if err := os.Remove(path + ".lock"); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if l2, err := AcquireLock(path); !errors.Is(err, ErrLocked) {
		l2.Release()
		t.Fatalf("lock after deleting kimi.db.lock = %v, want ErrLocked", err)
	}
	if _, err := Restore(context.Background(), path, genuineBackup(t, migratedStore(t))); !errors.Is(err, ErrLocked) {
		t.Fatalf("Restore under a held lock = %v, want ErrLocked", err)
	}
}
