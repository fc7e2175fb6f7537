package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

func TestVersion(t *testing.T) {
	res := runKimi(t, testEnv(t.TempDir()), "", "version")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{"kimi " + testVersion + "\n", "commit: " + testCommit + "\n", "built:  " + testDate + "\n", "go:     go1."} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		stdout     string // substring of stdout
		stderr     string // substring of stderr
		wantNoData bool   // the command must not create the data directory
	}{
		{args: []string{"-h"}, code: 0, stdout: "Commands:\n  serve"},
		{args: []string{"help"}, code: 0, stdout: "KIMI_ADMIN_PASSWORD / KIMI_ADMIN_PASSWORD_FILE"},
		{args: []string{"help", "backup"}, code: 0, stdout: "Usage: kimi backup [flags] FILE"},
		{args: []string{"serve", "-h"}, code: 0, stdout: "Usage: kimi serve", wantNoData: true},
		{args: []string{"migrate", "-h"}, code: 0, stdout: "Usage: kimi migrate status|up"},
		{args: []string{"backup", "--help"}, code: 0, stdout: "-force"},
		{args: []string{"restore", "-h"}, code: 0, stdout: "Usage: kimi restore"},
		{args: []string{"doctor", "-h"}, code: 0, stdout: "Usage: kimi doctor"},
		{args: []string{"admin", "-h"}, code: 0, stdout: "-password-stdin"},
		{args: []string{"version", "-h"}, code: 0, stdout: "Usage: kimi version"},
		{args: []string{"frobnicate"}, code: 2, stderr: `kimi: unknown command "frobnicate"`, wantNoData: true},
		{args: []string{"serve", "--frob"}, code: 2, stderr: "kimi serve: flag provided but not defined: -frob", wantNoData: true},
		{args: []string{"--frob"}, code: 2, stderr: "kimi serve: flag provided but not defined: -frob"},
		{args: []string{"serve", "extra"}, code: 2, stderr: `kimi serve: unexpected argument "extra"`},
		{args: []string{"backup"}, code: 2, stderr: "kimi backup: expected exactly one argument: the backup FILE"},
		{args: []string{"restore", "a", "b"}, code: 2, stderr: "kimi restore: expected exactly one argument"},
		{args: []string{"migrate", "sideways"}, code: 2, stderr: "kimi migrate: expected 'status' or 'up'"},
		{args: []string{"admin", "delete"}, code: 2, stderr: "kimi admin: expected 'create' or 'reset-password'"},
		{args: []string{"admin", "create", "--password", "x"}, code: 2, stderr: "flag provided but not defined: -password"},
		{args: []string{"version", "now"}, code: 2, stderr: `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			res := runKimi(t, testEnv(dataDir), "", tt.args...)
			if res.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", res.code, tt.code, res.stdout, res.stderr)
			}
			if !strings.Contains(res.stdout, tt.stdout) || !strings.Contains(res.stderr, tt.stderr) {
				t.Fatalf("output mismatch\nstdout: %s\nwant:   %q\nstderr: %s\nwant:   %q", res.stdout, tt.stdout, res.stderr, tt.stderr)
			}
			if tt.code == 2 && !strings.Contains(res.stderr, "kimi") {
				t.Fatalf("usage error without context: %q", res.stderr)
			}
			if _, err := os.Stat(dataDir); tt.wantNoData && err == nil {
				t.Fatal("the command created the data directory")
			}
		})
	}
}

// TestBackupRestoreRoundTrip: an online backup taken while serving restores
// to exactly that state, the previous database is kept, and restore refuses
// while a server holds the database.
func TestBackupRestoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	const pw = "correct-horse-battery"
	env := testEnv(dataDir, "KIMI_ADMIN_PASSWORD="+pw)
	backup := filepath.Join(dir, "backups", "kimi-backup.db")

	s := startServer(t, env)
	res := runKimi(t, env, "", "backup", backup)
	if res.code != 0 || !strings.Contains(res.stdout, "backup written: "+backup) {
		t.Fatalf("online backup: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := runKimi(t, env, "", "backup", backup); res.code != 1 || !strings.Contains(res.stderr, "already exists (use --force to overwrite)") {
		t.Fatalf("backup over an existing file: exit %d %s", res.code, res.stderr)
	}
	if res := runKimi(t, env, "", "restore", backup); res.code != 1 || !strings.Contains(res.stderr, "in use by another Kimi process") {
		t.Fatalf("restore while serving: exit %d %s", res.code, res.stderr)
	}
	if res := runKimi(t, env, "", "migrate", "up"); res.code != 1 || !strings.Contains(res.stderr, "in use by another Kimi process") {
		t.Fatalf("migrate up while serving: exit %d %s", res.code, res.stderr)
	}
	// A change after the backup, made while the server runs.
	if res := runKimi(t, env, pw+"\n", "admin", "create", "--username", "later", "--password-stdin"); res.code != 0 {
		t.Fatalf("admin create: exit %d %s", res.code, res.stderr)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}

	res = runKimi(t, env, "", "restore", backup)
	if res.code != 0 || !strings.Contains(res.stdout, "previous database kept as ") {
		t.Fatalf("restore: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	_, previous, _ := strings.Cut(res.stdout, "previous database kept as ")
	previous = strings.TrimSpace(previous)

	st := openDB(t, dataDir)
	if got := queryStrings(t, st.Reader(), `SELECT username FROM kimi_admins ORDER BY id`); strings.Join(got, ",") != "admin" {
		t.Fatalf("admins after restore = %q, want only the backed-up admin", got)
	}
	kept := queryStrings(t, openDBFile(t, previous).Reader(), `SELECT username FROM kimi_admins ORDER BY id`)
	if strings.Join(kept, ",") != "admin,later" {
		t.Fatalf("kept previous database has admins %q, want admin,later", kept)
	}

	// A file that is not a Kimi database is refused before anything changes.
	junk := writeFile(t, "junk.db", strings.Repeat("not sqlite ", 100))
	if res := runKimi(t, env, "", "restore", junk); res.code != 1 {
		t.Fatalf("restore of junk: exit %d %s", res.code, res.stderr)
	}
	if got := queryStrings(t, st.Reader(), `SELECT username FROM kimi_admins`); len(got) != 1 {
		t.Fatalf("a refused restore changed the database: %q", got)
	}
}

// TestDoctor passes on a fresh database and fails, naming the problem, on a
// data directory open to others or a corrupt database.
func TestDoctor(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, dataDir string)
		env    []string
		code   int
		want   string
	}{
		{name: "fresh database", code: 0, want: "no problems found"},
		{name: "world-writable data dir", code: 1, want: "is writable by other users",
			break_: func(t *testing.T, d string) { chmod(t, d, 0o777) }},
		{name: "database readable by others", code: 1, want: "is accessible to other users",
			break_: func(t *testing.T, d string) { chmod(t, filepath.Join(d, "kimi.db"), 0o644) }},
		{name: "corrupt database", code: 1, want: "FAIL  database",
			break_: func(t *testing.T, d string) { corrupt(t, filepath.Join(d, "kimi.db")) }},
		{name: "invalid setting", code: 1, want: `FAIL  config    config: KIMI_LOG_FORMAT: "xml" is not one of text, json`,
			env: []string{"KIMI_LOG_FORMAT=xml"}},
		{name: "typo in a variable is a warning", code: 0, want: "warn  config    unknown environment variable KIMI_LOG_LEVL (a typo?)",
			env: []string{"KIMI_LOG_LEVL=debug"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			env := testEnv(dataDir)
			if res := runKimi(t, env, "correct-horse-battery\n", "admin", "create", "--password-stdin"); res.code != 0 {
				t.Fatalf("admin create: %d %s", res.code, res.stderr)
			}
			s := startServer(t, env)
			if code := s.stop(syscall.SIGTERM); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if tt.break_ != nil {
				tt.break_(t, dataDir)
			}
			res := runKimi(t, append(env, tt.env...), "", "doctor")
			if res.code != tt.code || !strings.Contains(res.stdout, tt.want) {
				t.Fatalf("doctor exit %d (want %d), want %q in:\n%s%s", res.code, tt.code, tt.want, res.stdout, res.stderr)
			}
			for _, check := range []string{"libc", "schema", "disk"} {
				if tt.code == 0 && !strings.Contains(res.stdout, "ok    "+check) {
					t.Errorf("doctor did not report %s ok:\n%s", check, res.stdout)
				}
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// corrupt overwrites the middle pages of a database file with garbage.
func corrupt(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 1024))
	for off := int64(4096); off+int64(len(junk)) <= fi.Size(); off += 8192 {
		if _, err := f.WriteAt(junk, off); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMigrateCommands(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	env := testEnv(dataDir)
	if res := runKimi(t, env, "", "migrate", "status"); res.code != 1 || !strings.Contains(res.stderr, "no database at ") {
		t.Fatalf("status without a database: exit %d %s", res.code, res.stderr)
	}
	res := runKimi(t, env, "", "migrate", "up")
	if res.code != 0 || !strings.Contains(res.stdout, "applied 00001_core.sql") {
		t.Fatalf("migrate up: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout, "pre-migration backup") {
		t.Fatal("a backup was written before migrating an empty database")
	}
	if res := runKimi(t, env, "", "migrate", "up"); res.code != 0 || !strings.Contains(res.stdout, "up to date") {
		t.Fatalf("second migrate up: exit %d %s", res.code, res.stdout)
	}
	res = runKimi(t, env, "", "migrate", "status", "--data-dir", dataDir)
	applied := regexp.MustCompile(`(?m)^1\s+00001_core\.sql\s+applied\s`)
	if res.code != 0 || !applied.MatchString(res.stdout) || strings.Contains(res.stdout, "pending") {
		t.Fatalf("migrate status: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

func TestAdminCommands(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	env := testEnv(dataDir)
	pwFile := writeFile(t, "pw", "first-password\n")
	steps := []struct {
		name  string
		env   []string
		stdin string
		args  []string
		code  int
		want  string // substring of stdout+stderr
	}{
		{"create from file on a fresh data dir", nil, "", []string{"admin", "create", "--username", "alice", "--password-file", pwFile}, 0, `admin "alice" created`},
		{"create twice", nil, "", []string{"admin", "create", "--username", "alice", "--password-file", pwFile}, 1, `kimi admin: auth: an admin named "alice" already exists`},
		{"create from env", []string{"KIMI_ADMIN_PASSWORD=env-password", "KIMI_ADMIN_USERNAME=bob"}, "", []string{"admin", "create"}, 0, `admin "bob" created`},
		{"weak password", nil, "short\n", []string{"admin", "create", "--username", "carol", "--password-stdin"}, 1, "password must be at least 8 characters"},
		{"bad username", nil, "long-enough\n", []string{"admin", "create", "--username", "-x", "--password-stdin"}, 1, "username must be"},
		{"no password source and no terminal", nil, "", []string{"admin", "create", "--username", "dave"}, 2, "no password given"},
		{"both sources", nil, "", []string{"admin", "reset-password", "--password-file", pwFile, "--password-stdin"}, 2, "either --password-file or --password-stdin"},
		{"reset", nil, "second-password\n", []string{"admin", "reset-password", "--username", "alice", "--password-stdin"}, 0, "all of its sessions were signed out"},
		{"reset unknown", nil, "second-password\n", []string{"admin", "reset-password", "--username", "zed", "--password-stdin"}, 1, "no admin with that username"},
	}
	for _, st := range steps {
		res := runKimi(t, append(env, st.env...), st.stdin, st.args...)
		if res.code != st.code || !strings.Contains(res.stdout+res.stderr, st.want) {
			t.Fatalf("%s: exit %d (want %d), want %q in:\n%s%s", st.name, res.code, st.code, st.want, res.stdout, res.stderr)
		}
	}
	st := openDB(t, dataDir)
	if got := strings.Join(queryStrings(t, st.Reader(), `SELECT username FROM kimi_admins ORDER BY id`), ","); got != "alice,bob" {
		t.Fatalf("admins = %s", got)
	}
	got := queryStrings(t, st.Reader(), `SELECT actor || ' ' || action || ' ' || target FROM kimi_audit_log ORDER BY id`)
	want := []string{"cli auth.admin_create alice", "cli auth.admin_create bob", "cli auth.password_reset alice"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("audit = %q, want %q", got, want)
	}
}
