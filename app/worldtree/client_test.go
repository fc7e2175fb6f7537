package worldtree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		base     string
		opts     []Option
		wantBase string
		wantErr  bool
		secret   string // must not appear in the error
	}{
		{name: "plain https", base: "https://w.example", wantBase: "https://w.example"},
		{name: "trailing slash trimmed", base: "https://w.example/api/", wantBase: "https://w.example/api"},
		{name: "http allowed (LAN)", base: "http://personal:8081", wantBase: "http://personal:8081"},
		{name: "empty", base: "", wantErr: true},
		{name: "blank", base: "  ", wantErr: true},
		{name: "unparsable", base: "https://w.example/%zz", wantErr: true},
		{name: "relative", base: "/api", wantErr: true},
		{name: "ftp scheme", base: "ftp://w.example", wantErr: true},
		{name: "no host", base: "https://", wantErr: true},
		{name: "port only", base: "https://:8080", wantErr: true},
		{name: "user info refused", base: "https://bob:hunter2-secret@w.example", wantErr: true, secret: "hunter2-secret"},
		{name: "query refused", base: "https://w.example/?k=1", wantErr: true},
		{name: "empty query refused", base: "https://w.example/?", wantErr: true},
		{name: "fragment refused", base: "https://w.example/#x", wantErr: true},
		{name: "nil option ignored", base: "https://w.example", opts: []Option{nil}, wantBase: "https://w.example"},
		{name: "zero timeout", base: "https://w.example", opts: []Option{WithTimeout(0)}, wantErr: true},
		{name: "nil http client", base: "https://w.example", opts: []Option{WithHTTPClient(nil)}, wantErr: true},
		{name: "nil logger", base: "https://w.example", opts: []Option{WithLogger(nil)}, wantErr: true},
		{name: "tiny body cap", base: "https://w.example", opts: []Option{WithMaxResponseBytes(100)}, wantErr: true},
		{name: "key with newline", base: "https://w.example", opts: []Option{WithKey("sekrit-key\nX-Evil: 1")}, wantErr: true, secret: "sekrit-key"},
		{name: "key with space", base: "https://w.example", opts: []Option{WithKey("sekrit key")}, wantErr: true, secret: "sekrit"},
		{name: "key non-ascii", base: "https://w.example", opts: []Option{WithKey("sekrit-kéy")}, wantErr: true, secret: "sekrit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.base, tt.opts...)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("New(%q) = %v, want an error", tt.base, c)
				}
				if !errors.Is(err, ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "worldtree: new client: ") {
					t.Errorf("err = %v, want a prefixed ErrInvalidArgument", err)
				}
				if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
					t.Errorf("err %q leaks %q", err, tt.secret)
				}
				return
			}
			wantOK(t, err)
			if c.BaseURL() != tt.wantBase {
				t.Errorf("BaseURL = %q, want %q", c.BaseURL(), tt.wantBase)
			}
		})
	}
}

// TestBasePathPrefix checks a base URL path prefix is kept before every endpoint path.
func TestBasePathPrefix(t *testing.T) {
	fs := newFakeServer(t, stub{body: `{}`})
	c := newTestClient(t, fs.URL+"/api/v1/")
	_, err := c.GetPersonaState(t.Context(), "alice:wizard")
	wantOK(t, err)
	assertRequest(t, fs.requests(), getReq("/api/v1/agents/alice:wizard/persona_state"))
	if ua := fs.requests()[0].Header.Get("User-Agent"); ua != userAgent {
		t.Errorf("User-Agent = %q", ua)
	}
}

// TestNoDefaultKey checks a client without a key sends no Authorization (anonymous dev mode).
func TestNoDefaultKey(t *testing.T) {
	fs := newFakeServer(t, stub{body: `{"user_id":"anonymous","scopes":[],"tier":"anonymous"}`})
	c, err := New(fs.URL)
	wantOK(t, err)
	_, err = c.GetMe(t.Context())
	wantOK(t, err)
	assertRequest(t, fs.requests(), wantRequest{method: "GET", path: "/me"})
}

// TestSuccessBodyShapes covers malformed JSON and content types on a success status.
func TestSuccessBodyShapes(t *testing.T) {
	tests := []struct {
		name    string
		stub    stub
		wantErr error
	}{
		{name: "json", stub: stub{body: `{"a":1}`}},
		{name: "json with charset", stub: stub{body: `{"a":1}`, contentType: "application/json; charset=utf-8"}},
		{name: "problem+json", stub: stub{body: `{"a":1}`, contentType: "application/problem+json"}},
		{name: "no content type is tolerated", stub: stub{body: `{"a":1}`, contentType: "-"}},
		{name: "whitespace around value", stub: stub{body: " \n{\"a\":1}\n "}},
		{name: "html page", stub: stub{body: `<html>login</html>`, contentType: "text/html; charset=utf-8"}, wantErr: ErrUnexpectedContentType},
		{name: "json as text/plain", stub: stub{body: `{"a":1}`, contentType: "text/plain"}, wantErr: ErrUnexpectedContentType},
		{name: "broken media type", stub: stub{body: `{"a":1}`, contentType: ";;;"}, wantErr: ErrUnexpectedContentType},
		{name: "truncated json", stub: stub{body: `{"a":`}, wantErr: ErrMalformedResponse},
		{name: "trailing garbage", stub: stub{body: `{"a":1} {"b":2}`}, wantErr: ErrMalformedResponse},
		{name: "empty body", stub: stub{}, wantErr: ErrMalformedResponse},
		{name: "array", stub: stub{body: `[]`}, wantErr: ErrMalformedResponse},
		{name: "string", stub: stub{body: `"hi"`}, wantErr: ErrMalformedResponse},
		{name: "null", stub: stub{body: `null`}, wantErr: ErrMalformedResponse},
		{name: "invalid utf-8 is replaced, not fatal", stub: stub{body: "{\"a\":\"\xff\"}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, tt.stub)
			got, err := newTestClient(t, fs.URL).GetMe(t.Context())
			if tt.wantErr == nil {
				wantOK(t, err)
				if got == nil {
					t.Fatal("nil object without error")
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != nil {
				t.Errorf("got %v with an error", got)
			}
			if !strings.HasPrefix(err.Error(), "worldtree: get me: ") {
				t.Errorf("err = %q, want the worldtree: get me: prefix", err)
			}
		})
	}
}

// TestHugeBodies checks the response size cap on success and error statuses.
func TestHugeBodies(t *testing.T) {
	const limit = 2048
	huge := `{"pad":"` + strings.Repeat("x", limit) + `"}`
	t.Run("success body over cap", func(t *testing.T) {
		fs := newFakeServer(t, stub{body: huge})
		c := newTestClient(t, fs.URL, WithMaxResponseBytes(limit))
		_, err := c.GetPersonaState(t.Context(), "mimir")
		if !errors.Is(err, ErrResponseTooLarge) {
			t.Fatalf("err = %v, want ErrResponseTooLarge", err)
		}
	})
	t.Run("success body exactly at cap", func(t *testing.T) {
		body := `{"p":"` + strings.Repeat("x", limit-8) + `"}`
		if len(body) != limit {
			t.Fatalf("test body is %d bytes", len(body))
		}
		fs := newFakeServer(t, stub{body: body})
		_, err := newTestClient(t, fs.URL, WithMaxResponseBytes(limit)).GetMe(t.Context())
		wantOK(t, err)
	})
	t.Run("204 with a body over cap", func(t *testing.T) {
		fs := newFakeServerFunc(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK) // a misbehaving server; the status check comes first
			_, _ = io.WriteString(w, huge)
		})
		err := newTestClient(t, fs.URL, WithMaxResponseBytes(limit)).DeleteCharacter(t.Context(), "c")
		f := wantAPIFailed(t, err, 200)
		if len(f.Body) != MaxErrorBodyBytes {
			t.Errorf("len(Body) = %d", len(f.Body))
		}
	})
	t.Run("error body over cap keeps status and first bytes", func(t *testing.T) {
		fs := newFakeServer(t, stub{status: 500, body: huge})
		_, err := newTestClient(t, fs.URL, WithMaxResponseBytes(limit)).ListAgents(t.Context())
		f := wantAPIFailed(t, err, 500)
		if string(f.Body) != huge[:MaxErrorBodyBytes] {
			t.Errorf("Body is not the first %d bytes", MaxErrorBodyBytes)
		}
	})
	t.Run("default cap 4 MiB", func(t *testing.T) {
		big := `{"x":"` + strings.Repeat("y", int(DefaultMaxResponseBytes)) + `"}`
		fs := newFakeServer(t, stub{body: big})
		_, err := newTestClient(t, fs.URL).GetCapabilities(t.Context())
		if !errors.Is(err, ErrResponseTooLarge) {
			t.Fatalf("err = %v, want ErrResponseTooLarge", err)
		}
		if !strings.Contains(DescribeError(err), "larger than this client accepts") {
			t.Errorf("DescribeError = %q", DescribeError(err))
		}
	})
}

// TestSlowServer checks every call is bounded by the client timeout and the caller's context.
func TestSlowServer(t *testing.T) {
	// The handler blocks until the client gives up (its request context ends), so no test
	// depends on wall-clock timing beyond the deadline firing at all.
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	slowBody := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"a":`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		opts    []Option
		ctx     func(t *testing.T) context.Context
		wantErr error
	}{
		{name: "client timeout before headers", handler: hang, opts: []Option{WithTimeout(20 * time.Millisecond)}, wantErr: context.DeadlineExceeded},
		{name: "client timeout during body", handler: slowBody, opts: []Option{WithTimeout(20 * time.Millisecond)}, wantErr: context.DeadlineExceeded},
		{
			name: "caller deadline shorter than client timeout", handler: hang,
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			wantErr: context.DeadlineExceeded,
		},
		{
			name: "caller cancels", handler: hang,
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			},
			wantErr: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServerFunc(t, tt.handler)
			c := newTestClient(t, fs.URL, tt.opts...)
			ctx := t.Context()
			if tt.ctx != nil {
				ctx = tt.ctx(t)
			}
			_, err := c.ListSessions(ctx)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if DescribeError(err) == "" {
				t.Error("no description")
			}
			assertNoKeyLeak(t, err)
		})
	}
}

// TestRedirectsNotFollowed checks 3xx answers come back as errors and nothing reaches the target.
func TestRedirectsNotFollowed(t *testing.T) {
	target := newFakeServer(t, stub{body: `{"user_id":"evil"}`})
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, where := range []string{"other host", "same host"} {
			t.Run(fmt.Sprintf("%d %s", status, where), func(t *testing.T) {
				var src *fakeServer
				src = newFakeServerFunc(t, func(w http.ResponseWriter, r *http.Request) {
					loc := target.URL + r.URL.Path
					if where == "same host" {
						loc = src.URL + "/elsewhere" + r.URL.Path
					}
					http.Redirect(w, r, loc, status)
				})
				before := len(target.requests())
				// A caller-supplied client that would follow redirects is overridden.
				follow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
				c := newTestClient(t, src.URL, WithHTTPClient(follow))
				_, err := c.GetSessionBifrost(t.Context(), "s1", adminKey)
				f := wantAPIFailed(t, err, status)
				if f.Path != "/admin/sessions/s1/bifrost" || f.Method != "GET" {
					t.Errorf("error names %s %s", f.Method, f.Path)
				}
				if n := len(src.requests()); n != 1 {
					t.Errorf("source saw %d requests, want 1", n)
				}
				if len(target.requests()) != before {
					t.Error("the redirect target was contacted")
				}
				if follow.CheckRedirect == nil {
					t.Error("the caller's http.Client was modified")
				}
				if !strings.Contains(DescribeError(err), "redirect") {
					t.Errorf("DescribeError = %q", DescribeError(err))
				}
			})
		}
	}
}

// TestAuthOverridesNeverLeak runs default, consumer and admin requests concurrently on one client
// and checks each request carried exactly its own key.
func TestAuthOverridesNeverLeak(t *testing.T) {
	fs := newFakeServerFunc(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sessions":
			writeStub(w, stub{status: 201, body: sessionBody("s", "a", ts, `{}`)})
		default:
			writeStub(w, stub{body: `{}`})
		}
	})
	c := newTestClient(t, fs.URL)
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for range 50 {
		wg.Go(func() {
			_, err := c.CreateSession(t.Context(), "a", WithBifrost(bind, consumerKey))
			errs <- err
		})
		wg.Go(func() { _, err := c.GetMe(t.Context()); errs <- err })
		wg.Go(func() { _, err := c.GetSessionBifrost(t.Context(), "s1", adminKey); errs <- err })
		wg.Go(func() { _, err := c.CreateSession(t.Context(), "a"); errs <- err })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		wantOK(t, err)
	}
	reqs := fs.requests()
	if len(reqs) != 200 {
		t.Fatalf("%d requests, want 200", len(reqs))
	}
	counts := map[string]int{}
	for _, r := range reqs {
		auth := r.Header.Get("Authorization")
		var want string
		switch {
		case r.Path == "/sessions" && bytes.Contains(r.Body, []byte(`"bifrost"`)):
			want = bearer(consumerKey)
		case strings.HasPrefix(r.Path, "/admin/"):
			want = bearer(adminKey)
		default:
			want = bearer(canaryKey)
		}
		if auth != want {
			t.Errorf("%s %s body %s: Authorization %q, want %q", r.Method, r.Path, r.Body, auth, want)
		}
		counts[auth]++
	}
	if counts[bearer(consumerKey)] != 50 || counts[bearer(adminKey)] != 50 || counts[bearer(canaryKey)] != 100 {
		t.Errorf("auth counts = %v", counts)
	}
}

// TestNoKeyInErrorsOrLogs drives failures through a server that echoes the Authorization header
// everywhere it can, and checks no key reaches an error string, a description, a log line or a
// stored body.
func TestNoKeyInErrorsOrLogs(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	echo := newFakeServerFunc(t, func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch r.URL.Path {
		case "/sessions":
			writeStub(w, stub{status: 502, body: `{"error_code":"` + tok + `","detail":{"bifrost_error":"bad ` + tok + `"}}`})
		case "/me":
			writeStub(w, stub{status: 401, body: `{"detail":{"error_code":"` + tok + `"},"echo":"` + tok + `"}`})
		case "/agents":
			writeStub(w, stub{status: 500, body: strings.Repeat("k", 1020) + tok}) // key straddles the 1024 cut
		default:
			writeStub(w, stub{status: 403, body: `{"error_code":"auth_scope_denied","key":"` + tok + `"}`})
		}
	})
	c := newTestClient(t, echo.URL, WithLogger(logger))
	closed := newFakeServer(t, stub{})
	closed.Close()
	dead := newTestClient(t, closed.URL, WithLogger(logger))
	slow := newFakeServerFunc(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	timeout := newTestClient(t, slow.URL, WithLogger(logger), WithTimeout(10*time.Millisecond))

	var errs []error
	collect := func(_ any, err error) { errs = append(errs, err) }
	collect(c.CreateSession(t.Context(), "a", WithBifrost(bind, consumerKey)))
	collect(c.GetMe(t.Context()))
	collect(c.ListAgents(t.Context()))
	collect(c.GetSessionBifrost(t.Context(), "s1", adminKey))
	collect(c.GetPersonaState(t.Context(), "mimir"))
	collect(nil, c.DeleteCharacter(t.Context(), "x"))
	collect(dead.GetMe(t.Context()))
	collect(dead.CreateSession(t.Context(), "a", WithBifrost(bind, consumerKey)))
	collect(timeout.GetSessionBifrost(t.Context(), "s1", adminKey))
	collect(c.CreateSession(t.Context(), "a", WithBifrost(bind, "")))

	keys := []string{canaryKey, consumerKey, adminKey}
	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d: no error", i)
		}
		assertNoKeyLeak(t, err)
		var f *SessionAPIFailedError
		if errors.As(err, &f) {
			for _, k := range keys {
				if bytes.Contains(f.Body, []byte(k)) || strings.Contains(f.Code, k) {
					t.Errorf("call %d: stored body/code leaks a key: %q", i, f.Body)
				}
			}
		}
		var hs *BifrostHandshakeFailedError
		if errors.As(err, &hs) {
			if hs.BifrostError != "bad "+redacted || !bytes.Contains(hs.Body, []byte(redacted)) {
				t.Errorf("call %d: handshake error not redacted: %q %q", i, hs.BifrostError, hs.Body)
			}
			for _, k := range keys {
				if bytes.Contains(hs.Body, []byte(k)) {
					t.Errorf("call %d: handshake body leaks a key", i)
				}
			}
		}
	}
	logger.Info("client", "c", c)
	for _, k := range keys {
		if strings.Contains(logs.String(), k) {
			t.Errorf("logs leak a key:\n%s", logs.String())
		}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			if s := fmt.Sprintf(verb, c); strings.Contains(s, k) {
				t.Errorf("fmt %s of the client leaks the key: %s", verb, s)
			}
		}
	}
	if !strings.Contains(logs.String(), `"msg":"worldtree request"`) || !strings.Contains(logs.String(), `"msg":"worldtree request failed"`) {
		t.Errorf("expected request and failure log lines, got:\n%s", logs.String())
	}
}

func TestParseErrorInfo(t *testing.T) {
	tests := []struct {
		name, body, code, bifrost string
	}{
		{name: "flat", body: `{"error_code":"x"}`, code: "x"},
		{name: "envelope", body: `{"detail":{"error_code":"y"}}`, code: "y"},
		{name: "flat wins over envelope", body: `{"error_code":"x","detail":{"error_code":"y"}}`, code: "x"},
		{name: "bifrost error", body: `{"error_code":"h","detail":{"bifrost_error":"b"}}`, code: "h", bifrost: "b"},
		{name: "string detail", body: `{"detail":"auth_invalid"}`},
		{name: "null detail", body: `{"detail":null}`},
		{name: "array detail (FastAPI validation)", body: `{"detail":[{"loc":["body"],"msg":"m"}]}`},
		{name: "numeric code", body: `{"error_code":5}`},
		{name: "object code", body: `{"detail":{"error_code":{"a":1}}}`},
		{name: "not json", body: `boom`},
		{name: "empty", body: ``},
		{name: "array", body: `[1]`},
		{name: "legacy error key only", body: `{"error":"unknown_agent_id"}`},
		// The real server wraps error bodies in FastAPI's envelope (the seed's 2026-05-28
		// regression): the handshake body then arrives with its own detail one level down.
		{name: "enveloped handshake", body: `{"detail":{"error_code":"bifrost_handshake_failed","detail":{"bifrost_error":"bifrost.auth_rejected"}}}`,
			code: "bifrost_handshake_failed", bifrost: "bifrost.auth_rejected"},
		{name: "enveloped flat bifrost error", body: `{"detail":{"error_code":"bifrost_handshake_failed","bifrost_error":"bifrost.timeout"}}`,
			code: "bifrost_handshake_failed", bifrost: "bifrost.timeout"},
		{name: "enveloped string inner detail", body: `{"detail":{"error_code":"x","detail":"text"}}`, code: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseErrorInfo([]byte(tt.body))
			if got.code != tt.code || got.bifrostError != tt.bifrost {
				t.Errorf("got %+v, want code %q bifrost %q", got, tt.code, tt.bifrost)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&SessionAPIFailedError{Method: "GET", Path: "/me", Status: 401}, "session API failed: GET /me: status 401"},
		{&SessionAPIFailedError{Method: "POST", Path: "/sessions", Status: 422, Code: "validation_failed"},
			`session API failed: POST /sessions: status 422 (error_code "validation_failed")`},
		{&SessionAPIFailedError{Method: "GET", Path: "/me", Status: 500, Code: "has space\nand newline"}, "session API failed: GET /me: status 500"},
		{&AgentNotFoundError{AgentID: "mimir"}, `agent not found: "mimir"`},
		{&AgentNotAvailableError{AgentID: "bogus"}, `agent not available: "bogus"`},
		{&PersonaNotConfiguredError{AgentID: "domari"}, `persona not configured for agent "domari"`},
		{&AuthScopeDeniedError{Scope: "persona.read"}, `auth scope denied: the key lacks scope "persona.read"`},
		{&InvalidCursorError{Raw: "bogus"}, `invalid cursor "bogus"`},
		{&InvalidCursorError{Raw: strings.Repeat("c", 200)}, `invalid cursor "` + strings.Repeat("c", 128) + `…"`},
		{ErrBifrostConsumerKeyMissing, "bifrost consumer key missing"},
		{&BifrostHandshakeFailedError{BifrostError: "bifrost.auth_rejected"}, `bifrost handshake failed: "bifrost.auth_rejected"`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%T.Error() = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestRedaction(t *testing.T) {
	tests := []struct {
		name, body string
		keys       []string
		want       string
	}{
		{name: "key replaced", body: "a secret-key-123 b secret-key-123", keys: []string{"secret-key-123"}, want: "a [REDACTED] b [REDACTED]"},
		// Issue 7 item 9: a short key is redacted too (it used to be left alone under 8 bytes).
		{name: "one-character key redacted", body: "a~b~", keys: []string{"~"}, want: "a[REDACTED]b[REDACTED]"},
		{name: "two-character key redacted", body: "x^~y", keys: []string{"^~"}, want: "x[REDACTED]y"},
		{name: "empty key ignored", body: "abc", keys: []string{""}, want: "abc"},
		{name: "several keys", body: "AAAAAAAA-BBBBBBBB", keys: []string{"AAAAAAAA", "BBBBBBBB"}, want: "[REDACTED]-[REDACTED]"},
		{name: "longer key first", body: "ab-abc", keys: []string{"ab", "abc"}, want: "[REDACTED]-[REDACTED]"},
		{name: "key formed around a marker", body: "D]xx", keys: []string{"D]x"}, want: "[REDACTED]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(newRedactor(tt.keys...).Bytes([]byte(tt.body))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	long := strings.Repeat("x", 1020) + "secret-key-123"
	got := newRedactor("secret-key-123").Body([]byte(long))
	if len(got) != MaxErrorBodyBytes || strings.Contains(string(got), "secret") {
		t.Errorf("truncateBody kept part of the key: %q", got[1010:])
	}
}

// TestTransportError checks an unreachable server yields a wrapped *url.Error.
func TestTransportError(t *testing.T) {
	fs := newFakeServer(t, stub{})
	fs.Close()
	c := newTestClient(t, fs.URL)
	_, err := c.ListSessions(t.Context(), WithLimit(5))
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want a *url.Error", err)
	}
	if !strings.HasPrefix(err.Error(), "worldtree: list sessions: GET /sessions: ") {
		t.Errorf("err = %q", err)
	}
	if d := DescribeError(err); !strings.HasPrefix(d, "Could not reach the Worldtree server (") {
		t.Errorf("DescribeError = %q", d)
	}
}

// TestFailureLogLevel checks an unreachable server is a warning and a caller's cancellation is not.
func TestFailureLogLevel(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hang := newFakeServerFunc(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := newTestClient(t, hang.URL, WithLogger(logger)).GetMe(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if logs.Len() != 0 {
		t.Errorf("cancellation logged at warn: %s", logs.String())
	}
	closed := newFakeServer(t, stub{})
	closed.Close()
	_, err = newTestClient(t, closed.URL, WithLogger(logger)).GetMe(t.Context())
	if err == nil || !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "worldtree request failed") {
		t.Errorf("err = %v, logs = %q, want a warning", err, logs.String())
	}
}

// TestShortKeyNeverInErrorStrings checks a key too short for body redaction still never reaches
// an error string or a description through the fields they print (error_code, bifrost_error),
// when a server echoes it there.
func TestShortKeyNeverInErrorStrings(t *testing.T) {
	const short, shortConsumer = "k3y-a1", "ck-9x"
	fs := newFakeServerFunc(t, func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if r.URL.Path == "/sessions" {
			writeStub(w, stub{status: 502, body: `{"error_code":"x","detail":{"bifrost_error":"bifrost.` + tok + `"}}`})
			return
		}
		writeStub(w, stub{status: 401, body: `{"detail":{"error_code":"bad_` + tok + `"}}`})
	})
	c, err := New(fs.URL, WithKey(short))
	if err != nil {
		t.Fatal(err)
	}
	_, errMe := c.GetMe(t.Context())
	_, errCreate := c.CreateSession(t.Context(), "a", WithBifrost(bind, shortConsumer))
	for _, err := range []error{errMe, errCreate} {
		if err == nil {
			t.Fatal("no error")
		}
		for _, k := range []string{short, shortConsumer} {
			if strings.Contains(err.Error(), k) || strings.Contains(DescribeError(err), k) {
				t.Errorf("error %q / %q leaks key %q", err, DescribeError(err), k)
			}
		}
	}
	var f *SessionAPIFailedError
	if !errors.As(errMe, &f) || f.Status != 401 || strings.Contains(f.Code, short) {
		t.Errorf("errMe = %v, want a 401 with the echoed key dropped from Code", errMe)
	}
	var hs *BifrostHandshakeFailedError
	if !errors.As(errCreate, &hs) || strings.Contains(hs.BifrostError, shortConsumer) {
		t.Errorf("errCreate = %v, want a handshake error with the echoed key dropped", errCreate)
	}
}
