package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// httpPort is the simple sdk.HTTP port: every request and redirect hop is
// checked against the module's resolved host rules (hostkit.CheckURL: declared
// host, scheme, port, no credentials, no metadata, no non-global IP
// literal unless private), bodies are bounded and never truncated. The
// public-only DNS resolver of the original comes with the egress issue.
type httpPort struct {
	inst   *instance
	rules  []hostkit.ResolvedHostRule
	client *http.Client
}

var _ sdk.HTTP = (*httpPort)(nil)

func newHTTPPort(inst *instance, rules []hostkit.ResolvedHostRule) *httpPort {
	p := &httpPort{inst: inst, rules: rules}
	transport := &http.Transport{
		Proxy:                 nil, // trust_env=False
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: sdk.DefaultHTTPTimeout,
		MaxIdleConns:          8,
		IdleConnTimeout:       30 * time.Second,
	}
	p.client = &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > sdk.MaxHTTPRedirects {
				return fmt.Errorf("too many redirects from %s", via[0].URL.Hostname())
			}
			if _, err := hostkit.CheckURL(inst.name, p.rules, req.URL.String()); err != nil {
				return err
			}
			if req.URL.Host != via[len(via)-1].URL.Host || req.URL.Scheme != via[len(via)-1].URL.Scheme {
				for _, h := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
					req.Header.Del(h)
				}
			}
			return nil
		},
	}
	return p
}

func (p *httpPort) do(ctx context.Context, method, rawURL string, body []byte, defTimeout time.Duration, opts []sdk.RequestOption) (*sdk.HTTPResponse, error) {
	if p.inst.revoked() {
		return nil, p.inst.revokedErr("http")
	}
	if _, err := hostkit.CheckURL(p.inst.name, p.rules, rawURL); err != nil {
		return nil, err
	}
	o := hostkit.ApplyRequestOptions(defTimeout, opts...)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		return nil, fmt.Errorf("host: build request: %w", err)
	}
	req.Header = o.Header.Clone()
	req.Header.Set("User-Agent", "KimiAgent-Module")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		var contract *sdk.HostNotAllowedError
		if errors.As(err, &contract) {
			return nil, contract
		}
		return nil, fmt.Errorf("request to %s failed: %T", req.URL.Hostname(), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.ContentLength > o.MaxBytes {
		return nil, hostkit.NewResponseTooLargeError(resp.ContentLength, o.MaxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("request to %s failed: %T", req.URL.Hostname(), err)
	}
	if int64(len(data)) > o.MaxBytes {
		return nil, hostkit.NewResponseTooLargeError(0, o.MaxBytes)
	}
	return &sdk.HTTPResponse{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// Get implements sdk.HTTP.
func (p *httpPort) Get(ctx context.Context, url string, opts ...sdk.RequestOption) (*sdk.HTTPResponse, error) {
	return p.do(ctx, http.MethodGet, url, nil, sdk.DefaultHTTPTimeout, opts)
}

// PostJSON implements sdk.HTTP.
func (p *httpPort) PostJSON(ctx context.Context, url string, payload any, opts ...sdk.RequestOption) (*sdk.HTTPResponse, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, &sdk.ModuleContractError{Message: "payload must be JSON-serializable: " + err.Error(), Err: err}
	}
	return p.do(ctx, http.MethodPost, url, body, sdk.DefaultHTTPTimeout, opts)
}

// Download implements sdk.HTTP: the body is read, bounded and validated
// before it is handed out.
func (p *httpPort) Download(ctx context.Context, url string, opts ...sdk.RequestOption) (io.ReadCloser, error) {
	resp, err := p.do(ctx, http.MethodGet, url, nil, sdk.DefaultDownloadTimeout, opts)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("download returned HTTP %d", resp.Status)
	}
	return io.NopCloser(bytes.NewReader(resp.Body)), nil
}
