package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testCLI builds a cli with a fixed environment and standard input.
func testCLI(vars map[string]string, stdin string) (*cli, *syncBuffer, *syncBuffer) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	return &cli{
		stdin:  strings.NewReader(stdin),
		stdout: out, stderr: errOut,
		env: config.Env{
			Getenv:   func(k string) string { return vars[k] },
			ReadFile: os.ReadFile,
		},
		environ:       func() []string { return environ },
		stdinTerminal: func() bool { return false },
		readPassword:  func() (string, error) { return "", errors.New("no terminal") },
		started:       time.Now(),
	}, out, errOut
}

// TestServeInProcess runs `serve` in-process until its context is cancelled:
// ready line, set-up line, /readyz, graceful stop with exit code 0.
func TestServeInProcess(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0"}, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()

	readyRE := regexp.MustCompile(`msg=ready component=kimi addr=(\S+) url=(\S+)`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; {
		if m := readyRE.FindStringSubmatch(stderr.String()); m != nil {
			url = m[2]
			break
		}
		select {
		case rc := <-code:
			t.Fatalf("serve exited with %d before ready:\n%s", rc, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), url+"/setup?token=") {
		t.Fatalf("no set-up line for %s:\n%s", url, stderr)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz = %d", resp.StatusCode)
	}
	cancel()
	select {
	case rc := <-code:
		if rc != ExitOK {
			t.Fatalf("exit code %d, want 0:\n%s", rc, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	if !strings.Contains(stderr.String(), "database checkpointed and closed") {
		t.Fatalf("no checkpoint on shutdown:\n%s", stderr)
	}
}

func TestAdminPasswordSources(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("from-the-file\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		file      string
		stdin     bool
		input     string
		env       config.Secret
		terminal  []string // answers of the no-echo prompt; nil = not a terminal
		want      string
		wantErr   string
		wantUsage bool
	}{
		{name: "file wins", file: pwFile, env: "from-env", want: "from-the-file"},
		{name: "stdin", stdin: true, input: "from-stdin\nignored\n", env: "from-env", want: "from-stdin"},
		{name: "stdin without newline", stdin: true, input: "no-newline", want: "no-newline"},
		{name: "env", env: "from-env", terminal: []string{"x", "x"}, want: "from-env"},
		{name: "prompt", terminal: []string{"typed-twice", "typed-twice"}, want: "typed-twice"},
		{name: "prompt mismatch", terminal: []string{"one-password", "another-one"}, wantErr: auth.ErrPasswordsDoNotMatch.Error()},
		{name: "empty stdin", stdin: true, input: "\n", wantErr: "--password-stdin: the password is empty"},
		{name: "missing file", file: pwFile + ".nope", wantErr: "--password-file: open "},
		{name: "nothing", wantUsage: true, wantErr: "no password given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, stderr := testCLI(nil, tt.input)
			if tt.terminal != nil {
				answers := tt.terminal
				c.stdinTerminal = func() bool { return true }
				c.readPassword = func() (string, error) {
					a := answers[0]
					answers = answers[1:]
					return a, nil
				}
			}
			got, err := c.adminPassword(config.Config{AdminPassword: tt.env}, tt.file, tt.stdin, "alice")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if errors.Is(err, errUsage) != tt.wantUsage {
					t.Fatalf("usage error = %v, want %v", errors.Is(err, errUsage), tt.wantUsage)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("adminPassword = %q, %v; want %q", got, err, tt.want)
			}
			if tt.terminal != nil && tt.env == "" && !strings.Contains(stderr.String(), "New password for alice: ") {
				t.Fatalf("no prompt on stderr: %q", stderr)
			}
		})
	}
}

func TestParseAllowsFlagsAfterArguments(t *testing.T) {
	c, _, _ := testCLI(nil, "")
	cmd, _ := findCommand("backup")
	fs := c.newFlagSet("backup")
	force := fs.Bool("force", false, "")
	pos, err := c.parse(fs, cmd, []string{"out.db", "--force", "--", "-odd-name"})
	if err != nil {
		t.Fatal(err)
	}
	if !*force || strings.Join(pos, ",") != "out.db,-odd-name" {
		t.Fatalf("force=%v positional=%q", *force, pos)
	}
}

func TestFormatMinutes(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute:                "30m",
		90 * time.Minute:                "1h30m",
		time.Hour:                       "1h",
		29*time.Minute + 59*time.Second: "30m",
	} {
		if got := formatMinutes(d); got != want {
			t.Errorf("formatMinutes(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestProgressPrinter(t *testing.T) {
	tests := []struct {
		name  string
		total int
		want  string
	}{
		{"small database prints nothing", 100, ""},
		{"large database prints every 10%", 10000, "backup:   0% (0/10000 pages)\nbackup:  10% (1024/10000 pages)\nbackup:  20% (2048/10000 pages)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := &progressPrinter{w: &buf}
			for done := 0; done <= 2048 && done <= tt.total; done += 512 {
				p.report(done, tt.total)
			}
			if buf.String() != tt.want {
				t.Fatalf("progress output:\n%q\nwant\n%q", buf.String(), tt.want)
			}
		})
	}
}

func TestModuleInfos(t *testing.T) {
	valid := func(name string) sdk.Spec {
		return sdk.Spec{Name: name, Version: "1.0", APIVersion: sdk.APIVersion,
			Create: func(sdk.LoadContext) (sdk.Module, error) { return nil, nil }}
	}
	infos, err := moduleInfos([]sdk.Spec{valid("alpha"), valid("beta")})
	if err != nil || len(infos) != 2 || infos[1].Name != "beta" || infos[1].Version != "1.0" {
		t.Fatalf("moduleInfos = %+v, %v", infos, err)
	}
	if _, err := moduleInfos([]sdk.Spec{valid("alpha"), valid("alpha")}); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Fatalf("duplicate: %v", err)
	}
	bad := valid("Bad Name")
	if _, err := moduleInfos([]sdk.Spec{bad}); err == nil {
		t.Fatal("an invalid spec was accepted")
	}
	// An invalid spec stops serve before anything is created.
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0"}, "")
	c.specs = []sdk.Spec{bad}
	if code := c.main(context.Background(), nil); code != ExitFailure {
		t.Fatalf("exit %d, want 1:\n%s", code, stderr)
	}
	if _, err := os.Stat(dataDir); err == nil {
		t.Fatal("serve created the data directory despite an invalid module spec")
	}
}

func TestDoctorInProcess(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	c, out, _ := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_LOGLEVEL": "x"}, "")
	if code := c.main(context.Background(), []string{"doctor"}); code != ExitOK {
		t.Fatalf("doctor on a missing data dir: exit %d\n%s", code, out)
	}
	for _, want := range []string{"does not exist yet", "unknown environment variable KIMI_LOGLEVEL", "\nno problems, "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}

	// A database newer than the binary is a failure.
	st, err := store.Open(context.Background(), filepath.Join(dataDir, config.DBFile), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Writer().Exec(`INSERT INTO kimi_schema_version (version_id, is_applied) VALUES (999, 1)`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	c, out, _ = testCLI(map[string]string{"KIMI_DATA_DIR": dataDir}, "")
	if code := c.main(context.Background(), []string{"doctor"}); code != ExitFailure {
		t.Fatalf("doctor on a too-new schema: exit %d\n%s", code, out)
	}
	if !strings.Contains(out.String(), "FAIL  schema    version 999 is newer than this binary") {
		t.Fatalf("doctor output:\n%s", out)
	}
	// And serve refuses it, naming the problem.
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0"}, "")
	if code := c.main(context.Background(), []string{"serve"}); code != ExitFailure || !strings.Contains(stderr.String(), "newer than this binary") {
		t.Fatalf("serve on a too-new schema: exit %d\n%s", code, stderr)
	}
}

// TestCommandsInProcess walks the maintenance commands through one data
// directory: migrate, admin, backup, restore, version, help.
func TestCommandsInProcess(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	backup := filepath.Join(dir, "b.db")
	steps := []struct {
		args   []string
		stdin  string
		code   int
		stdout string
		stderr string
	}{
		{args: []string{"migrate", "status"}, code: ExitFailure, stderr: "no database at"},
		{args: []string{"migrate", "up"}, code: ExitOK, stdout: "applied 00001_core.sql"},
		{args: []string{"migrate", "status"}, code: ExitOK, stdout: "applied"},
		{args: []string{"admin", "create", "--username", "alice", "--password-stdin"}, stdin: "a-good-password\n", code: ExitOK, stdout: `admin "alice" created`},
		{args: []string{"backup", backup}, code: ExitOK, stdout: "backup written: " + backup},
		{args: []string{"backup", backup}, code: ExitFailure, stderr: "already exists"},
		{args: []string{"backup", "--force", backup}, code: ExitOK, stdout: "backup written"},
		{args: []string{"backup", dir}, code: ExitFailure, stderr: "is a directory"},
		{args: []string{"backup", "--force", dir}, code: ExitFailure, stderr: "is a directory"},
		{args: []string{"backup", "--force", filepath.Join(dataDir, config.DBFile+"-wal")}, code: ExitFailure, stderr: "live database"},
		{args: []string{"admin", "reset-password", "--username", "alice", "--password-stdin"}, stdin: "another-password\n", code: ExitOK, stdout: "reset"},
		{args: []string{"restore", backup}, code: ExitOK, stdout: "previous database kept as"},
		{args: []string{"restore", filepath.Join(dir, "missing.db")}, code: ExitFailure, stderr: "no such"},
		{args: []string{"version"}, code: ExitOK, stdout: "commit: "},
		{args: []string{"help"}, code: ExitOK, stdout: "KIMI_DATA_DIR"},
		{args: []string{"help", "doctor"}, code: ExitOK, stdout: "Usage: kimi doctor"},
		{args: []string{"nope"}, code: ExitUsage, stderr: `unknown command "nope"`},
		{args: []string{"migrate", "up", "--log-level", "loud"}, code: ExitUsage, stderr: `config: --log-level: "loud" is not one of debug, info, warn, error`},
	}
	for _, st := range steps {
		c, out, errOut := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_LOG_LEVEL": "warn"}, st.stdin)
		code := c.main(context.Background(), st.args)
		if code != st.code || !strings.Contains(out.String(), st.stdout) || !strings.Contains(errOut.String(), st.stderr) {
			t.Fatalf("kimi %v: exit %d (want %d)\nstdout: %s\nstderr: %s", st.args, code, st.code, out, errOut)
		}
	}
	// The restore brought back the backed-up password hash: alice's reset is undone.
	st, err := store.Open(context.Background(), filepath.Join(dataDir, config.DBFile), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var resets int
	if err := st.Reader().QueryRow(`SELECT count(*) FROM kimi_audit_log WHERE action = ?`, auth.ActionPasswordReset).Scan(&resets); err != nil {
		t.Fatal(err)
	}
	if resets != 0 {
		t.Fatalf("restored database has %d password resets, want 0 (the reset came after the backup)", resets)
	}
}
