package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// WithoutSecrets reports a backup written with BackupOptions.WithoutSecrets.
	WithoutSecrets bool `json:"without_secrets,omitempty"`
	// WithoutTranscripts reports a backup written with
	// BackupOptions.WithoutTranscripts.
	WithoutTranscripts bool `json:"without_transcripts,omitempty"`
}

// BackupOptions tunes BackupWith. The zero value is a full backup.
type BackupOptions struct {
	// Progress, when not nil, is called after each copy step with pages done
	// and total.
	Progress func(done, total int)
	// WithoutSecrets leaves out every secret setting (SetSecretSettingTx:
	// the Worldtree keys, later the Discord token). A full backup holds them
	// in plain text.
	WithoutSecrets bool
	// WithoutTranscripts leaves out the assistant's transcripts: every
	// kimi_assistant_messages row and the tool calls' argument and result
	// excerpts (the rows' structure stays). A backup without secrets still
	// holds them.
	WithoutTranscripts bool
	// Actor is recorded in the copy's audit row of a backup without secrets
	// or transcripts
	// ("cli" or the admin's username); empty means "kimi".
	Actor string
}

// ActionBackupWithoutSecrets is the audit action a backup without secrets
// records in its own audit log.
const ActionBackupWithoutSecrets = "store.backup_without_secrets"

// ActionBackupWithoutTranscripts is the audit action a backup without the
// assistant's transcripts records in its own audit log.
const ActionBackupWithoutTranscripts = "store.backup_without_transcripts"

type backuper interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
}

// Backup writes a full consistent online copy of the database to dest; see
// BackupWith. progress, when not nil, is called after each step with pages
// done and total.
func (s *Store) Backup(ctx context.Context, dest string, progress func(done, total int)) error {
	_, err := s.BackupWith(ctx, dest, BackupOptions{Progress: progress})
	return err
}

// BackupWith writes a consistent online copy of the database to dest using
// SQLite's backup API on a read connection, so writers keep working. The copy
// is written to a temporary file and renamed into place only when complete.
// With opts.WithoutSecrets the secret settings are deleted from the copy,
// the deletion is recorded in the copy's audit log and the copy is vacuumed,
// so the secrets' bytes are gone from its free pages too. The result is
// recorded as the last backup.
func (s *Store) BackupWith(ctx context.Context, dest string, opts BackupOptions) (BackupInfo, error) {
	abs, err := filepath.Abs(dest)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("store: backup: %w", err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return BackupInfo{}, fmt.Errorf("store: backup: %s is a directory; name the backup file", abs)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return BackupInfo{}, fmt.Errorf("store: backup: create directory: %w", err)
	}
	if s.isLiveFile(abs) {
		return BackupInfo{}, fmt.Errorf("store: backup: %s is the live database or one of its companion files; choose another file", abs)
	}
	tmp := abs + ".partial-" + randHex(4)
	defer removeDB(tmp)
	// Create the file owner-only before SQLite opens it (SQLite would use
	// 0644 minus the umask): a backup holds password and session hashes.
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("store: backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return BackupInfo{}, fmt.Errorf("store: backup: %w", err)
	}
	if err := s.copyTo(ctx, tmp, opts.Progress); err != nil {
		return BackupInfo{}, err
	}
	if opts.WithoutSecrets || opts.WithoutTranscripts {
		if err := scrubCopy(ctx, tmp, opts); err != nil {
			return BackupInfo{}, fmt.Errorf("store: backup: %w", err)
		}
	}
	if err := syncFile(tmp); err != nil {
		return BackupInfo{}, fmt.Errorf("store: backup: %w", err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		return BackupInfo{}, fmt.Errorf("store: backup: %w", err)
	}
	_ = syncDir(filepath.Dir(abs))
	fi, err := os.Stat(abs)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("store: backup: %w", err)
	}
	info := BackupInfo{Path: abs, At: time.Now().UTC().Truncate(time.Second), Bytes: fi.Size(),
		WithoutSecrets: opts.WithoutSecrets, WithoutTranscripts: opts.WithoutTranscripts}
	b, _ := json.Marshal(info)
	if err := s.SetSetting(ctx, settingLastBackup, string(b)); err != nil {
		// The backup itself is complete and usable; only the bookkeeping failed
		// (for example a read-only maintenance open).
		s.log.Warn("record last backup", "err", err)
	}
	return info, nil
}

// scrubCopy deletes from the backup copy at path what opts leaves out (the
// secret settings, the assistant's transcripts), records each in the copy's
// audit log and vacuums it. secure_delete zeroes the deleted cells in the
// pages the delete rewrites, and VACUUM rebuilds the file without free
// pages, so no byte of what was left out stays in the file.
func scrubCopy(ctx context.Context, path string, opts BackupOptions) error {
	actor := opts.Actor
	if actor == "" {
		actor = "kimi"
	}
	db, err := openFile(path)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "PRAGMA secure_delete = ON"); err != nil {
		return fmt.Errorf("scrub copy: %w", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("scrub copy: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if opts.WithoutSecrets {
		if err := removeSecretsTx(ctx, tx, actor); err != nil {
			return err
		}
	}
	if opts.WithoutTranscripts {
		if err := removeTranscriptsTx(ctx, tx, actor); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("scrub copy: %w", err)
	}
	if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("scrub copy: vacuum: %w", err)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("scrub copy: checkpoint: %w", err)
	}
	return db.Close()
}

// removeSecretsTx deletes every secret setting from a backup copy and
// records that in the copy's audit log.
func removeSecretsTx(ctx context.Context, tx *sql.Tx, actor string) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM kimi_settings WHERE secret = 1`)
	if err != nil {
		return fmt.Errorf("remove secrets: %w", err)
	}
	n, _ := res.RowsAffected()
	return AuditTx(ctx, tx, AuditEntry{Actor: actor, Action: ActionBackupWithoutSecrets, Target: "settings",
		Detail: fmt.Sprintf("backup written without secrets: %d secret setting(s) left out", n)})
}

// removeTranscriptsTx deletes the assistant's transcripts from a backup
// copy (every message row; the tool calls' excerpts are blanked, their rows
// stay) and records that in the copy's audit log.
func removeTranscriptsTx(ctx context.Context, tx *sql.Tx, actor string) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM kimi_assistant_messages`)
	if err != nil {
		return fmt.Errorf("remove transcripts: %w", err)
	}
	msgs, _ := res.RowsAffected()
	res, err = tx.ExecContext(ctx, `UPDATE kimi_assistant_tool_calls SET arguments = '', result = ''
		WHERE arguments != '' OR result != ''`)
	if err != nil {
		return fmt.Errorf("remove transcripts: %w", err)
	}
	calls, _ := res.RowsAffected()
	return AuditTx(ctx, tx, AuditEntry{Actor: actor, Action: ActionBackupWithoutTranscripts, Target: "assistant",
		Detail: fmt.Sprintf("backup written without transcripts: %d message(s) and %d tool-call excerpt(s) left out", msgs, calls)})
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
	// Schema names every table, index, trigger or view that is extra, missing
	// or different from what the migrations produce at SchemaVersion; empty
	// when the schema is exactly Kimi's.
	Schema []string

	schemaErr *SchemaError
}

// OK reports whether the database is sound, has exactly Kimi's schema and
// is not newer than this binary.
func (r CheckReport) OK() bool {
	return len(r.Integrity) == 1 && r.Integrity[0] == "ok" && r.ForeignKeyViolations == 0 &&
		len(r.Schema) == 0 && r.SchemaVersion <= r.Latest
}

// Check compares the schema of the database file at path with the
// migrations' and runs integrity and foreign-key checks. It does not create
// a missing file, and it fires no trigger: the schema is read before
// anything else.
func Check(ctx context.Context, path string) (CheckReport, error) {
	if err := statFile(path); err != nil {
		return CheckReport{}, err
	}
	db, err := openFile(path)
	if err != nil {
		return CheckReport{}, fmt.Errorf("store: check: %w", err)
	}
	defer db.Close()
	return check(ctx, db)
}

// openFile opens the database file at path on one connection, for
// maintenance of a file no Store has open.
func openFile(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(path, false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func check(ctx context.Context, db *sql.DB) (CheckReport, error) {
	var rep CheckReport
	var err error
	if rep.Latest, err = latestVersion(); err != nil {
		return rep, err
	}
	// The schema first: nothing below may run before it is known that no
	// view stands in for a table.
	rep.SchemaVersion, err = verifySchema(ctx, db)
	var se *SchemaError
	switch {
	case errors.As(err, &se):
		rep.Schema, rep.schemaErr = se.Problems, se
	case err != nil:
		return rep, err
	}
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
	return rep, nil
}

// DefaultRestoreTimeout bounds a restore whose RestoreOptions name no
// timeout.
const DefaultRestoreTimeout = 2 * time.Minute

// RestoreOptions tunes RestoreWith. The zero value is ready to use.
type RestoreOptions struct {
	// Timeout bounds the whole restore (DefaultRestoreTimeout when zero).
	// When it passes, the running SQLite statement is interrupted (the driver
	// arms SQLite's progress handler for a cancellable context), the
	// temporary copy is removed and the live database is left as it was.
	Timeout time.Duration
}

// Restore replaces the database at dbPath with the backup file src, bounded
// by DefaultRestoreTimeout; see RestoreWith.
func Restore(ctx context.Context, dbPath, src string) (previous string, err error) {
	return RestoreWith(ctx, dbPath, src, RestoreOptions{})
}

// RestoreWith replaces the database at dbPath with the backup file src. The
// backup is copied beside the database and verified first: its schema
// objects must be exactly what the migrations produce at its version (no
// extra trigger or view, nothing missing), checked before any statement
// that could fire a trigger, then the integrity and foreign-key checks, and
// its schema must be no newer than this binary. Only then is the current
// database checkpointed and kept as <db>.pre-restore-<time>, and the copy
// renamed into place. The restored database starts with no sessions or
// set-up tokens (everyone signs in again) and an audit row recording the
// restore. It refuses while another process holds the database lock (a
// running `kimi serve`). On any failure the temporary copy is removed and
// the live database is left in place. It returns the kept previous file
// ("" when there was none).
func RestoreWith(ctx context.Context, dbPath, src string, opts RestoreOptions) (previous string, err error) {
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
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultRestoreTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	tmp := dbPath + ".restore-" + randHex(4)
	defer removeDB(tmp)
	if err := copyFile(ctx, src, tmp); err != nil {
		return "", fmt.Errorf("store: restore: copy backup: %w", err)
	}
	if err := prepareRestored(ctx, tmp, src); err != nil {
		return "", err
	}
	if _, err := os.Stat(dbPath); err == nil {
		// Fold any WAL content (for example after a crash) into the main file
		// so the kept previous database is complete on its own.
		if err := checkpointFile(ctx, dbPath); err != nil {
			return "", fmt.Errorf("store: restore: checkpoint current database: %w", err)
		}
		previous = fmt.Sprintf("%s.pre-restore-%s", dbPath, time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("store: restore: %w", err)
	}
	if previous != "" {
		if err := os.Rename(dbPath, previous); err != nil {
			return "", fmt.Errorf("store: restore: keep previous database: %w", err)
		}
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		_ = os.Remove(dbPath + suffix)
	}
	if err := os.Rename(tmp, dbPath); err != nil {
		if previous != "" {
			// Put the live database back rather than leave none.
			if rerr := os.Rename(previous, dbPath); rerr != nil {
				return previous, fmt.Errorf("store: restore: %w (and the previous database stays at %s: %v)", err, previous, rerr)
			}
		}
		return "", fmt.Errorf("store: restore: %w", err)
	}
	_ = syncDir(filepath.Dir(dbPath))
	return previous, nil
}

// prepareRestored verifies the copy at tmp of the backup src, signs
// everyone out of it, records the restore and folds its WAL in, leaving a
// self-contained, synced file ready to be renamed into place.
func prepareRestored(ctx context.Context, tmp, src string) error {
	db, err := openFile(tmp)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	defer db.Close()
	rep, err := check(ctx, db)
	if err != nil {
		return fmt.Errorf("store: restore: verify backup: %w", err)
	}
	switch {
	case len(rep.Integrity) != 1 || rep.Integrity[0] != "ok":
		return fmt.Errorf("store: restore: %s failed the integrity check: %v", src, rep.Integrity)
	case rep.ForeignKeyViolations > 0:
		return fmt.Errorf("store: restore: %s has %d foreign key violations", src, rep.ForeignKeyViolations)
	case rep.SchemaVersion > rep.Latest:
		return fmt.Errorf("%w: %s has schema version %d but this Kimi knows only up to %d", ErrSchemaTooNew, src, rep.SchemaVersion, rep.Latest)
	case rep.SchemaVersion == 0 && rep.schemaErr != nil:
		return fmt.Errorf("store: restore: %s is not a Kimi database (no schema version): %w", src, rep.schemaErr)
	case rep.SchemaVersion == 0:
		return fmt.Errorf("store: restore: %s is not a Kimi database (no schema version)", src)
	case rep.schemaErr != nil:
		return fmt.Errorf("%w (refusing to restore %s)", rep.schemaErr, src)
	}
	// Only now, with no trigger but the migrations' own, may statements that
	// write run on the copy.
	if err := signOutRestored(ctx, db, src); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("store: restore: checkpoint %s: %w", tmp, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	return nil
}

// ActionRestore is the audit action recorded in a database restored by
// Restore.
const ActionRestore = "store.restore"

// signOutRestored ends every session and set-up token in the verified
// restored copy and records the restore in its audit log. A backup holds the
// sessions live when it was taken — including ones revoked since (a stolen
// cookie signed out, a password change) — which must not come back.
func signOutRestored(ctx context.Context, db *sql.DB, src string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sign out restored sessions: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	for _, table := range []string{"kimi_sessions", "kimi_setup_tokens"} {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			return fmt.Errorf("sign out restored sessions: %w", err)
		}
	}
	if err := AuditTx(ctx, tx, AuditEntry{Actor: "cli", Action: ActionRestore, Target: filepath.Base(src),
		Detail: "database restored from a backup; all sessions signed out"}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sign out restored sessions: %w", err)
	}
	return nil
}

// checkpointFile opens path alone, folds its WAL into the main file and
// closes it, leaving a self-contained database file.
func checkpointFile(ctx context.Context, path string) error {
	db, err := openFile(path)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		db.Close()
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return db.Close()
}

// copyFile copies src to a new owner-only file dst in chunks, stopping when
// ctx is done.
func copyFile(ctx context.Context, src, dst string) error {
	data, err := os.Open(src)
	if err != nil {
		return err
	}
	defer data.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			out.Close()
			return err
		}
		n, rerr := data.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
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
