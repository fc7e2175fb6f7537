package host

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kimiapp/kimi/app/egress"
	"github.com/kimiapp/kimi/modules/sdk"
)

// revocableHTTP is a module's sdk.HTTP: the egress port (app/egress: the
// rules, the address policy at connect time, caps and timeouts), refusing
// once the module is revoked.
type revocableHTTP struct {
	inst *instance
	p    *egress.Port
}

var _ sdk.HTTP = (*revocableHTTP)(nil)

// newHTTPPort builds the module's egress port from its declared rules and
// prepared settings; its counters go to the module's health metrics
// (http_requests, http_bytes, http_refusals, http_refused_<reason>) and
// each refusal to its health detail.
func (h *Host) newHTTPPort(inst *instance) (*revocableHTTP, error) {
	p, err := egress.New(egress.Options{
		Module: inst.name, Rules: inst.spec.Permissions.HTTPHosts, Settings: inst.settings,
		Observe:    func(m egress.Metrics, r *egress.Refusal) { h.observeHTTP(inst, m, r) },
		TestRoutes: h.opts.EgressRoutes, TLSConfig: h.opts.EgressTLS,
	})
	if err != nil {
		return nil, err
	}
	return &revocableHTTP{inst: inst, p: p}, nil
}

func (h *Host) observeHTTP(inst *instance, m egress.Metrics, r *egress.Refusal) {
	if inst.revoked() {
		return
	}
	metrics := map[string]float64{"http_requests": float64(m.Requests), "http_bytes": float64(m.Bytes)}
	var refused int64
	for _, k := range slices.Sorted(maps.Keys(m.Refusals)) {
		metrics["http_refused_"+strings.ReplaceAll(k, ":", "_")] = float64(m.Refusals[k])
		refused += m.Refusals[k]
	}
	metrics["http_refusals"] = float64(refused)
	h.health.mergeMetrics(inst.name, metrics)
	if r != nil {
		h.health.constrain(inst.name, "http", sdk.HealthHealthy, fmt.Sprintf("http: %d refused (last: %s)", refused, r.Message))
	}
}

func (p *revocableHTTP) close() { p.p.CloseIdleConnections() }

// Get implements sdk.HTTP.
func (p *revocableHTTP) Get(ctx context.Context, url string, opts ...sdk.RequestOption) (*sdk.HTTPResponse, error) {
	if p.inst.revoked() {
		return nil, p.inst.revokedErr("http")
	}
	return p.p.Get(ctx, url, opts...)
}

// PostJSON implements sdk.HTTP.
func (p *revocableHTTP) PostJSON(ctx context.Context, url string, payload any, opts ...sdk.RequestOption) (*sdk.HTTPResponse, error) {
	if p.inst.revoked() {
		return nil, p.inst.revokedErr("http")
	}
	return p.p.PostJSON(ctx, url, payload, opts...)
}

// Download implements sdk.HTTP.
func (p *revocableHTTP) Download(ctx context.Context, url string, opts ...sdk.RequestOption) (io.ReadCloser, error) {
	if p.inst.revoked() {
		return nil, p.inst.revokedErr("http")
	}
	return p.p.Download(ctx, url, opts...)
}
