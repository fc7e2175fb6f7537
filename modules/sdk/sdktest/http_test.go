package sdktest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

func TestHTTPRoutesByPrefixInOrder(t *testing.T) {
	ctx := context.Background()
	f := NewFakeHTTP()
	f.RouteBytes("https://api.example.com/v1/special", []byte("special"))
	f.RouteBytes("https://api.example.com/", []byte("general"))
	f.RouteResponse("https://teapot.example.com/", &sdk.HTTPResponse{Status: 418, Body: []byte("short and stout")})
	f.Route("https://echo.example.com/", func(req FakeRequest) (*sdk.HTTPResponse, error) {
		return &sdk.HTTPResponse{Status: 200, Body: []byte(req.Method + " " + req.Header.Get("X-Test") + " " + string(req.Body))}, nil
	})
	f.Route("https://broken.example.com/", func(FakeRequest) (*sdk.HTTPResponse, error) { return nil, errors.New("connection reset") })

	tests := []struct {
		url, want string
		status    int
	}{
		{"https://api.example.com/v1/special/x", "special", 200},
		{"https://api.example.com/v1/other", "general", 200},
		{"https://teapot.example.com/brew", "short and stout", 418},
	}
	for _, tt := range tests {
		resp, err := f.Get(ctx, tt.url)
		if err != nil || resp.Status != tt.status || string(resp.Body) != tt.want || resp.Header == nil {
			t.Errorf("GET %s = %+v, %v", tt.url, resp, err)
		}
	}
	resp, err := f.PostJSON(ctx, "https://echo.example.com/", map[string]int{"a": 1}, sdk.WithHeader("X-Test", "yes"))
	if err != nil || string(resp.Body) != `POST yes {"a":1}` {
		t.Errorf("POST = %q, %v", resp.Body, err)
	}
	if _, err := f.Get(ctx, "https://broken.example.com/"); err == nil || err.Error() != "connection reset" {
		t.Errorf("route error = %v", err)
	}
	reqs := f.Requests()
	if len(reqs) != 5 || reqs[3].Method != http.MethodPost || reqs[3].Header.Get("X-Test") != "yes" {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestHTTPUnroutedHostIsNotAllowed(t *testing.T) {
	f := NewFakeHTTP()
	_, err := f.Get(context.Background(), "https://evil.example.net/steal")

	var notAllowed *sdk.HostNotAllowedError
	if !errors.As(err, &notAllowed) || notAllowed.Host != "evil.example.net" || err.Error() != "no fake route for 'https://evil.example.net/steal'" {
		t.Errorf("err = %v (%+v)", err, notAllowed)
	}
	if !errors.Is(err, sdk.ErrContract) {
		t.Error("HostNotAllowedError must be a contract error")
	}
}

func TestHTTPLimitsAndDownload(t *testing.T) {
	ctx := context.Background()
	f := NewFakeHTTP()
	f.RouteBytes("https://files.example.com/big", make([]byte, 100))
	f.RouteResponse("https://files.example.com/missing", &sdk.HTTPResponse{Status: 404})

	_, err := f.Get(ctx, "https://files.example.com/big", sdk.WithMaxBytes(10))
	var tooLarge *sdk.ResponseTooLargeError
	if !errors.As(err, &tooLarge) || err.Error() != "response exceeded 10 bytes" {
		t.Errorf("over the limit = %v", err)
	}
	body, err := f.Download(ctx, "https://files.example.com/big")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(body)
	_ = body.Close()
	if len(data) != 100 {
		t.Errorf("downloaded %d bytes", len(data))
	}
	if _, err := f.Download(ctx, "https://files.example.com/missing"); err == nil || err.Error() != "download returned HTTP 404" {
		t.Errorf("download 404 = %v", err)
	}
	if _, err := f.Download(ctx, "https://nowhere.example.com/"); err == nil {
		t.Error("download of an unrouted URL succeeded")
	}
	if _, err := f.PostJSON(ctx, "https://files.example.com/big", func() {}); !errors.Is(err, sdk.ErrContract) {
		t.Errorf("unserializable payload = %v", err)
	}
	f.Route("https://nil.example.com/", func(FakeRequest) (*sdk.HTTPResponse, error) { return nil, nil })
	if _, err := f.Get(ctx, "https://nil.example.com/"); err == nil {
		t.Error("a route returning nothing must fail")
	}
}

func TestHTTPRestrictedToDeclaredHosts(t *testing.T) {
	ctx := context.Background()
	rules, err := hostkit.ResolveHostRules("mod", []sdk.HostRule{{Host: "api.example.com"}}, sdk.NewSettings(nil))
	if err != nil {
		t.Fatal(err)
	}
	f := NewFakeHTTP()
	f.Restrict("mod", rules)
	f.RouteBytes("https://", []byte("ok")) // a route for everything

	if resp, err := f.Get(ctx, "https://api.example.com/x"); err != nil || string(resp.Body) != "ok" {
		t.Errorf("declared host = %v", err)
	}
	tests := []struct{ url, want string }{
		{"https://other.example.com/", "module 'mod' did not declare host 'other.example.com'"},
		{"http://api.example.com/", "scheme 'http' is not allowed for 'api.example.com'"},
		{"https://user:pw@api.example.com/", "URLs with embedded credentials are not allowed"},
	}
	for _, tt := range tests {
		_, err := f.Get(ctx, tt.url)
		var notAllowed *sdk.HostNotAllowedError
		if !errors.As(err, &notAllowed) || err.Error() != tt.want {
			t.Errorf("GET %s = %v, want %q", tt.url, err, tt.want)
		}
	}
}

// TestHTTPRouteAgainReplacesInPlace: routing a prefix again replaces its
// answer and keeps its position in the match order.
func TestHTTPRouteAgainReplacesInPlace(t *testing.T) {
	ctx := context.Background()
	f := NewFakeHTTP()
	f.RouteBytes("https://api.example.com/v1/", []byte("first"))
	f.RouteBytes("https://api.example.com/", []byte("general"))
	f.RouteBytes("https://api.example.com/v1/", []byte("second"))
	f.RouteResponse("https://api.example.com/", &sdk.HTTPResponse{Status: http.StatusServiceUnavailable, Body: []byte("down")})

	tests := []struct {
		url, want string
		status    int
	}{
		{"https://api.example.com/v1/x", "second", http.StatusOK}, // replaced, still matched before the general route
		{"https://api.example.com/v2", "down", http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		resp, err := f.Get(ctx, tt.url)
		if err != nil || resp.Status != tt.status || string(resp.Body) != tt.want {
			t.Errorf("GET %s = %+v, %v; want %d %q", tt.url, resp, err, tt.status, tt.want)
		}
	}
}

// TestHTTPHonoursContextCancellation: a cancelled or expired ctx fails the
// request with a *url.Error wrapping ctx.Err(), as net/http does, before the
// route runs or after it when the ctx ends while it answers; the request is
// recorded either way.
func TestHTTPHonoursContextCancellation(t *testing.T) {
	type call func(ctx context.Context, f *FakeHTTP) error
	get := func(ctx context.Context, f *FakeHTTP) error {
		_, err := f.Get(ctx, "https://api.example.com/x")
		return err
	}
	post := func(ctx context.Context, f *FakeHTTP) error {
		_, err := f.PostJSON(ctx, "https://api.example.com/x", map[string]int{"a": 1})
		return err
	}
	download := func(ctx context.Context, f *FakeHTTP) error {
		_, err := f.Download(ctx, "https://api.example.com/x")
		return err
	}
	cancelled := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	expired := func() context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		t.Cleanup(cancel)
		return ctx
	}
	tests := []struct {
		name string
		ctx  func() context.Context
		// hang makes the route wait for the ctx to end (cancelled by the
		// test from inside the route).
		hang      bool
		call      call
		want      error
		msg       string
		routeRuns bool
	}{
		{"GET with a cancelled ctx", cancelled, false, get, context.Canceled, `Get "https://api.example.com/x": context canceled`, false},
		{"POST with a cancelled ctx", cancelled, false, post, context.Canceled, `Post "https://api.example.com/x": context canceled`, false},
		{"download with an expired ctx", expired, false, download, context.DeadlineExceeded, `Get "https://api.example.com/x": context deadline exceeded`, false},
		{"cancelled while the route answers", nil, true, get, context.Canceled, `Get "https://api.example.com/x": context canceled`, true},
		{"live ctx", func() context.Context { return context.Background() }, false, get, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFakeHTTP()
			ctx := context.Background()
			var cancel context.CancelFunc = func() {}
			if tt.ctx != nil {
				ctx = tt.ctx()
			} else {
				ctx, cancel = context.WithCancel(ctx)
			}
			defer cancel()
			ran := false
			f.Route("https://api.example.com/", func(req FakeRequest) (*sdk.HTTPResponse, error) {
				ran = true
				if tt.hang {
					cancel()
					<-req.Context.Done()
				}
				return &sdk.HTTPResponse{Status: http.StatusOK, Body: []byte("ok")}, nil
			})

			err := tt.call(ctx, f)

			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var urlErr *url.Error
			if tt.want != nil && (!errors.As(err, &urlErr) || err.Error() != tt.msg) {
				t.Errorf("err = %q (%T), want the *url.Error %q", err, err, tt.msg)
			}
			if ran != tt.routeRuns {
				t.Errorf("route ran = %v, want %v", ran, tt.routeRuns)
			}
			if reqs := f.Requests(); len(reqs) != 1 || reqs[0].URL != "https://api.example.com/x" {
				t.Errorf("requests = %+v, want the one call recorded", reqs)
			}
		})
	}
}
