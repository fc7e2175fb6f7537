package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/store"
)

const doctorHelp = `
Check the installation and print one line per check:
  config       every setting is valid (the same validation as 'kimi serve'),
               no unknown KIMI_* variables (typos)
  data dir     exists, is writable, and is not open to other users
  database     PRAGMA integrity_check and foreign_key_check pass
  schema       the tables, indexes, triggers and views are exactly what the
               migrations create at the database's version (an added trigger
               or view is refused), and the version is not newer than this
               binary
  libc         modernc.org/libc matches the version modernc.org/sqlite pins
  disk         free space in the data directory and the size of the
               database's WAL (a WAL far past its limit means checkpoints
               are blocked, often by a long-open reader)
Accepts the same flags as 'kimi serve', so a start command can be checked
before it is used. Exits 1 when any check fails; warnings alone exit 0.`

// lowDiskBytes is the free space below which doctor warns.
const lowDiskBytes = 256 << 20

// bigWALBytes is the WAL size above which doctor warns: four times the
// limit past which the store's background checkpointer copies the WAL
// whole and starts it over (store.WALHardLimit, 64 MiB, also the
// journal_size_limit a reset WAL is truncated to), so only a WAL that
// checkpoints cannot shrink.
const bigWALBytes = 4 * store.WALHardLimit

type checkLevel int

const (
	levelOK checkLevel = iota
	levelWarn
	levelFail
)

// String is the level as printed in the report's first column.
func (l checkLevel) String() string {
	return [...]string{"ok", "warn", "FAIL"}[l]
}

// doctorReport collects check results and prints them as they come.
type doctorReport struct {
	w               io.Writer
	warnings, fails int
}

func (r *doctorReport) add(level checkLevel, check, format string, args ...any) {
	switch level {
	case levelWarn:
		r.warnings++
	case levelFail:
		r.fails++
	}
	fmt.Fprintf(r.w, "%-5s %-9s %s\n", level, check, fmt.Sprintf(format, args...))
}

func runDoctor(ctx context.Context, c *cli, args []string) error {
	fs := c.newFlagSet("doctor")
	flags := config.Bind(fs)
	if err := c.parseFlagsOnly(fs, "doctor", args); err != nil {
		return err
	}
	r := &doctorReport{w: c.stdout}
	cfg, cfgErr := c.loadConfig(flags)
	checkConfig(r, cfg, cfgErr, c.environ())
	if cfg.DataDir != "" {
		if checkDataDir(r, cfg.DataDir) {
			checkDatabase(ctx, r, cfg.DBPath())
			checkDisk(r, cfg.DataDir, cfg.DBPath())
		}
	}
	checkLibc(r)
	if mods, err := moduleInfos(c.specs); err != nil {
		r.add(levelFail, "modules", "%v", err)
	} else {
		r.add(levelOK, "modules", "%d module spec(s) valid", len(mods))
	}
	switch {
	case r.fails > 0:
		fmt.Fprintf(c.stdout, "\n%d problem(s), %d warning(s)\n", r.fails, r.warnings)
		return errDoctorFailed
	case r.warnings > 0:
		fmt.Fprintf(c.stdout, "\nno problems, %d warning(s)\n", r.warnings)
	default:
		fmt.Fprintf(c.stdout, "\nno problems found\n")
	}
	return nil
}

// errDoctorFailed is returned when a check failed; the report already says why.
var errDoctorFailed = errors.New("problems found")

func checkConfig(r *doctorReport, cfg config.Config, err error, environ []string) {
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			r.add(levelFail, "config", "%s", line)
		}
	} else {
		r.add(levelOK, "config", "settings are valid (data dir %s, addr %s)", cfg.DataDir, cfg.Addr)
	}
	for _, name := range config.UnknownEnv(environ) {
		r.add(levelWarn, "config", "unknown environment variable %s (a typo?)", name)
	}
}

// checkDataDir reports on the data directory; false means there is nothing
// further to check in it.
func checkDataDir(r *doctorReport, dir string) bool {
	abs, _ := filepath.Abs(dir)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.add(levelWarn, "data dir", "%s does not exist yet; 'kimi serve' creates it", abs)
		return false
	case err != nil:
		r.add(levelFail, "data dir", "%v", err)
		return false
	case !fi.IsDir():
		r.add(levelFail, "data dir", "%s is not a directory", abs)
		return false
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o022 != 0:
		r.add(levelFail, "data dir", "%s (mode %#o) is writable by other users; run chmod 700 %s", abs, perm, abs)
	case perm&0o077 != 0:
		r.add(levelWarn, "data dir", "%s (mode %#o) is readable by other users; consider chmod 700 %s", abs, perm, abs)
	default:
		r.add(levelOK, "data dir", "%s (mode %#o)", abs, perm)
	}
	probe, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		r.add(levelFail, "data dir", "%s is not writable: %v", abs, err)
		return true
	}
	probe.Close()
	os.Remove(probe.Name())
	return true
}

func checkDatabase(ctx context.Context, r *doctorReport, dbPath string) {
	fi, err := os.Stat(dbPath)
	if errors.Is(err, os.ErrNotExist) {
		r.add(levelWarn, "database", "no database at %s yet; 'kimi serve' creates it", dbPath)
		return
	}
	if err != nil {
		r.add(levelFail, "database", "%v", err)
		return
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		r.add(levelFail, "database", "%s (mode %#o) is accessible to other users (it holds password hashes); run chmod 600 %s", dbPath, perm, dbPath)
	}
	// A crafted database must not hang the check (see store.RestoreOptions).
	ctx, cancel := context.WithTimeout(ctx, store.DefaultRestoreTimeout)
	defer cancel()
	rep, err := store.Check(ctx, dbPath)
	if err != nil {
		r.add(levelFail, "database", "%v", err)
		return
	}
	if len(rep.Integrity) == 1 && rep.Integrity[0] == "ok" {
		r.add(levelOK, "database", "integrity check ok (%s)", dbPath)
	} else {
		r.add(levelFail, "database", "integrity check failed: %s; restore a backup with 'kimi restore'", strings.Join(rep.Integrity, "; "))
	}
	if rep.ForeignKeyViolations == 0 {
		r.add(levelOK, "database", "foreign key check ok")
	} else {
		r.add(levelFail, "database", "%d foreign key violation(s)", rep.ForeignKeyViolations)
	}
	for _, p := range rep.Schema {
		r.add(levelFail, "schema", "%s; restore a backup with 'kimi restore'", p)
	}
	switch {
	case len(rep.Schema) > 0:
		r.add(levelFail, "schema", "version %d: the tables, indexes, triggers and views differ from what the migrations create", rep.SchemaVersion)
	case rep.SchemaVersion > rep.Latest:
		r.add(levelFail, "schema", "version %d is newer than this binary (%d); upgrade Kimi or restore an older backup", rep.SchemaVersion, rep.Latest)
	case rep.SchemaVersion < rep.Latest:
		r.add(levelWarn, "schema", "version %d, %d pending; 'kimi serve' or 'kimi migrate up' applies them", rep.SchemaVersion, rep.Latest-rep.SchemaVersion)
	default:
		r.add(levelOK, "schema", "version %d (up to date)", rep.SchemaVersion)
	}
	if lock, err := store.AcquireLock(dbPath); err == nil {
		lock.Release()
		r.add(levelOK, "server", "not running on this data directory")
	} else if errors.Is(err, store.ErrLocked) {
		r.add(levelOK, "server", "a 'kimi serve' holds this data directory")
	} else {
		r.add(levelWarn, "server", "cannot check the database lock: %v", err)
	}
}

func checkDisk(r *doctorReport, dir, dbPath string) {
	wal := "no WAL"
	var walSize int64
	switch fi, err := os.Stat(dbPath + "-wal"); {
	case err == nil:
		walSize = fi.Size()
		wal = "WAL " + mib(walSize)
	case !errors.Is(err, os.ErrNotExist):
		wal = fmt.Sprintf("WAL size unknown: %v", err)
	}
	free, err := store.FreeBytes(dir)
	if err != nil {
		r.add(levelWarn, "disk", "cannot read free space: %v; %s", err, wal)
		return
	}
	if free < lowDiskBytes {
		r.add(levelWarn, "disk", "only %s free in %s; backups and migrations need room, and saves fail once it is gone; %s", mib(free), dir, wal)
	} else {
		r.add(levelOK, "disk", "%s free in %s; %s", mib(free), dir, wal)
	}
	if walSize > bigWALBytes {
		r.add(levelWarn, "disk", "the WAL (%s) is %s: checkpoints are not shrinking it; stop programs that keep %s open (a sqlite3 shell, a backup tool), then restart Kimi",
			dbPath+"-wal", mib(walSize), filepath.Base(dbPath))
	}
}

// mib renders a size in whole MiB, or KiB below one MiB.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

func checkLibc(r *doctorReport) {
	have, want, ok := store.LibcPin()
	switch {
	case ok:
		r.add(levelOK, "libc", "modernc.org/libc %s matches modernc.org/sqlite's pin", have)
	case want == "":
		r.add(levelWarn, "libc", "cannot verify modernc.org/libc %q: sqlite version unknown to this build", have)
	default:
		r.add(levelFail, "libc", "modernc.org/libc %s does not match %s pinned by modernc.org/sqlite; rebuild with the pin", have, want)
	}
}
