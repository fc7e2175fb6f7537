package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// FakeRequest is one request recorded by a FakeHTTP. Body is the JSON of a
// PostJSON payload (nil for GET).
type FakeRequest struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	// Context is the ctx the module passed, so a route can play a slow
	// server by waiting for <-req.Context.Done().
	Context context.Context
}

// RouteFunc answers a request matched by prefix.
type RouteFunc func(req FakeRequest) (*sdk.HTTPResponse, error)

type fakeRoute struct {
	prefix string
	answer RouteFunc
}

// FakeHTTP is an sdk.HTTP answering from routes matched by URL prefix, in
// the order they were added (routing a prefix again replaces its answer in
// place); a URL no route matches fails with
// *sdk.HostNotAllowedError ("no fake route for 'url'"). Bound to a module's host
// rules (Restrict; NewRuntime does it), every URL first passes the host's
// per-request policy (hostkit.CheckURL): an undeclared host fails even when a
// route exists. Bodies over the request's limit fail with
// *sdk.ResponseTooLargeError, as in the host.
//
// The ctx is honoured as a real client honours it: a request whose ctx is
// already done, or ends before its route answers, fails with a *url.Error
// wrapping ctx.Err() (`Get "https://…": context canceled`; errors.Is
// matches context.Canceled or context.DeadlineExceeded) and its answer is
// discarded. Such a request is still recorded (Requests lists every call
// the module made, refused ones included); a request cancelled before it
// was sent never reaches its route.
type FakeHTTP struct {
	mu       sync.Mutex
	routes   []fakeRoute
	requests []FakeRequest
	module   string
	rules    []hostkit.ResolvedHostRule
	bound    bool
}

var _ sdk.HTTP = (*FakeHTTP)(nil)

// NewFakeHTTP returns a client with no routes.
func NewFakeHTTP() *FakeHTTP { return &FakeHTTP{} }

// Restrict applies module's resolved host rules to every later request.
func (f *FakeHTTP) Restrict(module string, rules []hostkit.ResolvedHostRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.module, f.rules, f.bound = module, slices.Clone(rules), true
}

// Route answers URLs starting with prefix with fn. Routing a prefix that
// is already routed replaces its answer and keeps its place in the match
// order, so a test can change what a URL returns mid-test.
func (f *FakeHTTP) Route(prefix string, fn RouteFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.routes {
		if f.routes[i].prefix == prefix {
			f.routes[i].answer = fn
			return
		}
	}
	f.routes = append(f.routes, fakeRoute{prefix: prefix, answer: fn})
}

// RouteBytes answers URLs starting with prefix with status 200 and body.
func (f *FakeHTTP) RouteBytes(prefix string, body []byte) {
	f.RouteResponse(prefix, &sdk.HTTPResponse{Status: http.StatusOK, Header: http.Header{}, Body: body})
}

// RouteResponse answers URLs starting with prefix with a copy of resp.
func (f *FakeHTTP) RouteResponse(prefix string, resp *sdk.HTTPResponse) {
	f.Route(prefix, func(FakeRequest) (*sdk.HTTPResponse, error) {
		c := *resp
		c.Header = resp.Header.Clone()
		c.Body = bytes.Clone(resp.Body)
		return &c, nil
	})
}

// Requests returns every request, oldest first.
func (f *FakeHTTP) Requests() []FakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// canceled wraps a done ctx's error the way net/http's client does.
func canceled(ctx context.Context, method, rawURL string) error {
	if ctx.Err() == nil {
		return nil
	}
	return &url.Error{Op: method[:1] + strings.ToLower(method[1:]), URL: rawURL, Err: ctx.Err()}
}

func (f *FakeHTTP) resolve(ctx context.Context, method, rawURL string, body []byte, opts []sdk.RequestOption) (*sdk.HTTPResponse, error) {
	o := hostkit.ApplyRequestOptions(sdk.DefaultHTTPTimeout, opts...)
	req := FakeRequest{Method: method, URL: rawURL, Header: o.Header, Body: body, Context: ctx}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	if f.bound {
		if _, err := hostkit.CheckURL(f.module, f.rules, rawURL); err != nil {
			f.mu.Unlock()
			return nil, err
		}
	}
	var answer RouteFunc
	for _, r := range f.routes {
		if strings.HasPrefix(rawURL, r.prefix) {
			answer = r.answer
			break
		}
	}
	f.mu.Unlock()
	if err := canceled(ctx, method, rawURL); err != nil {
		return nil, err
	}
	if answer == nil {
		host := rawURL
		if u, err := url.Parse(rawURL); err == nil {
			host = u.Hostname()
		}
		return nil, hostkit.NewHostNotAllowedError(host, "no fake route for "+hostkit.Repr(rawURL))
	}
	resp, err := answer(req)
	if cerr := canceled(ctx, method, rawURL); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("sdktest: route for %s returned no response", rawURL)
	}
	if int64(len(resp.Body)) > o.MaxBytes {
		return nil, hostkit.NewResponseTooLargeError(0, o.MaxBytes)
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	return resp, nil
}

// Get answers a GET.
func (f *FakeHTTP) Get(ctx context.Context, rawURL string, opts ...sdk.RequestOption) (*sdk.HTTPResponse, error) {
	return f.resolve(ctx, http.MethodGet, rawURL, nil, opts)
}

// PostJSON answers a POST; payload must marshal to JSON.
func (f *FakeHTTP) PostJSON(ctx context.Context, rawURL string, payload any, opts ...sdk.RequestOption) (*sdk.HTTPResponse, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, &sdk.ModuleContractError{Message: "payload must be JSON-serializable: " + err.Error(), Err: err}
	}
	return f.resolve(ctx, http.MethodPost, rawURL, body, opts)
}

// Download answers a GET and returns its body; a non-200 status fails
// ("download returned HTTP N").
func (f *FakeHTTP) Download(ctx context.Context, rawURL string, opts ...sdk.RequestOption) (io.ReadCloser, error) {
	resp, err := f.resolve(ctx, http.MethodGet, rawURL, nil, opts)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("download returned HTTP %d", resp.Status)
	}
	return io.NopCloser(bytes.NewReader(resp.Body)), nil
}
