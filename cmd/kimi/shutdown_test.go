package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMFinishesInFlightRequest: a sign-in whose request body is still
// arriving when SIGTERM lands is finished after the listener has closed —
// the admin gets a session, its audit row is durable — and the process then
// exits 0 with the database checkpointed.
func TestSIGTERMFinishesInFlightRequest(t *testing.T) {
	const password = "in-flight password"
	dataDir := t.TempDir()
	s := startServer(t, testEnv(dataDir, "KIMI_ADMIN_PASSWORD="+password))

	// The sign-in form: pre-session CSRF cookie and token.
	resp, err := httpClient.Get(s.url + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(page)
	var cookie string
	for _, ck := range resp.Cookies() {
		if ck.Name == "kimi_csrf" {
			cookie = ck.Name + "=" + ck.Value
		}
	}
	if m == nil || cookie == "" {
		t.Fatalf("no CSRF token or cookie on /login (cookies %v)", resp.Cookies())
	}
	body := url.Values{"_csrf": {string(m[1])}, "username": {"admin"}, "password": {password}}.Encode()

	// Send the headers asking for 100-continue: net/http answers it when the
	// handler first reads the body, which proves the connection was accepted
	// and the request is in a handler (a connection still in the kernel's
	// accept queue when the listener closes is reset, not served). Then send
	// all but the last byte of the body.
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(startTimeout)) // a guard against hangs
	fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
		"Content-Length: %d\r\nCookie: %s\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n", s.addr, len(body), cookie)
	br := bufio.NewReader(conn)
	if cont, err := http.ReadResponse(br, nil); err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("no 100 Continue for the sign-in: %v, %v; log:\n%s", cont, err, s.log())
	}
	if _, err := io.WriteString(conn, body[:len(body)-1]); err != nil {
		t.Fatal(err)
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Wait until shutdown has begun and the listener is closed.
	for i := 0; len(s.linesContaining(`msg="shutting down"`)) == 0; i++ {
		if i > 6000 {
			t.Fatalf("no shutdown line after SIGTERM; log:\n%s", s.log())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			break
		}
		c.Close()
		if i > 6000 {
			t.Fatal("listener still accepting after SIGTERM")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-s.done:
		t.Fatalf("kimi exited with a request in flight; log:\n%s", s.log())
	default:
	}

	// Finish the request: it must be answered in full.
	if _, err := io.WriteString(conn, body[len(body)-1:]); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("in-flight sign-in got no response: %v; log:\n%s", err, s.log())
	}
	res.Body.Close()
	signedIn := false
	for _, ck := range res.Cookies() {
		signedIn = signedIn || ck.Name == "kimi_session" && ck.Value != ""
	}
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" || !signedIn {
		t.Fatalf("in-flight sign-in = %d Location %q signed in %v, want 303 / with a session", res.StatusCode, res.Header.Get("Location"), signedIn)
	}

	<-s.done
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0; log:\n%s", code, s.log())
	}
	if len(s.linesContaining("database checkpointed and closed")) != 1 {
		t.Fatalf("no checkpoint line; log:\n%s", s.log())
	}
	st := openDB(t, dataDir)
	var logins, sessions int
	if err := st.Reader().QueryRowContext(context.Background(),
		`SELECT (SELECT count(*) FROM kimi_audit_log WHERE action = 'auth.login'), (SELECT count(*) FROM kimi_sessions)`).Scan(&logins, &sessions); err != nil {
		t.Fatal(err)
	}
	if logins != 1 || sessions != 1 {
		t.Fatalf("after shutdown: %d login audit rows and %d sessions, want 1 and 1", logins, sessions)
	}
}
