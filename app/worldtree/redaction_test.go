package worldtree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// echoKeys are keys of length 1, 2 and 16 made of characters no error text of the client holds on
// its own ("~" and "^" appear nowhere in its messages), so finding one in an error is a leak.
var echoKeys = []string{"~", "^~", "k3y~0123456789ab"}

// echoPath is one way a server can put the key into an error.
type echoPath struct {
	name string
	// answer is the server's reply, with the key echoed into it.
	answer func(key string) stub
	call   func(ctx context.Context, c *Client) error
}

// echoPaths are the four paths of issue 7 item 9, and the other server strings an error prints.
var echoPaths = []echoPath{
	{
		name:   "content type echoes the key",
		answer: func(k string) stub { return stub{body: `{}`, contentType: "text/plain; echo=" + k} },
		call:   func(ctx context.Context, c *Client) error { _, err := c.GetMe(ctx); return err },
	},
	{
		name:   "session without agent_id has the key as id",
		answer: func(k string) stub { return stub{body: `{"items":[{"session_id":"` + k + `"}],"next_cursor":null}`} },
		call:   func(ctx context.Context, c *Client) error { _, err := c.ListSessions(ctx); return err },
	},
	{
		name:   "created session without agent_id has the key as id",
		answer: func(k string) stub { return stub{status: 201, body: `{"session_id":"` + k + `"}`} },
		call:   func(ctx context.Context, c *Client) error { _, err := c.CreateSession(ctx, "a"); return err },
	},
	{
		name:   "agent without name has the key as id",
		answer: func(k string) stub { return stub{body: `[{"agent_id":"` + k + `"}]`} },
		call:   func(ctx context.Context, c *Client) error { _, err := c.ListAgents(ctx); return err },
	},
	{
		name:   "agent without description has the key as id",
		answer: func(k string) stub { return stub{body: `[{"agent_id":"` + k + `","name":"n"}]`} },
		call:   func(ctx context.Context, c *Client) error { _, err := c.ListAgents(ctx); return err },
	},
	{
		name:   "JSON syntax error quotes the key",
		answer: func(k string) stub { return stub{body: k} },
		call:   func(ctx context.Context, c *Client) error { _, err := c.GetCapabilities(ctx); return err },
	},
	{
		name:   "JSON syntax error inside an object quotes the key",
		answer: func(k string) stub { return stub{body: `{"a":` + k + `}`} },
		call:   func(ctx context.Context, c *Client) error { _, err := c.GetMe(ctx); return err },
	},
	{
		name:   "error code is the key",
		answer: func(k string) stub { return stub{status: 401, body: `{"detail":{"error_code":"` + k + `"}}`} },
		call:   func(ctx context.Context, c *Client) error { _, err := c.GetMe(ctx); return err },
	},
	{
		name: "403 message names the key as a scope",
		answer: func(k string) stub {
			return stub{status: 403, body: `{"message":"Missing required scope: a.` + k + `"}`}
		},
		call: func(ctx context.Context, c *Client) error { _, err := c.GetMe(ctx); return err },
	},
}

// assertNoEcho fails if key appears in any rendering of err.
func assertNoEcho(t *testing.T, err error, key string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error; the case must fail")
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%s", err), DescribeError(err)} {
		if strings.Contains(s, key) {
			t.Errorf("key %q leaks into %q", key, s)
		}
	}
}

// TestServerEchoedKeyNeverInErrors reproduces a server that echoes a configured key (the default
// key it was sent, or the admin or consumer key it knows) into each string an error could print,
// for keys of 1, 2 and 16 bytes.
func TestServerEchoedKeyNeverInErrors(t *testing.T) {
	roles := []struct {
		name string
		opts func(key string) []Option
	}{
		{"default key", func(k string) []Option { return []Option{WithKey(k)} }},
		{"admin key", func(k string) []Option { return []Option{WithKey(canaryKey), WithRedactedKeys(k)} }},
		{"consumer key", func(k string) []Option { return []Option{WithKey(canaryKey), WithRedactedKeys("", k)} }},
	}
	for _, p := range echoPaths {
		for _, key := range echoKeys {
			for _, role := range roles {
				t.Run(fmt.Sprintf("%s/len %d/%s", p.name, len(key), role.name), func(t *testing.T) {
					fs := newFakeServer(t, p.answer(key))
					c, err := New(fs.URL, role.opts(key)...)
					if err != nil {
						t.Fatal(err)
					}
					assertNoEcho(t, p.call(t.Context(), c), key)
				})
			}
		}
	}
}

// TestMalformedResponseEchoNeverInErrors covers net/http's own error for a response that is not
// HTTP: it quotes the server's bytes.
func TestMalformedResponseEchoNeverInErrors(t *testing.T) {
	for _, key := range echoKeys {
		t.Run(fmt.Sprintf("len %d", len(key)), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ln.Close() })
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				buf := make([]byte, 4096)
				_, _ = conn.Read(buf)
				_, _ = conn.Write([]byte("HTTP/1.1 " + key + " OK\r\n\r\n")) // "malformed HTTP status code"
			}()
			c, err := New("http://"+ln.Addr().String(), WithKey(key))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.GetMe(t.Context())
			assertNoEcho(t, err, key)
		})
	}
}

// TestJSONErrorRewritten checks a decoding error names the byte offset instead of quoting input.
// The offset is the decoder's: encoding/json's v1 implementation counts the bad byte (6 here),
// the v2 one that `make` builds with (GOEXPERIMENT=jsonv2) points at it (5).
func TestJSONErrorRewritten(t *testing.T) {
	const body = `{"a":~}`
	var syntax *json.SyntaxError
	if err := json.Unmarshal([]byte(body), new(any)); !errors.As(err, &syntax) {
		t.Fatalf("json.Unmarshal(%q) = %v, want a *json.SyntaxError", body, err)
	}
	fs := newFakeServer(t, stub{body: body})
	_, err := newTestClient(t, fs.URL).GetMe(t.Context())
	if want := fmt.Sprintf("invalid JSON at byte offset %d", syntax.Offset); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "~") {
		t.Errorf("err = %v, want %q and no quoted input", err, want)
	}
}

// FuzzEchoedKeyNeverLeaks answers with an arbitrary status, Content-Type and body into which the
// key is echoed wherever the template has a '*', and calls each endpoint: no error string or
// description may contain the key. The key holds a '~' and the template none, so the key cannot
// be formed from the template's text and the client's own.
func FuzzEchoedKeyNeverLeaks(f *testing.F) {
	f.Add("", 200, "application/json", `*`)
	f.Add("ab", 200, "text/*", `{}`)
	f.Add("x", 200, "", `{"items":[{"session_id":"*"}],"next_cursor":null}`)
	f.Add("0123456789abcd", 200, "", `[{"agent_id":"*"}]`)
	f.Add("", 201, "", `{"session_id":"*"}`)
	f.Add("k", 401, "", `{"detail":{"error_code":"*"}}`)
	f.Add("k", 502, "", `{"error_code":"x","detail":{"bifrost_error":"*"}}`)
	f.Add("", 403, "", `{"message":"Missing required scope: a.*"}`)
	f.Add("", 422, "", `{"error_code":"cursor_invalid","x":"*"}`)
	f.Add("", 404, "", `{"error_code":"persona_not_configured","x":"*"}`)

	var (
		mu      sync.Mutex
		answers = map[string]stub{}
		seq     atomic.Int64
	)
	fs := newFakeServerFunc(f, func(w http.ResponseWriter, r *http.Request) {
		id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		mu.Lock()
		s := answers[id]
		mu.Unlock()
		writeStub(w, s)
	})
	f.Fuzz(func(t *testing.T, suffix string, status int, contentType, template string) {
		key := "~" + suffix
		if checkKey(key) != nil || len(key) > maxFuzzKeyBytes || strings.Contains(template, "~") ||
			strings.Contains(contentType, "~") || !utf8.ValidString(contentType) {
			return
		}
		if status < 200 || status > 599 {
			status = 200
		}
		ct := strings.ReplaceAll(contentType, "*", key)
		if strings.ContainsAny(ct, "\r\n\x00") {
			return
		}
		if ct == "" {
			ct = "-"
		}
		id := fmt.Sprint(seq.Add(1))
		mu.Lock()
		answers[id] = stub{status: status, contentType: ct, body: strings.ReplaceAll(template, "*", key)}
		mu.Unlock()
		defer func() { mu.Lock(); delete(answers, id); mu.Unlock() }()

		c, err := New(fs.URL+"/"+id, WithKey(key))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		calls := []func() error{
			func() error { _, err := c.GetMe(ctx); return err },
			func() error { _, err := c.ListSessions(ctx, WithCursor("c")); return err },
			func() error { _, err := c.ListAgents(ctx); return err },
			func() error { _, err := c.GetPersonaState(ctx, "a"); return err },
			func() error { _, err := c.CreateSession(ctx, "a"); return err },
			func() error {
				_, err := c.CreateSession(ctx, "a", WithBifrost(BifrostBinding{EndpointURL: "http://b"}, "other-key"))
				return err
			},
			func() error { return c.DeleteCharacter(ctx, "c") },
		}
		for _, call := range calls {
			err := call()
			if err == nil {
				continue
			}
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), DescribeError(err)} {
				if strings.Contains(s, key) {
					t.Fatalf("key %q leaks into %q", key, s)
				}
			}
		}
	})
}

// maxFuzzKeyBytes bounds the fuzzed key (longer keys add nothing but time).
const maxFuzzKeyBytes = 64

// TestErrorBodyKeepsOnlyItsCut checks that a kept error body holds its MaxErrorBodyBytes and not
// the whole redacted body behind them: 100 bodies cut from 4 MiB answers stay under 1 MiB of heap.
func TestErrorBodyKeepsOnlyItsCut(t *testing.T) {
	const n, size = 100, 4 << 20
	big := []byte(strings.Repeat("x", size))
	for _, tc := range []struct {
		name string
		rd   redactor
	}{
		{"no key", newRedactor()},
		{"with a key", newRedactor("k3y~0123456789ab")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			kept := make([][]byte, n)
			for i := range kept {
				kept[i] = tc.rd.Body(big)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			for _, b := range kept {
				if len(b) != MaxErrorBodyBytes {
					t.Fatalf("body is %d bytes, want %d", len(b), MaxErrorBodyBytes)
				}
			}
			if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew >= 1<<20 {
				t.Errorf("%d kept bodies hold %d bytes of heap, want < 1 MiB", n, grew)
			}
			runtime.KeepAlive(kept)
		})
	}
}
