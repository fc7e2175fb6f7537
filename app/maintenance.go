package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/store"
)

const migrateHelp = `
status  list the core migrations this binary knows and whether each is applied
up      apply pending migrations now (an automatic backup is written first when
        the database is not empty); refuses while 'kimi serve' runs

'kimi serve' migrates on start, so 'migrate up' is only needed to upgrade
ahead of time. A database migrated by a newer Kimi is refused.`

const backupHelp = `
Write a consistent copy of the database to FILE using SQLite's online backup
API. The server may keep running. The copy is written beside FILE and renamed
into place only when complete. Progress is printed on stderr for large
databases.

A full backup holds the Worldtree API keys (and every other secret setting)
in plain text, besides the password and session hashes: keep it as private
as the server itself. --without-secrets writes a copy with the secret
settings deleted and vacuumed away (recorded in the copy's audit log); after
restoring it, enter the keys again on the Worldtree page.

A backup without secrets still holds the assistant's transcripts: the
members' messages and Kimi's replies, and the tool calls' argument and
result excerpts. --without-transcripts leaves them out (the turn rows and
the usage roll-up, which hold no content, stay); combine both flags for a
copy with neither.`

const restoreHelp = `
Replace the database with the backup FILE. The backup is verified first: its
tables, indexes, triggers and views must be exactly what the migrations
create at its schema version (a backup with an added trigger or view is
refused, naming each object), PRAGMA integrity_check and foreign keys must
pass, and the version must be no newer than this binary. The current database
is kept as kimi.db.pre-restore-<time>. The restore is cut off after --timeout;
a refused or cut-off restore leaves the current database as it was.

Stop 'kimi serve' first: restore refuses while a server holds the lock on the
data directory.`

// maintenanceKeys are the settings the maintenance commands accept as flags.
var maintenanceKeys = []string{config.KeyDataDir, config.KeyLogFormat, config.KeyLogLevel}

// setup parses a maintenance command's flags and loads the settings.
func (c *cli) setup(name string, args []string, extra func(fs *flag.FlagSet)) (config.Config, *slog.Logger, []string, error) {
	cmd, _ := findCommand(name)
	fs := c.newFlagSet(name)
	if extra != nil {
		extra(fs)
	}
	flags := config.Bind(fs, maintenanceKeys...)
	pos, err := c.parse(fs, cmd, args)
	if err != nil {
		return config.Config{}, nil, nil, err
	}
	cfg, err := c.loadConfig(flags)
	if err != nil {
		return config.Config{}, nil, nil, err
	}
	return cfg, newLogger(c.stderr, cfg), pos, nil
}

// openExisting opens the database, refusing to create an empty one by
// accident (a typo in --data-dir should not look like a fresh install).
func openExisting(ctx context.Context, cfg config.Config, logger *slog.Logger) (*store.Store, error) {
	if _, err := os.Stat(cfg.DBPath()); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s (check --data-dir / KIMI_DATA_DIR)", cfg.DBPath())
		}
		return nil, fmt.Errorf("app: open database: %w", err)
	}
	return openStore(ctx, cfg, logger)
}

// openStore opens the database for a one-shot command (one reader is enough).
func openStore(ctx context.Context, cfg config.Config, logger *slog.Logger) (*store.Store, error) {
	return store.Open(ctx, cfg.DBPath(), store.Options{Logger: logger.With("component", "store"), ReadConns: 1})
}

func runMigrate(ctx context.Context, c *cli, args []string) error {
	cfg, logger, pos, err := c.setup("migrate", args, nil)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "status" && pos[0] != "up") {
		return usageError("expected 'status' or 'up'")
	}
	if pos[0] == "status" {
		return migrateStatus(ctx, c, cfg, logger)
	}
	if err := ensureDataDir(cfg.DataDir, appLogger(logger)); err != nil {
		return err
	}
	lock, err := store.AcquireLock(cfg.DBPath())
	if err != nil {
		return err
	}
	defer lock.Release()
	st, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if rep.BackupPath != "" {
		fmt.Fprintf(c.stdout, "pre-migration backup: %s\n", rep.BackupPath)
	}
	if len(rep.Applied) == 0 {
		fmt.Fprintf(c.stdout, "schema version %d: up to date\n", rep.To)
		return nil
	}
	for _, name := range rep.Applied {
		fmt.Fprintf(c.stdout, "applied %s\n", name)
	}
	fmt.Fprintf(c.stdout, "schema version %d -> %d\n", rep.From, rep.To)
	return nil
}

func migrateStatus(ctx context.Context, c *cli, cfg config.Config, logger *slog.Logger) error {
	st, err := openExisting(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	cur, latest, err := st.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "database: %s\nschema version: %d (this binary: %d)\n\n", st.Path(), cur, latest)
	states, err := st.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tNAME\tSTATE\tAPPLIED AT")
	pending := 0
	for _, m := range states {
		state, at := "pending", "-"
		if m.Applied {
			state = "applied"
			if !m.AppliedAt.IsZero() {
				at = m.AppliedAt.UTC().Format(time.RFC3339)
			}
		} else {
			pending++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Version, m.Name, state, at)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if pending > 0 {
		fmt.Fprintf(c.stdout, "\n%d pending: run 'kimi migrate up' or start 'kimi serve'\n", pending)
	}
	return nil
}

func runBackup(ctx context.Context, c *cli, args []string) error {
	var force, withoutSecrets, withoutTranscripts bool
	cfg, logger, pos, err := c.setup("backup", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&force, "force", false, "overwrite FILE if it exists")
		fs.BoolVar(&withoutSecrets, "without-secrets", false, "leave the secret settings (Worldtree keys) out of the copy")
		fs.BoolVar(&withoutTranscripts, "without-transcripts", false, "leave the assistant's transcripts (messages, tool-call excerpts) out of the copy")
	})
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("expected exactly one argument: the backup FILE")
	}
	dest := pos[0]
	if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory; name the backup file, e.g. %s", dest, filepath.Join(dest, "kimi-backup.db"))
	} else if err == nil && !force {
		return fmt.Errorf("%s already exists (use --force to overwrite)", dest)
	}
	st, err := openExisting(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	start := time.Now()
	p := &progressPrinter{w: c.stderr}
	info, err := st.BackupWith(ctx, dest, store.BackupOptions{Progress: p.report, WithoutSecrets: withoutSecrets,
		WithoutTranscripts: withoutTranscripts, Actor: cliActor})
	if err != nil {
		return err
	}
	p.done()
	kind := "full, holds the secrets (Worldtree and model-provider keys, the Discord token) in plain text: keep it private"
	if info.WithoutSecrets {
		kind = "without secrets"
	}
	if info.WithoutTranscripts {
		kind += ", without transcripts"
	} else {
		kind += ", holds the assistant's transcripts"
	}
	fmt.Fprintf(c.stdout, "backup written: %s (%d bytes in %s; %s)\n", info.Path, info.Bytes, time.Since(start).Round(time.Millisecond), kind)
	return nil
}

// progressMinPages is the database size (in pages) from which backup prints
// progress; smaller databases finish before anyone could read it.
const progressMinPages = 4096

// progressPrinter prints backup progress in steps of 10%.
type progressPrinter struct {
	w       io.Writer
	last    int
	printed bool
}

func (p *progressPrinter) report(done, total int) {
	if total < progressMinPages || total <= 0 {
		return
	}
	pct := done * 100 / total
	if pct/10 == p.last/10 && p.printed {
		return
	}
	p.last, p.printed = pct, true
	fmt.Fprintf(p.w, "backup: %3d%% (%d/%d pages)\n", pct, done, total)
}

func (p *progressPrinter) done() {
	if p.printed && p.last < 100 {
		fmt.Fprintf(p.w, "backup: 100%%\n")
	}
}

func runRestore(ctx context.Context, c *cli, args []string) error {
	var timeout time.Duration
	cfg, _, pos, err := c.setup("restore", args, func(fs *flag.FlagSet) {
		fs.DurationVar(&timeout, "timeout", store.DefaultRestoreTimeout, "give up (and leave the current database) after this long")
	})
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("expected exactly one argument: the backup FILE to restore")
	}
	if timeout <= 0 {
		return usageError("--timeout must be positive")
	}
	previous, err := store.RestoreWith(ctx, cfg.DBPath(), pos[0], store.RestoreOptions{Timeout: timeout})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "restored %s into %s\n", pos[0], cfg.DBPath())
	if previous != "" {
		fmt.Fprintf(c.stdout, "previous database kept as %s\n", previous)
	}
	return nil
}
