package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
)

// backupStepPages is how many pages one backup step copies (4 MiB at the
// default page size): small enough for smooth progress, large enough to
// finish before a busy writer forces many restarts.
const backupStepPages = 1024

// settingLastBackup records the most recent successful backup.
const settingLastBackup = "store.last_backup"

// BackupInfo describes a finished backup.
type BackupInfo struct {
	Path  string    `json:"path"`
	At    time.Time `json:"at"`
	Bytes int64     `json:"bytes"`
}

type backuper interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
}

// Backup writes a consistent online copy of the database to dest using
// SQLite's backup API on a read connection, so writers keep working. The copy
// is written to a temporary file and renamed into place only when complete;
// progress, when not nil, is called after each step with pages done and total.
// The result is recorded as the last backup.
func (s *Store) Backup(ctx context.Context, dest string, progress func(done, total int)) error {
	abs, err := filepath.Abs(dest)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return fmt.Errorf("store: backup: %s is a directory; name the backup file", abs)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return fmt.Errorf("store: backup: create directory: %w", err)
	}
	if s.isLiveFile(abs) {
		return fmt.Errorf("store: backup: %s is the live database or one of its companion files; choose another file", abs)
	}
	tmp := abs + ".partial-" + randHex(4)
	defer removeDB(tmp)
	// Create the file owner-only before SQLite opens it (SQLite would use
	// 0644 minus the umask): a backup holds password and session hashes.
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if err := s.copyTo(ctx, tmp, progress); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	_ = syncDir(filepath.Dir(abs))
	fi, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	info, _ := json.Marshal(BackupInfo{Path: abs, At: time.Now().UTC().Truncate(time.Second), Bytes: fi.Size()})
	if err := s.SetSetting(ctx, settingLastBackup, string(info)); err != nil {
		// The backup itself is complete and usable; only the bookkeeping failed
		// (for example a read-only maintenance open).
		s.log.Warn("store: record last backup", "err", err)
	}
	return nil
}

// liveSuffixes name the database file and its companions: the rollback
// journal, WAL, shared-memory index and the process lock.
var liveSuffixes = []string{"", "-wal", "-shm", "-journal", ".lock"}

// isLiveFile reports whether abs names the live database or a companion
// file, also through a symlinked or differently spelled directory. Renaming
// a backup over any of them would replace the running database's files.
func (s *Store) isLiveFile(abs string) bool {
	base := filepath.Base(abs)
	dbBase := filepath.Base(s.path)
	match := false
	for _, suffix := range liveSuffixes {
		if base == dbBase+suffix {
			match = true
			break
		}
	}
	if !match {
		return false
	}
	if filepath.Dir(abs) == filepath.Dir(s.path) {
		return true
	}
	destDir, err1 := os.Stat(filepath.Dir(abs))
	liveDir, err2 := os.Stat(filepath.Dir(s.path))
	if err1 != nil || err2 != nil {
		// Unknown: refuse rather than risk replacing the live files.
		return err1 == nil || !errors.Is(err1, os.ErrNotExist)
	}
	return os.SameFile(destDir, liveDir)
}

func (s *Store) copyTo(ctx context.Context, tmp string, progress func(done, total int)) error {
	conn, err := s.reader.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		b, ok := dc.(backuper)
		if !ok {
			return errors.New("store: backup: driver does not support the backup API")
		}
		bk, err := b.NewBackup(fileURI(tmp))
		if err != nil {
			return fmt.Errorf("store: backup: open destination: %w", err)
		}
		for {
			if err := ctx.Err(); err != nil {
				_ = bk.Finish()
				return fmt.Errorf("store: backup: %w", err)
			}
			more, err := bk.Step(backupStepPages)
			if err != nil {
				_ = bk.Finish()
				return fmt.Errorf("store: backup: copy: %w", err)
			}
			if progress != nil {
				total := bk.PageCount()
				done := total - bk.Remaining()
				if !more {
					done = total
				}
				progress(done, total)
			}
			if !more {
				break
			}
		}
		if err := bk.Finish(); err != nil {
			return fmt.Errorf("store: backup: finish: %w", err)
		}
		return nil
	})
}

// LastBackup returns the most recent successful backup, if any.
func (s *Store) LastBackup(ctx context.Context) (BackupInfo, bool, error) {
	v, ok, err := s.Setting(ctx, settingLastBackup)
	if err != nil || !ok {
		return BackupInfo{}, false, err
	}
	var info BackupInfo
	if err := json.Unmarshal([]byte(v), &info); err != nil {
		return BackupInfo{}, false, fmt.Errorf("store: last backup: %w", err)
	}
	return info, true, nil
}

// CheckReport is the result of Check.
type CheckReport struct {
	// Integrity holds the lines of PRAGMA integrity_check; ["ok"] when sound.
	Integrity []string
	// ForeignKeyViolations counts rows reported by PRAGMA foreign_key_check.
	ForeignKeyViolations int
	// SchemaVersion is the database's core schema version; Latest is this binary's.
	SchemaVersion, Latest int64
}

// OK reports whether the database is sound and not newer than this binary.
func (r CheckReport) OK() bool {
	return len(r.Integrity) == 1 && r.Integrity[0] == "ok" && r.ForeignKeyViolations == 0 && r.SchemaVersion <= r.Latest
}

// Check runs integrity and foreign-key checks on the database file at path.
// It does not create a missing file.
func Check(ctx context.Context, path string) (CheckReport, error) {
	if err := statFile(path); err != nil {
		return CheckReport{}, err
	}
	db, err := sql.Open("sqlite", DSN(path, false))
	if err != nil {
		return CheckReport{}, fmt.Errorf("store: check: %w", err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	return check(ctx, db)
}

func check(ctx context.Context, db *sql.DB) (CheckReport, error) {
	var rep CheckReport
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return rep, fmt.Errorf("store: integrity check: %w", err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return rep, fmt.Errorf("store: integrity check: %w", err)
		}
		rep.Integrity = append(rep.Integrity, line)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("store: integrity check: %w", err)
	}
	fk, err := db.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return rep, fmt.Errorf("store: foreign key check: %w", err)
	}
	for fk.Next() {
		rep.ForeignKeyViolations++
	}
	fk.Close()
	if err := fk.Err(); err != nil {
		return rep, fmt.Errorf("store: foreign key check: %w", err)
	}
	if rep.Latest, err = latestVersion(); err != nil {
		return rep, err
	}
	if rep.SchemaVersion, err = dbVersion(ctx, db); err != nil {
		return rep, err
	}
	return rep, nil
}

// Restore replaces the database at dbPath with the backup file src. The
// backup is copied beside the database and verified first (integrity check,
// foreign keys, a Kimi schema no newer than this binary); only then is the
// current database checkpointed and kept as <db>.pre-restore-<time>, and the
// copy renamed into place. The restored database starts with no sessions
// or set-up tokens (everyone signs in again) and an audit row recording the
// restore. It refuses while another process holds the
// database lock (a running `kimi serve`). It returns the kept previous file
// ("" when there was none).
func Restore(ctx context.Context, dbPath, src string) (previous string, err error) {
	dbPath, err = filepath.Abs(dbPath)
	if err != nil {
		return "", fmt.Errorf("store: restore: %w", err)
	}
	// statFile and AcquireLock errors already read "store: …" and name the
	// file; wrapping them again would only repeat the prefix.
	if err := statFile(src); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return "", fmt.Errorf("store: restore: %w", err)
	}
	lock, err := AcquireLock(dbPath)
	if err != nil {
		return "", err
	}
	defer lock.Release()

	tmp := dbPath + ".restore-" + randHex(4)
	defer removeDB(tmp)
	if err := copyFile(src, tmp); err != nil {
		return "", fmt.Errorf("store: restore: copy backup: %w", err)
	}
	rep, err := Check(ctx, tmp)
	if err != nil {
		return "", fmt.Errorf("store: restore: verify backup: %w", err)
	}
	switch {
	case len(rep.Integrity) != 1 || rep.Integrity[0] != "ok":
		return "", fmt.Errorf("store: restore: %s failed the integrity check: %v", src, rep.Integrity)
	case rep.ForeignKeyViolations > 0:
		return "", fmt.Errorf("store: restore: %s has %d foreign key violations", src, rep.ForeignKeyViolations)
	case rep.SchemaVersion == 0:
		return "", fmt.Errorf("store: restore: %s is not a Kimi database (no schema version)", src)
	case rep.SchemaVersion > rep.Latest:
		return "", fmt.Errorf("%w: %s has schema version %d but this Kimi knows only up to %d", ErrSchemaTooNew, src, rep.SchemaVersion, rep.Latest)
	}
	if err := signOutRestored(ctx, tmp, src); err != nil {
		return "", fmt.Errorf("store: restore: %w", err)
	}
	if err := checkpointFile(ctx, tmp); err != nil {
		return "", fmt.Errorf("store: restore: %w", err)
	}
	if _, err := os.Stat(dbPath); err == nil {
		// Fold any WAL content (for example after a crash) into the main file
		// so the kept previous database is complete on its own.
		if err := checkpointFile(ctx, dbPath); err != nil {
			return "", fmt.Errorf("store: restore: checkpoint current database: %w", err)
		}
		previous = fmt.Sprintf("%s.pre-restore-%s", dbPath, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.Rename(dbPath, previous); err != nil {
			return "", fmt.Errorf("store: restore: keep previous database: %w", err)
		}
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		_ = os.Remove(dbPath + suffix)
	}
	if err := syncFile(tmp); err != nil {
		return previous, fmt.Errorf("store: restore: %w", err)
	}
	if err := os.Rename(tmp, dbPath); err != nil {
		return previous, fmt.Errorf("store: restore: %w", err)
	}
	_ = syncDir(filepath.Dir(dbPath))
	return previous, nil
}

// ActionRestore is the audit action recorded in a database restored by
// Restore.
const ActionRestore = "store.restore"

// signOutRestored ends every session and set-up token in the restored copy
// at path and records the restore in its audit log. A backup holds the
// sessions live when it was taken — including ones revoked since (a stolen
// cookie signed out, a password change) — which must not come back.
func signOutRestored(ctx context.Context, path, src string) error {
	db, err := sql.Open("sqlite", DSN(path, false))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sign out restored sessions: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	has := func(table string) (bool, error) {
		var n int
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?`, table).Scan(&n)
		return n == 1, err
	}
	for _, table := range []string{"sessions", "setup_tokens"} {
		ok, err := has(table)
		if err != nil {
			return fmt.Errorf("sign out restored sessions: %w", err)
		}
		if ok {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+table); err != nil {
				return fmt.Errorf("sign out restored sessions: %w", err)
			}
		}
	}
	if ok, err := has("audit_log"); err != nil {
		return fmt.Errorf("record restore: %w", err)
	} else if ok {
		if err := AuditTx(ctx, tx, AuditEntry{Actor: "cli", Action: ActionRestore, Target: filepath.Base(src),
			Detail: "database restored from a backup; all sessions signed out"}); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sign out restored sessions: %w", err)
	}
	return nil
}

// checkpointFile opens path alone, folds its WAL into the main file and
// closes it, leaving a self-contained database file.
func checkpointFile(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", DSN(path, false))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		db.Close()
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return db.Close()
}

func copyFile(src, dst string) error {
	data, err := os.Open(src)
	if err != nil {
		return err
	}
	defer data.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := out.ReadFrom(data); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// removeDB removes a database file and its WAL/SHM companions if present.
func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(path + suffix)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
