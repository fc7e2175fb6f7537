package llm

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
	"time"
)

// Thinking is the Thinking setting: what the client tells a Moonshot host
// about its models' reasoning.
type Thinking int

// The Thinking settings.
const (
	// ThinkingDefault sends nothing: the model's own default.
	ThinkingDefault Thinking = iota
	// ThinkingOn sends thinking: {type: enabled}.
	ThinkingOn
	// ThinkingOff sends thinking: {type: disabled}.
	ThinkingOff
)

// Defaults and limits of a Client.
const (
	// DefaultMaxTokens is max_tokens when neither Options nor the request
	// set it.
	DefaultMaxTokens = 4096
	// DefaultStallTimeout is how long a stream may stay silent.
	DefaultStallTimeout = 60 * time.Second
	// MaxLineBytes bounds one line of the stream.
	MaxLineBytes = 4 << 20
	// MaxAnswerBytes bounds a non-streamed body and the text, reasoning and
	// tool calls accumulated from a stream.
	MaxAnswerBytes = 16 << 20
	// maxMaxTokens is the largest max_tokens accepted.
	maxMaxTokens = 1 << 20
)

// Options configure a Client.
type Options struct {
	// BaseURL is the API root, e.g. https://api.moonshot.ai/v1 (required;
	// http or https, a host, no user info, query or fragment).
	BaseURL string
	// APIKey is sent as a bearer token; "" means a keyless local server (no
	// Authorization header).
	APIKey string
	// Model is the default model, for a Request whose Model is "".
	Model string
	// MaxTokens is the default max_tokens (0: DefaultMaxTokens); always sent.
	MaxTokens int
	// Temperature is the default temperature (nil: not sent).
	Temperature *float64
	// Thinking is sent as thinking: {type: enabled|disabled} to Moonshot
	// hosts only (api.moonshot.ai, api.moonshot.cn).
	Thinking Thinking
	// Timeout bounds one whole request (0: the context alone).
	Timeout time.Duration
	// StallTimeout: no byte for this long, response headers included, ends
	// the request with ErrStall (0: DefaultStallTimeout). The non-streamed
	// retry after a 400 is watched from its headers on: they come only
	// with the whole answer.
	StallTimeout time.Duration
	// UserAgent is sent on every request ("Kimi/<version>"; "" → "Kimi").
	UserAgent string
	// Transport carries the requests (required): app/egress's guarded
	// streaming transport in the appliance, any in tests.
	Transport http.RoundTripper
	// Logger receives debug lines (raw error bodies, redacted); nil: none.
	Logger *slog.Logger
}

// Client is one OpenAI-compatible endpoint. It is safe for concurrent use.
type Client struct {
	base     *url.URL
	baseStr  string
	key      string
	model    string
	maxTok   int
	temp     *float64
	thinking Thinking
	moonshot bool
	timeout  time.Duration
	stall    time.Duration
	ua       string
	http     *http.Client
	log      *slog.Logger
	rd       redactor
	now      func() time.Time
}

var _ Provider = (*Client)(nil)

// New validates o and returns a Client. It reads no environment variable:
// everything it sends comes from o.
func New(o Options) (*Client, error) {
	base, err := parseBaseURL(o.BaseURL)
	if err != nil {
		return nil, err
	}
	if err := checkHeaderValue("API key", o.APIKey); err != nil {
		return nil, err
	}
	if err := checkHeaderValue("user agent", o.UserAgent); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.Model) != o.Model || len(o.Model) > 256 {
		return nil, fmt.Errorf("llm: new client: the model id %q has surrounding spaces or is longer than 256 bytes", o.Model)
	}
	switch {
	case o.MaxTokens < 0 || o.MaxTokens > maxMaxTokens:
		return nil, fmt.Errorf("llm: new client: max tokens %d is outside 0..%d", o.MaxTokens, maxMaxTokens)
	case o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 2):
		return nil, fmt.Errorf("llm: new client: temperature %g is outside 0..2", *o.Temperature)
	case o.Thinking < ThinkingDefault || o.Thinking > ThinkingOff:
		return nil, fmt.Errorf("llm: new client: unknown thinking setting %d", o.Thinking)
	case o.Timeout < 0 || o.StallTimeout < 0:
		return nil, errors.New("llm: new client: the timeouts must not be negative")
	case o.Transport == nil:
		return nil, errors.New("llm: new client: no transport (the egress layer's streaming transport)")
	}
	c := &Client{
		base: base, baseStr: base.String(), key: o.APIKey, model: o.Model,
		maxTok: o.MaxTokens, temp: o.Temperature, thinking: o.Thinking,
		moonshot: isMoonshotHost(base.Hostname()), timeout: o.Timeout, stall: o.StallTimeout,
		ua: o.UserAgent, log: o.Logger, rd: newRedactor(o.APIKey), now: time.Now,
	}
	if c.maxTok == 0 {
		c.maxTok = DefaultMaxTokens
	}
	if c.stall == 0 {
		c.stall = DefaultStallTimeout
	}
	if c.ua == "" {
		c.ua = "Kimi"
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.http = &http.Client{
		Transport: o.Transport,
		// A redirect is the provider's error, not a place to send the key
		// and the conversation to.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

func parseBaseURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("llm: new client: %w: no base URL", ErrNotConfigured)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return nil, fmt.Errorf("llm: new client: the base URL is not a URL (%s)", describeURLError(err))
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("llm: new client: the base URL must start with http:// or https://")
	case u.Hostname() == "":
		return nil, errors.New("llm: new client: the base URL has no host")
	case u.User != nil:
		return nil, errors.New("llm: new client: the base URL must not carry a user name or password (the API key is its own setting)")
	case u.RawQuery != "" || u.ForceQuery:
		return nil, errors.New("llm: new client: the base URL must not have a query")
	case u.Fragment != "":
		return nil, errors.New("llm: new client: the base URL must not have a fragment")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// describeURLError names what is wrong with a URL without quoting it (it
// may hold a pasted key).
func describeURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var esc url.EscapeError
	var host url.InvalidHostError
	switch {
	case errors.As(err, &esc):
		return "a bad % escape"
	case errors.As(err, &host):
		return "an invalid character in the host"
	}
	return "unparsable"
}

// checkHeaderValue refuses text that cannot go into a header verbatim.
func checkHeaderValue(what, v string) error {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x21 || b > 0x7e {
			if b == ' ' && what == "user agent" {
				continue
			}
			return fmt.Errorf("llm: new client: the %s has a space, a control character or a non-ASCII byte at byte %d", what, i)
		}
	}
	if len(v) > 4096 {
		return fmt.Errorf("llm: new client: the %s is longer than 4096 bytes", what)
	}
	return nil
}

func isMoonshotHost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	return h == "api.moonshot.ai" || h == "api.moonshot.cn"
}

// BaseURL is the endpoint's API root, without a trailing slash.
func (c *Client) BaseURL() string { return c.baseStr }

// Model is the default model ("" when none is set).
func (c *Client) Model() string { return c.model }

// endpoint is {base}/path.
func (c *Client) endpoint(path string) string { return c.baseStr + path }

// attempt is one request in flight: its context ends on the caller's
// cancellation, the whole-request timeout (ErrTimeout) or the stall
// watchdog (ErrStall), which restarts on every byte read. The watchdog
// counts the wait for a stream's headers; a non-streamed completion sends
// its headers only once the whole answer is written, so for it the
// watchdog starts with the headers (the request timeout bounds the wait).
type attempt struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   context.CancelFunc
	timer  *time.Timer
	stall  time.Duration
	start  time.Time
}

func (c *Client) begin(ctx context.Context, watchHeaders bool) *attempt {
	a := &attempt{stall: c.stall, start: c.now()}
	var stop context.CancelFunc = func() {}
	if c.timeout > 0 {
		ctx, stop = context.WithTimeoutCause(ctx, c.timeout, ErrTimeout)
	}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	a.stop = stop
	a.timer = time.AfterFunc(c.stall, func() { a.cancel(ErrStall) })
	if !watchHeaders {
		a.timer.Stop() // send's touch arms it once the headers came
	}
	return a
}

func (a *attempt) end() {
	a.timer.Stop()
	a.cancel(nil)
	a.stop()
}

// touch restarts the stall watchdog.
func (a *attempt) touch() { a.timer.Reset(a.stall) }

// watched restarts the watchdog on every read that returns bytes.
type watched struct {
	r io.Reader
	a *attempt
}

func (w watched) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.a.touch()
	}
	return n, err
}

// send does one request and returns the response once its headers came
// (the watchdog counts the wait for them).
func (c *Client) send(a *attempt, method, path string, body []byte, stream bool) (*http.Response, error) {
	var rdr io.Reader
	if body != nil {
		rdr = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(a.ctx, method, c.endpoint(path), rdr)
	if err != nil {
		return nil, fmt.Errorf("llm: build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", c.ua)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, transportError(a.ctx, err, c.rd)
	}
	a.touch()
	return resp, nil
}

// readAll reads at most limit bytes of body; more is ErrTooLarge.
func readAll(a *attempt, body io.Reader, limit int, rd redactor) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(watched{body, a}, int64(limit)+1))
	if err != nil {
		return nil, transportError(a.ctx, err, rd)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: the body passed %d bytes", ErrTooLarge, limit)
	}
	return b, nil
}

// failure reads an error answer's body, logs it redacted at debug level,
// and returns the typed error.
func (c *Client) failure(a *attempt, op string, resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(watched{resp.Body, a}, maxErrorBody))
	if err != nil && len(body) == 0 {
		c.log.Debug("model provider error body unreadable", "op", op, "status", resp.StatusCode)
	}
	c.log.Debug("model provider error", "op", op, "status", resp.StatusCode, "body", c.rd.Field(string(body), maxLogged))
	return httpError(resp.StatusCode, resp.Header, body, c.rd, c.now())
}
