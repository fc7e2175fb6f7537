package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/pressly/goose/v3"

	kimi "github.com/kimiapp/kimi"
)

// ReservedTablePrefix is the prefix of every core table and index
// ("kimi_settings", "kimi_sessions", …, and goose's kimi_schema_version). No
// module may take it: a module named "kimi" (or whose table prefix starts
// with "kimi_") is refused by the host's preflight, so a module's
// `<prefix>_<table>` can never name a core table.
const ReservedTablePrefix = "kimi"

// versionTable is goose's ledger of applied core migrations.
const versionTable = ReservedTablePrefix + "_schema_version"

// MigrateReport describes what Migrate did.
type MigrateReport struct {
	// From and To are the schema versions before and after.
	From, To int64
	// Applied lists the migration files applied, in order.
	Applied []string
	// BackupPath is the automatic pre-migration backup, when one was written.
	BackupPath string
}

// MigrationState is one core migration and whether it has been applied.
type MigrationState struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// migrationsFS is a variable so tests can add a migration and simulate an
// upgrade; production always uses the embedded core migrations.
var migrationsFS = kimi.MigrationsFS

func (s *Store) provider() (*goose.Provider, error) {
	// goose runs SQL migrations in a transaction on one held connection, so
	// it works with the single-connection writer (see go-stack-notes §B2).
	p, err := goose.NewProvider(goose.DialectSQLite3, s.writer, migrationsFS(),
		goose.WithTableName(versionTable),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	return p, nil
}

// latestVersion is the newest migration this binary knows.
func latestVersion() (int64, error) {
	entries, err := fs.Glob(migrationsFS(), "*.sql")
	if err != nil {
		return 0, fmt.Errorf("store: list migrations: %w", err)
	}
	var latest int64
	for _, e := range entries {
		v, err := goose.NumericComponent(e)
		if err != nil {
			return 0, fmt.Errorf("store: migration %s: %w", e, err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// dbVersion reads the highest applied version straight from goose's table,
// so a newer database is detected before goose is asked to do anything.
func dbVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var exists int
	if err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?`, versionTable).Scan(&exists); err != nil {
		return 0, fmt.Errorf("store: read schema version: %w", err)
	}
	if exists == 0 {
		return 0, nil
	}
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx,
		`SELECT max(version_id) FROM `+versionTable+` WHERE is_applied`).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: read schema version: %w", err)
	}
	return v.Int64, nil
}

// SchemaVersion returns the database's schema version and the newest one this
// binary knows.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	latest, err = latestVersion()
	if err != nil {
		return 0, 0, err
	}
	current, err = dbVersion(ctx, s.reader)
	return current, latest, err
}

// hasUserTables reports whether the database holds anything worth backing up.
func (s *Store) hasUserTables(ctx context.Context) (bool, error) {
	var n int
	err := s.reader.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'`).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: inspect schema: %w", err)
	}
	return n > 0, nil
}

// Migrate checks the schema and applies pending core migrations. A database
// whose tables, indexes, triggers or views differ from what the migrations
// produce at its version (an added trigger, a table replaced by a view, a
// missing table) is refused with a *SchemaError naming each object, before
// any statement that could fire a trigger runs. A database whose schema is
// newer than this binary is refused with ErrSchemaTooNew. Both are left
// untouched. When migrations are pending on a non-empty database, a backup
// is written first to <data dir>/backups/.
func (s *Store) Migrate(ctx context.Context) (MigrateReport, error) {
	latest, err := latestVersion()
	if err != nil {
		return MigrateReport{}, err
	}
	cur, err := verifySchema(ctx, s.reader)
	if err != nil {
		return MigrateReport{From: cur, To: cur}, err
	}
	rep := MigrateReport{From: cur, To: cur}
	if cur > latest {
		return rep, fmt.Errorf("%w: the database at %s has schema version %d but this Kimi knows only up to %d; upgrade Kimi or restore an older backup",
			ErrSchemaTooNew, s.path, cur, latest)
	}
	if cur == latest {
		s.migrated.Store(true)
		return rep, nil
	}
	nonEmpty, err := s.hasUserTables(ctx)
	if err != nil {
		return rep, err
	}
	if nonEmpty {
		dest := filepath.Join(s.BackupDir(), fmt.Sprintf("kimi-pre-migrate-v%d-%s.db", cur, time.Now().UTC().Format("20060102T150405Z")))
		if err := s.Backup(ctx, dest, nil); err != nil {
			return rep, fmt.Errorf("store: pre-migration backup: %w", err)
		}
		rep.BackupPath = dest
		s.log.Info("wrote pre-migration backup", "path", dest, "from_version", cur, "to_version", latest)
	}
	p, err := s.provider()
	if err != nil {
		return rep, err
	}
	results, err := p.Up(ctx)
	for _, r := range results {
		if r.Error == nil && r.Source != nil {
			rep.Applied = append(rep.Applied, filepath.Base(r.Source.Path))
		}
	}
	if err != nil {
		return rep, fmt.Errorf("store: migrate: %w", err)
	}
	rep.To, err = dbVersion(ctx, s.writer)
	if err != nil {
		return rep, err
	}
	s.migrated.Store(rep.To == latest)
	if len(rep.Applied) > 0 {
		s.log.Info("migrated", "from_version", rep.From, "to_version", rep.To, "applied", len(rep.Applied))
	}
	return rep, nil
}

// MigrationStatus lists every core migration this binary knows with its state.
func (s *Store) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	cur, latest, err := s.SchemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	if cur > latest {
		return nil, fmt.Errorf("%w: database version %d, binary knows %d", ErrSchemaTooNew, cur, latest)
	}
	p, err := s.provider()
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migration status: %w", err)
	}
	out := make([]MigrationState, 0, len(st))
	for _, m := range st {
		out = append(out, MigrationState{
			Version:   m.Source.Version,
			Name:      filepath.Base(m.Source.Path),
			Applied:   m.State == goose.StateApplied,
			AppliedAt: m.AppliedAt,
		})
	}
	return out, nil
}

// BackupDir is where automatic backups go: a "backups" directory beside the
// database file.
func (s *Store) BackupDir() string { return filepath.Join(filepath.Dir(s.path), "backups") }

var errNoFile = errors.New("store: no such database file")

func statFile(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s", errNoFile, path)
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("store: %s is not a regular file", path)
	}
	return nil
}
