package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// TestServeEmptyDataDir starts on a data directory that does not exist yet,
// checks the probes and the set-up line, and shuts down on a signal with
// exit 0 and a checkpointed database.
func TestServeEmptyDataDir(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			s := startServer(t, testEnv(dataDir))

			if code, body := s.get("/readyz"); code != http.StatusOK {
				t.Fatalf("/readyz = %d %q, want 200", code, body)
			}
			if code, _ := s.get("/healthz"); code != http.StatusOK {
				t.Fatalf("/healthz = %d, want 200", code)
			}
			setup := s.linesContaining("/setup?token=")
			if len(setup) != 1 {
				t.Fatalf("want exactly one set-up line, got %d:\n%s", len(setup), s.log())
			}
			if want := "Open " + s.url + "/setup?token="; !strings.Contains(setup[0], want) ||
				!strings.Contains(setup[0], "to create the admin (expires in 30m)") {
				t.Fatalf("set-up line %q does not match %q ... (expires in 30m)", setup[0], want)
			}

			if code := s.stop(sig); code != 0 {
				t.Fatalf("exit code after %v = %d, want 0; log:\n%s", sig, code, s.log())
			}
			if len(s.linesContaining("database checkpointed and closed")) != 1 {
				t.Fatalf("no checkpoint line in log:\n%s", s.log())
			}
			if fi, err := os.Stat(filepath.Join(dataDir, "kimi.db-wal")); err == nil && fi.Size() != 0 {
				t.Fatalf("WAL has %d bytes after shutdown; want it checkpointed", fi.Size())
			}
			assertPerm(t, dataDir, 0o700)
			assertPerm(t, filepath.Join(dataDir, "kimi.db"), 0o600)
			rep, err := store.Check(context.Background(), filepath.Join(dataDir, "kimi.db"))
			if err != nil || !rep.OK() || rep.SchemaVersion != rep.Latest {
				t.Fatalf("database after shutdown: %+v, %v", rep, err)
			}
		})
	}
}

func assertPerm(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s mode %#o, want %#o", path, got, want)
	}
}

// TestSetupTokenIsNewOnRestart: a restart prints a new token, and the old
// link stops working.
func TestSetupTokenIsNewOnRestart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	tokens := map[string]bool{}
	for range 2 {
		s := startServer(t, testEnv(dataDir))
		lines := s.linesContaining("/setup?token=")
		if len(lines) != 1 {
			t.Fatalf("set-up lines: %q", lines)
		}
		_, tok, _ := strings.Cut(lines[0], "/setup?token=")
		tok, _, _ = strings.Cut(tok, " ")
		tokens[tok] = true
		if code := s.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("exit %d", code)
		}
	}
	if len(tokens) != 2 {
		t.Fatalf("restart printed the same token: %v", tokens)
	}
}

// TestHeadlessBootstrap creates the admin from KIMI_ADMIN_PASSWORD(_FILE)
// instead of printing a set-up link, exactly once.
func TestHeadlessBootstrap(t *testing.T) {
	tests := []struct {
		name     string
		env      func(t *testing.T) []string
		username string
	}{
		{"password env", func(*testing.T) []string { return []string{"KIMI_ADMIN_PASSWORD=correct-horse-battery"} }, "admin"},
		{"password file and username", func(t *testing.T) []string {
			return []string{"KIMI_ADMIN_PASSWORD_FILE=" + writeFile(t, "pw", "correct-horse-battery\n"), "KIMI_ADMIN_USERNAME=root"}
		}, "root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			env := testEnv(dataDir, tt.env(t)...)
			s := startServer(t, env)
			if lines := s.linesContaining("/setup?token="); len(lines) != 0 {
				t.Fatalf("set-up link printed despite headless bootstrap: %q", lines)
			}
			if len(s.linesContaining("admin created from the environment")) != 1 {
				t.Fatalf("no bootstrap line:\n%s", s.log())
			}
			if strings.Contains(s.log(), "correct-horse-battery") {
				t.Fatal("the password appears in the log")
			}
			if code := s.stop(syscall.SIGTERM); code != 0 {
				t.Fatalf("exit %d", code)
			}
			// A restart with the same environment must not create a second
			// admin or fail; it warns that the variable is now ignored.
			s = startServer(t, env)
			if len(s.linesContaining("admin password from the environment is ignored")) != 1 {
				t.Fatalf("no 'ignored' warning on restart:\n%s", s.log())
			}
			if code := s.stop(syscall.SIGTERM); code != 0 {
				t.Fatalf("exit %d", code)
			}
			st := openDB(t, dataDir)
			if got := queryStrings(t, st.Reader(), `SELECT username FROM kimi_admins`); len(got) != 1 || got[0] != tt.username {
				t.Fatalf("admins = %q, want [%s]", got, tt.username)
			}
			got := queryStrings(t, st.Reader(), `SELECT actor || ' ' || action || ' ' || target FROM kimi_audit_log WHERE action = 'auth.admin_create'`)
			if len(got) != 1 || got[0] != "bootstrap auth.admin_create "+tt.username {
				t.Fatalf("audit rows = %q", got)
			}
		})
	}
}

// TestInvalidSettingsStopStartup: one clear message naming the setting, exit 2.
func TestInvalidSettingsStopStartup(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want string // the last line of stderr
	}{
		{"log level", nil, []string{"KIMI_LOG_LEVEL=loud"}, `config: KIMI_LOG_LEVEL: "loud" is not one of debug, info, warn, error`},
		{"log format flag", []string{"--log-format", "xml"}, nil, `config: --log-format: "xml" is not one of text, json`},
		{"addr", nil, []string{"KIMI_ADDR=8080"}, `config: KIMI_ADDR: "8080" is not a host:port listen address (e.g. 127.0.0.1:8080)`},
		{"base url", nil, []string{"KIMI_BASE_URL=kimi.example.com"}, `config: KIMI_BASE_URL: "kimi.example.com" must start with http:// or https://`},
		{"secret twice", nil, []string{"KIMI_METRICS_TOKEN=0123456789abcdef", "KIMI_METRICS_TOKEN_FILE=/x"}, `config: KIMI_METRICS_TOKEN: both KIMI_METRICS_TOKEN and KIMI_METRICS_TOKEN_FILE are set; use one`},
		{"weak bootstrap password", nil, []string{"KIMI_ADMIN_PASSWORD=short"}, `config: KIMI_ADMIN_PASSWORD: auth: password must be at least 8 characters`},
		{"bad bootstrap username", nil, []string{"KIMI_ADMIN_PASSWORD=long-enough-pw", "KIMI_ADMIN_USERNAME=-x"}, `config: KIMI_ADMIN_USERNAME: auth: username must be 1-64 characters: letters, digits, '.', '_', '-' or '@', starting with a letter or digit`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			res := runKimi(t, testEnv(dataDir, tt.env...), "", append([]string{"serve"}, tt.args...)...)
			if res.code != 2 {
				t.Fatalf("exit code %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			if last := lines[len(lines)-1]; last != tt.want {
				t.Fatalf("last stderr line\n got %q\nwant %q", last, tt.want)
			}
		})
	}
}

// TestListenFailureExits1: a port in use is a runtime failure (exit 1) that
// names the address.
func TestListenFailureExits1(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	res := runKimi(t, testEnv(t.TempDir(), "KIMI_ADDR="+ln.Addr().String()), "", "serve")
	if res.code != 1 || !strings.Contains(res.stderr, "listen on "+ln.Addr().String()) {
		t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

// TestKill9LosesNothingAcknowledged: work acknowledged by the server (HTTP
// sign-ins) and by CLI processes (admin accounts) survives a kill -9 of both
// mid-work; the restarted server sees all of it and the database is sound.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	const pw = "correct-horse-battery"
	env := testEnv(dataDir, "KIMI_ADMIN_PASSWORD="+pw)
	s := startServer(t, env)

	// CLI writers run concurrently with the server until it is killed.
	var (
		mu      sync.Mutex
		acked   []string
		current *os.Process
		stopCLI = make(chan struct{})
		cliDone = make(chan struct{})
	)
	go func() {
		defer close(cliDone)
		for i := 0; ; i++ {
			select {
			case <-stopCLI:
				return
			default:
			}
			name := fmt.Sprintf("user%d", i)
			cmd := cliCommand(env, pw, "admin", "create", "--username", name, "--password-stdin")
			if err := cmd.Start(); err != nil {
				return
			}
			mu.Lock()
			current = cmd.Process
			mu.Unlock()
			if cmd.Wait() == nil {
				mu.Lock()
				acked = append(acked, name)
				mu.Unlock()
			}
		}
	}()

	// Sign-ins are acknowledged by a 303 with a session cookie.
	logins := 0
	for range 4 {
		if signIn(t, s, "admin", pw) {
			logins++
		}
	}
	if logins == 0 {
		t.Fatalf("no sign-in succeeded; log:\n%s", s.log())
	}
	deadline := time.Now().Add(startTimeout) // a guard against a hang, not a speed assertion
	// Let at least two CLI writes land, then kill everything mid-work.
	for {
		if time.Now().After(deadline) {
			t.Fatalf("CLI writers acknowledged fewer than 2 admins in %s; server log:\n%s", startTimeout, s.log())
		}
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 2 {
			break
		}
		select {
		case <-cliDone:
			t.Fatal("CLI writer stopped early")
		default:
		}
		signIn(t, s, "nobody", "wrong-password") // more work for the server meanwhile
		time.Sleep(20 * time.Millisecond)        // not a timing assertion: just no busy loop
	}
	close(stopCLI)
	s.kill9()
	mu.Lock()
	if current != nil {
		_ = current.Signal(syscall.SIGKILL)
	}
	mu.Unlock()
	<-cliDone

	t.Logf("killed mid-work after %d acknowledged sign-ins and %d acknowledged CLI admins", logins, len(acked))

	s = startServer(t, env)
	if code, _ := s.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after kill -9 = %d", code)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	st := openDB(t, dataDir)
	admins := strings.Join(queryStrings(t, st.Reader(), `SELECT username FROM kimi_admins ORDER BY id`), ",")
	for _, name := range acked {
		if !strings.Contains(admins+",", name+",") {
			t.Errorf("acknowledged admin %s lost after kill -9 (admins: %s)", name, admins)
		}
	}
	n := queryStrings(t, st.Reader(), `SELECT count(*) FROM kimi_audit_log WHERE action = 'auth.login'`)
	if n[0] != fmt.Sprint(logins) {
		t.Errorf("auth.login audit rows = %s, want %d acknowledged sign-ins", n[0], logins)
	}
	rep, err := store.Check(context.Background(), st.Path())
	if err != nil || !rep.OK() {
		t.Fatalf("database after kill -9: %+v %v", rep, err)
	}
}

func cliCommand(env []string, stdin string, args ...string) *exec.Cmd {
	cmd := exec.Command(kimiBin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin + "\n")
	return cmd
}

// signIn posts the sign-in form the way a browser does (pre-session CSRF
// cookie and field) and reports whether the server acknowledged a session.
func signIn(t *testing.T, s *server, username, password string) bool {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := *httpClient
	c.Jar = jar
	resp, err := c.Get(s.url + "/login")
	if err != nil {
		t.Fatalf("GET /login: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	u, _ := url.Parse(s.url)
	var csrf string
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "kimi_csrf" {
			csrf = ck.Value
		}
	}
	if csrf == "" {
		t.Fatalf("GET /login set no kimi_csrf cookie (status %d)", resp.StatusCode)
	}
	form := url.Values{"username": {username}, "password": {password}, "_csrf": {csrf}}
	resp, err = c.PostForm(s.url+"/login", form)
	if err != nil {
		t.Fatalf("POST /login: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusSeeOther
}

// TestUpgradeSafety: migrations pending on a non-empty database are preceded
// by a backup whose path is logged; a database from a newer Kimi is refused,
// and so is one holding tables the migrations do not create.
func TestUpgradeSafety(t *testing.T) {
	t.Run("pre-migration backup", func(t *testing.T) {
		// The only non-empty database below this binary's one migration that
		// the schema check accepts: goose's ledger at version 0, as
		// 'kimi migrate status' leaves a database file it finds empty.
		dataDir := filepath.Join(t.TempDir(), "data")
		env := testEnv(dataDir)
		seedDB(t, dataDir, `CREATE TABLE scratch (x); DROP TABLE scratch`)
		if res := runKimi(t, env, "", "migrate", "status"); res.code != 0 {
			t.Fatalf("migrate status: %d %s", res.code, res.stderr)
		}
		s := startServer(t, env)
		lines := s.linesContaining("pre-migration backup written")
		if len(lines) != 1 {
			t.Fatalf("want one pre-migration backup line:\n%s", s.log())
		}
		m := regexp.MustCompile(`path=(\S+)`).FindStringSubmatch(lines[0])
		if m == nil {
			t.Fatalf("no path in %q", lines[0])
		}
		if code := s.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("exit %d", code)
		}
		backup := openDBFile(t, m[1])
		if got := queryStrings(t, backup.Reader(), `SELECT version_id FROM kimi_schema_version`); len(got) != 1 || got[0] != "0" {
			t.Fatalf("backup content = %q, want the version-0 ledger", got)
		}
	})
	t.Run("foreign table refused", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "data")
		seedDB(t, dataDir, `CREATE TABLE legacy (note TEXT); INSERT INTO legacy VALUES ('keep me')`)
		res := runKimi(t, testEnv(dataDir), "", "serve")
		if res.code != 1 || !strings.Contains(res.stderr, `store: schema: unexpected table "legacy"`) {
			t.Fatalf("serve on a database with a foreign table: exit %d\n%s", res.code, res.stderr)
		}
		st := openDB(t, dataDir)
		if got := queryStrings(t, st.Reader(), `SELECT note FROM legacy`); len(got) != 1 || got[0] != "keep me" {
			t.Fatalf("the refused database changed: %q", got)
		}
		if got := queryStrings(t, st.Reader(), `SELECT name FROM sqlite_schema WHERE name <> 'legacy'`); len(got) != 0 {
			t.Fatalf("the refused database was migrated: %q", got)
		}
	})
	t.Run("newer schema refused", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "data")
		env := testEnv(dataDir)
		if res := runKimi(t, env, "", "migrate", "up"); res.code != 0 {
			t.Fatalf("migrate up: %d %s", res.code, res.stderr)
		}
		seedDB(t, dataDir, `INSERT INTO kimi_schema_version (version_id, is_applied) VALUES (999, 1)`)
		res := runKimi(t, env, "", "serve")
		if res.code != 1 || !strings.Contains(res.stderr, "schema version 999 but this Kimi knows only up to") {
			t.Fatalf("serve on a newer schema: exit %d\n%s", res.code, res.stderr)
		}
	})
}

// seedDB runs sql on the data directory's database with a plain connection.
func seedDB(t *testing.T, dataDir, query string) {
	t.Helper()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dataDir, "kimi.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
