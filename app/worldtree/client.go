package worldtree

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of a new Client.
const (
	// DefaultTimeout bounds every call on top of the caller's context.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes caps how much of a response body is read.
	DefaultMaxResponseBytes int64 = 4 << 20
)

// userAgent identifies the client to Worldtree.
const userAgent = "kimi-worldtree/1"

// Client calls the Worldtree session API. It is safe for concurrent use; it holds no per-request
// state, and auth overrides live only in the request they belong to.
type Client struct {
	base     *url.URL
	key      string
	hc       *http.Client
	timeout  time.Duration
	maxBytes int64
	log      *slog.Logger
	// secrets are keys the client does not send by default but redacts from server text all
	// the same (WithRedactedKeys).
	secrets []string
}

// Option configures a Client in New.
type Option func(*Client) error

// WithKey sets the default bearer key sent on every request that has no override. Without it
// requests carry no Authorization header (Worldtree's anonymous dev mode).
func WithKey(key string) Option {
	return func(c *Client) error {
		if err := checkKey(key); err != nil {
			return fmt.Errorf("default key: %w", err)
		}
		c.key = key
		return nil
	}
}

// WithRedactedKeys adds keys that the client redacts from every server-provided string it puts
// into an error, besides the keys it sends: a server that echoes the admin key on a default-key
// request must not get it into an error either. Settings pass the admin and consumer keys.
func WithRedactedKeys(keys ...string) Option {
	return func(c *Client) error {
		for _, k := range keys {
			if k != "" {
				c.secrets = append(c.secrets, k)
			}
		}
		return nil
	}
}

// WithHTTPClient sets the HTTP client (transport, proxy, TLS). The client is copied and the copy
// never follows redirects; the caller's value is not modified.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return fmt.Errorf("%w: http client is nil", ErrInvalidArgument)
		}
		cp := *hc
		cp.CheckRedirect = refuseRedirect
		c.hc = &cp
		return nil
	}
}

// WithTimeout sets the deadline applied to every call (default DefaultTimeout). The caller's
// context can only shorten it.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("%w: timeout must be positive, got %s", ErrInvalidArgument, d)
		}
		c.timeout = d
		return nil
	}
}

// WithLogger sets the logger for per-request debug lines (method, path, status, duration;
// never headers or bodies). The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) error {
		if l == nil {
			return fmt.Errorf("%w: logger is nil", ErrInvalidArgument)
		}
		c.log = l
		return nil
	}
}

// WithMaxResponseBytes sets the response body cap (default DefaultMaxResponseBytes).
func WithMaxResponseBytes(n int64) Option {
	return func(c *Client) error {
		if n < MaxErrorBodyBytes {
			return fmt.Errorf("%w: max response bytes must be at least %d, got %d",
				ErrInvalidArgument, MaxErrorBodyBytes, n)
		}
		c.maxBytes = n
		return nil
	}
}

// New returns a Client for the Worldtree server at baseURL, an absolute http or https URL,
// optionally with a path prefix (e.g. "https://w.example/api"). It must not carry user info,
// a query or a fragment.
func New(baseURL string, opts ...Option) (*Client, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, fmt.Errorf("worldtree: new client: %w", err)
	}
	c := &Client{
		base:     base,
		hc:       &http.Client{CheckRedirect: refuseRedirect},
		timeout:  DefaultTimeout,
		maxBytes: DefaultMaxResponseBytes,
		log:      slog.New(slog.DiscardHandler),
	}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(c); err != nil {
			return nil, fmt.Errorf("worldtree: new client: %w", err)
		}
	}
	return c, nil
}

// BaseURL returns the server base URL (it never contains credentials).
func (c *Client) BaseURL() string { return c.base.String() }

// String describes the client without its key.
func (c *Client) String() string {
	return fmt.Sprintf("worldtree.Client{base: %s, key set: %t}", c.base, c.key != "")
}

// GoString is String, so %#v does not print the key either.
func (c *Client) GoString() string { return c.String() }

// LogValue keeps the key out of slog output.
func (c *Client) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", c.base.String()), slog.Bool("key_set", c.key != ""))
}

var _ slog.LogValuer = (*Client)(nil)
var _ fmt.Stringer = (*Client)(nil)
var _ fmt.GoStringer = (*Client)(nil)

// NormalizeBaseURL checks raw by New's rules and returns it as a Client uses it (no trailing
// slash). The error wraps ErrInvalidArgument and never repeats user info.
func NormalizeBaseURL(raw string) (string, error) {
	u, err := parseBaseURL(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// CheckKey reports whether key can be sent as a bearer token (ASCII, no space or control
// character). The error wraps ErrInvalidArgument and never contains the key.
func CheckKey(key string) error { return checkKey(key) }

// parseBaseURL validates the base URL and strips a trailing slash from its path.
func parseBaseURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("%w: base URL is empty", ErrInvalidArgument)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse echoes the input, which could hold credentials: do not wrap it.
		return nil, fmt.Errorf("%w: base URL does not parse", ErrInvalidArgument)
	}
	switch {
	case u.User != nil:
		return nil, fmt.Errorf("%w: base URL must not contain user info (pass keys with WithKey)", ErrInvalidArgument)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: base URL scheme must be http or https, got %q", ErrInvalidArgument, u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%w: base URL has no host", ErrInvalidArgument)
	case u.RawQuery != "" || u.ForceQuery:
		return nil, fmt.Errorf("%w: base URL must not have a query", ErrInvalidArgument)
	case u.Fragment != "":
		return nil, fmt.Errorf("%w: base URL must not have a fragment", ErrInvalidArgument)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

// checkKey rejects keys that cannot be sent as a bearer token (empty is handled by callers).
// The message never contains the key.
func checkKey(key string) error {
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] >= 0x7f {
			return fmt.Errorf("%w: key contains a space, control or non-ASCII character", ErrInvalidArgument)
		}
	}
	return nil
}

// refuseRedirect makes the HTTP client return a 3xx response instead of following it.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// auth selects the Authorization of one request.
type auth struct {
	override bool   // true: send key instead of the client default (even "", never the default)
	key      string // the override key
}

// call describes one request.
type call struct {
	action   string     // for error prefixes, e.g. "create session"
	method   string     // HTTP method
	segments []string   // path segments below the base URL, unescaped
	query    url.Values // nil for none
	body     any        // nil: no body; else JSON-encoded
	auth     auth
}

// reply is a fully read response.
type reply struct {
	status    int
	header    http.Header
	body      []byte
	truncated bool // the body went over the cap; body holds its first maxBytes bytes
}

// do sends cl and reads the response body up to the cap. It returns an error only for transport
// failures and context expiry; status and size handling are the caller's.
func (c *Client) do(ctx context.Context, cl call) (*reply, error) {
	u, path := c.endpoint(cl.segments, cl.query)
	var body io.Reader
	if cl.body != nil {
		b, err := encodeBody(cl.body)
		if err != nil {
			return nil, fmt.Errorf("worldtree: %s: encode request: %w", cl.action, err)
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("worldtree: %s: build request: %w", cl.action, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	key := c.key
	if cl.auth.override {
		key = cl.auth.key
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}

	start := time.Now()
	rd := c.redactor(cl)
	resp, err := c.hc.Do(req)
	if err != nil {
		// net/http quotes a malformed response's bytes in its error: the message is redacted,
		// in the log line as in the error.
		msg := rd.String(err.Error())
		// A caller going away (an admin page closed mid-request) is routine, not a warning.
		level := slog.LevelWarn
		if errors.Is(err, context.Canceled) {
			level = slog.LevelDebug
		}
		c.log.LogAttrs(ctx, level, "worldtree request failed",
			slog.String("method", cl.method), slog.String("path", path),
			slog.Duration("duration", time.Since(start)), slog.String("error", msg))
		return nil, &redactedError{msg: fmt.Sprintf("worldtree: %s: %s %s: %s", cl.action, cl.method, rd.String(path), msg), err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return nil, &redactedError{
			msg: fmt.Sprintf("worldtree: %s: %s %s: read response: %s", cl.action, cl.method, rd.String(path), rd.String(err.Error())),
			err: err,
		}
	}
	r := &reply{status: resp.StatusCode, header: resp.Header, body: data}
	if int64(len(data)) > c.maxBytes {
		// The rest is not read. An error status still yields its status and first bytes; a
		// success status fails with ErrResponseTooLarge when the body is checked.
		r.body, r.truncated = data[:c.maxBytes], true
		c.log.LogAttrs(ctx, slog.LevelWarn, "worldtree response too large",
			slog.String("method", cl.method), slog.String("path", path),
			slog.Int("status", resp.StatusCode), slog.Int64("limit_bytes", c.maxBytes))
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "worldtree request",
		slog.String("method", cl.method), slog.String("path", path),
		slog.Int("status", resp.StatusCode), slog.Duration("duration", time.Since(start)))
	return r, nil
}

// encodeBody is compact JSON without HTML escaping, so &, < and > go out as themselves (the bytes
// the contract's client sends), with no trailing newline.
func encodeBody(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// checkSize fails a success reply whose body went over the cap.
func (c *Client) checkSize(cl call, r *reply) error {
	if !r.truncated {
		return nil
	}
	_, path := c.endpoint(cl.segments, nil)
	return fmt.Errorf("worldtree: %s: %s %s: %w (over %d bytes)", cl.action, cl.method, path, ErrResponseTooLarge, c.maxBytes)
}

// endpoint builds the request URL from escaped segments and returns it with its escaped path
// (used in errors and logs). Segments are escaped one by one, so an id containing "/" stays one
// segment instead of addressing another resource.
func (c *Client) endpoint(segments []string, query url.Values) (*url.URL, string) {
	u := *c.base
	raw := u.EscapedPath()
	plain := u.Path
	for _, s := range segments {
		raw += "/" + url.PathEscape(s)
		plain += "/" + s
	}
	u.Path, u.RawPath = plain, raw
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	return &u, raw
}

// redactor redacts every key the client knows from server text about cl: the key sent on it,
// the default key and the WithRedactedKeys keys.
func (c *Client) redactor(cl call) redactor {
	keys := append([]string{cl.auth.key, c.key}, c.secrets...)
	return newRedactor(keys...)
}

// failure builds the error for a reply whose status is not the success status. classify may
// return a specific error for (status, error info); nil falls through to the generic error.
func (c *Client) failure(cl call, r *reply, classify func(status int, info errorInfo) error) error {
	info := parseErrorInfo(r.body)
	rd := c.redactor(cl)
	if classify != nil {
		if err := classify(r.status, info); err != nil {
			redactTyped(err, r.body, rd)
			return fmt.Errorf("worldtree: %s: %w", cl.action, err)
		}
	}
	_, path := c.endpoint(cl.segments, nil)
	return fmt.Errorf("worldtree: %s: %w", cl.action, &SessionAPIFailedError{
		Method: cl.method,
		Path:   rd.String(path), // the caller's ids may have come from the server
		Status: r.status,
		Code:   rd.String(info.code),
		Body:   rd.Body(r.body),
	})
}

// decodeJSON checks that a success reply declares JSON (when it declares a type at all) and
// decodes it into v. The whole body must be one JSON value.
func (c *Client) decodeJSON(cl call, r *reply, v any) error {
	if err := c.checkSize(cl, r); err != nil {
		return err
	}
	if ct := r.header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return fmt.Errorf("worldtree: %s: %w %q (want application/json)",
				cl.action, ErrUnexpectedContentType, c.redactor(cl).Field(ct, 64))
		}
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		// Not %w: the decoder's message quotes the body.
		return fmt.Errorf("worldtree: %s: %w: %s", cl.action, ErrMalformedResponse, jsonProblem(err, c.redactor(cl)))
	}
	return nil
}

// redactTyped redacts the fields of a specific error that hold server or caller text (the
// caller's ids and cursor may have come from an earlier server answer), and fills a handshake
// error's body.
func redactTyped(err error, body []byte, rd redactor) {
	var (
		hs     *BifrostHandshakeFailedError
		nf     *AgentNotFoundError
		na     *AgentNotAvailableError
		nc     *PersonaNotConfiguredError
		cursor *InvalidCursorError
	)
	switch {
	case errors.As(err, &hs):
		hs.BifrostError = rd.String(hs.BifrostError)
		hs.Body = rd.Body(body)
	case errors.As(err, &nf):
		nf.AgentID = rd.String(nf.AgentID)
	case errors.As(err, &na):
		na.AgentID = rd.String(na.AgentID)
	case errors.As(err, &nc):
		nc.AgentID = rd.String(nc.AgentID)
	case errors.As(err, &cursor):
		cursor.Raw = rd.String(cursor.Raw)
	}
}

// getObject runs cl, expects status want and a JSON object, and returns it verbatim (the
// contract's passthrough reads).
func (c *Client) getObject(ctx context.Context, cl call, want int, classify func(int, errorInfo) error) (map[string]any, error) {
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status != want {
		return nil, c.failure(cl, r, classify)
	}
	var obj map[string]any
	if err := c.decodeJSON(cl, r, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("worldtree: %s: %w: expected a JSON object, got null", cl.action, ErrMalformedResponse)
	}
	return obj, nil
}

// expectNoContent runs cl and expects exactly status want (204 for the contract's None results).
func (c *Client) expectNoContent(ctx context.Context, cl call, want int) error {
	r, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	if r.status != want {
		return c.failure(cl, r, nil)
	}
	return c.checkSize(cl, r)
}

// requireID is the non-empty id precondition. "." and ".." are refused too: as path segments
// they would address a different resource.
func requireID(action, what, id string) error {
	switch id {
	case "":
		return fmt.Errorf("worldtree: %s: %w: %s is empty", action, ErrInvalidArgument, what)
	case ".", "..":
		return fmt.Errorf("worldtree: %s: %w: %s %q is not a valid path segment", action, ErrInvalidArgument, what, id)
	}
	return nil
}
