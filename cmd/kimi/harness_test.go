package main

// Tests of the built binary: TestMain builds the real static kimi binary once
// (CGO_ENABLED=0, -trimpath, stripped, version-stamped, exactly like
// `make build`) and the tests run it as a subprocess against data
// directories in t.TempDir().

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
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

// Stamp given to the test binary, checked by TestVersion.
const (
	testVersion = "v9.9.9-test"
	testCommit  = "0123abcdef"
	testDate    = "2026-01-02T03:04:05Z"
)

// kimiBin is the path of the binary built by TestMain.
var kimiBin string

// startTimeout bounds how long a test waits for the server; it is a guard
// against hangs, not an assertion on speed.
const startTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kimi-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "binary tests:", err)
		os.Exit(1)
	}
	kimiBin = filepath.Join(dir, "kimi")
	stamp := "github.com/kimiapp/kimi/app/buildinfo"
	ldflags := fmt.Sprintf("-s -w -X %[1]s.Version=%[2]s -X %[1]s.Commit=%[3]s -X %[1]s.Date=%[4]s", stamp, testVersion, testCommit, testDate)
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", kimiBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "binary tests: go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testEnv is a clean environment for the binary: no KIMI_* from the
// developer's shell, a private data directory and a free port.
func testEnv(dataDir string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "KIMI_DATA_DIR=" + dataDir, "KIMI_ADDR=127.0.0.1:0"}
	return append(env, extra...)
}

// result is a finished CLI run.
type result struct {
	stdout, stderr string
	code           int
}

// runKimi runs the binary to completion with stdin as standard input.
func runKimi(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kimiBin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			res.code = ee.ExitCode()
		} else {
			t.Fatalf("run kimi %v: %v", args, err)
		}
	}
	return res
}

// server is a running `kimi serve`.
type server struct {
	t       *testing.T
	cmd     *exec.Cmd
	addr    string // actual listen address
	url     string // base URL from the ready line
	done    chan struct{}
	waitErr error
	began   time.Time // when the process was started

	mu   sync.Mutex
	logs []string
}

var readyRE = regexp.MustCompile(`msg=ready component=kimi addr=(\S+) url=(\S+)`)

// listeningRE is the line the admin logs once it answers, before the bot
// connects and any module starts.
var listeningRE = regexp.MustCompile(`msg=listening component=kimi addr=(\S+) url=(\S+)`)

// startServer runs `kimi serve` and waits for its ready line.
func startServer(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	return startBinary(t, kimiBin, env, args...)
}

// startBinary runs `<bin> serve` (a custom build) and waits for its ready line.
func startBinary(t *testing.T, bin string, env []string, args ...string) *server {
	t.Helper()
	return startBinaryUntil(t, readyRE, bin, env, args...)
}

// startBinaryUntil runs `<bin> serve` and waits for the first log line
// that until matches; its two groups are the address and the URL (the
// ready line, or the listening line that comes before any module starts).
func startBinaryUntil(t *testing.T, until *regexp.Regexp, bin string, env []string, args ...string) *server {
	t.Helper()
	s := &server{t: t, done: make(chan struct{}), began: time.Now()}
	s.cmd = exec.Command(bin, append([]string{"serve"}, args...)...)
	s.cmd.Env = env
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start kimi serve: %v", err)
	}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs = append(s.logs, line)
			s.mu.Unlock()
			if m := until.FindStringSubmatch(line); m != nil {
				select {
				case ready <- [2]string{m[1], m[2]}:
				default: // only the first match counts
				}
			}
		}
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case m := <-ready:
		s.addr, s.url = m[0], m[1]
	case <-s.done:
		t.Fatalf("kimi serve exited before ready (%v); log:\n%s", s.waitErr, s.log())
	case <-time.After(startTimeout):
		t.Fatalf("kimi serve not ready after %s; log:\n%s", startTimeout, s.log())
	}
	return s
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.logs, "\n")
}

// linesContaining returns the log lines that contain sub.
func (s *server) linesContaining(sub string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.logs {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// stop sends sig and returns the exit code once the process has exited.
func (s *server) stop(sig syscall.Signal) int {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-s.done:
	case <-time.After(startTimeout):
		s.t.Fatalf("kimi serve did not exit after %v; log:\n%s", sig, s.log())
	}
	return s.cmd.ProcessState.ExitCode()
}

// kill9 kills the server without any chance to clean up.
func (s *server) kill9() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatalf("kill -9: %v", err)
	}
	<-s.done
}

// httpClient talks to the test server directly, never through a proxy.
var httpClient = &http.Client{
	Transport:     &http.Transport{Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       30 * time.Second,
}

func (s *server) get(path string) (int, string) {
	s.t.Helper()
	resp, err := httpClient.Get(s.url + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// openDB opens a stopped server's database for verification.
func openDB(t *testing.T, dataDir string) *store.Store {
	t.Helper()
	return openDBFile(t, filepath.Join(dataDir, "kimi.db"))
}

// openDBFile opens the database file at path for verification.
func openDBFile(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// queryStrings returns the first column of every row of query.
func queryStrings(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeFile writes a file in the test's temp dir and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// buildTestdata builds the custom Kimi of ./testdata/<name> (a crash
// test's build through app.MainWith) as a static binary in a temp dir.
func buildTestdata(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/"+name)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
}

// openCounter opens the data directory's database read-only beside the
// running binary (closed at the test's end) and returns it with a helper
// that runs a count query, failing the test on an error.
func openCounter(t *testing.T, dbPath string) (*sql.DB, func(q string, args ...any) int) {
	t.Helper()
	ro, err := sql.Open("sqlite", store.DSN(dbPath, true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	return ro, func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := ro.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
}
