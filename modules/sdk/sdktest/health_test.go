package sdktest

import (
	"slices"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestHealthKeyedReportsAndWorstState(t *testing.T) {
	h := NewFakeHealth()
	if _, ok := h.Current(); ok || h.State() != sdk.HealthHealthy {
		t.Fatalf("a new reporter: current ok=%v state=%s", ok, h.State())
	}

	h.Report(sdk.HealthHealthy, "", map[string]float64{"guilds": 2})
	h.ReportKey("digest", sdk.HealthDegraded, "1 failed", nil)
	h.ReportKey("queue", sdk.HealthStarting, "", map[string]float64{"pending": 3})

	if cur, _ := h.Current(); cur.State != sdk.HealthHealthy || cur.Metrics["guilds"] != 2 {
		t.Errorf("current = %+v", cur)
	}
	if h.State() != sdk.HealthDegraded {
		t.Errorf("state = %s, want the worst (degraded)", h.State())
	}
	if got := h.Keys(); !slices.Equal(got, []string{"digest", "queue"}) {
		t.Errorf("keys = %v", got)
	}

	tests := []struct {
		name    string
		state   sdk.HealthState
		detail  string
		metrics map[string]float64
		cleared bool
	}{
		{"healthy with metrics stays", sdk.HealthHealthy, "", map[string]float64{"n": 0}, false},
		{"healthy with detail stays", sdk.HealthHealthy, "ok", nil, false},
		{"bare healthy clears", sdk.HealthHealthy, "", nil, true},
		{"healthy with empty metrics clears", sdk.HealthHealthy, "", map[string]float64{}, true},
	}
	for _, tt := range tests {
		h.ReportKey("digest", tt.state, tt.detail, tt.metrics)
		_, live := h.Keyed("digest")
		if live == tt.cleared {
			t.Errorf("%s: live = %v", tt.name, live)
		}
	}
	if h.State() != sdk.HealthStarting {
		t.Errorf("state after clearing digest = %s, want starting (queue)", h.State())
	}
	h.Report(sdk.HealthFailed, "start failed", nil)
	if h.State() != sdk.HealthFailed {
		t.Errorf("state = %s, want failed", h.State())
	}
	agg := h.Aggregate()
	if agg.Detail != "start failed" || agg.Metrics["pending"] != 3 {
		t.Errorf("aggregate = %+v, want the worst detail and merged metrics", agg)
	}
	if n := len(h.History()); n != 8 {
		t.Errorf("history has %d entries, want every call (8)", n)
	}
	if n := len(h.Reports()); n != 2 {
		t.Errorf("unkeyed reports = %d, want 2", n)
	}
}

func TestHealthBoundsDetailAndMetrics(t *testing.T) {
	h := NewFakeHealth()
	h.Report(sdk.HealthDegraded, strings.Repeat("x", 600), map[string]float64{"api_token": 1, "ok": 2})

	cur, _ := h.Current()
	if len([]rune(cur.Detail)) != sdk.MaxHealthDetailLength {
		t.Errorf("detail length = %d", len([]rune(cur.Detail)))
	}
	if _, leaked := cur.Metrics["api_token"]; leaked || cur.Metrics["ok"] != 2 {
		t.Errorf("metrics = %v: secret-looking names must be dropped", cur.Metrics)
	}
	if !cur.UpdatedAt.After(epoch.Add(-1)) {
		t.Errorf("updated at = %v", cur.UpdatedAt)
	}
}

// Reports handed out are copies: a test or module changing a returned
// report's metrics cannot rewrite what was recorded.
func TestHealthReportsAreCopies(t *testing.T) {
	h := NewFakeHealth()
	h.Report(sdk.HealthHealthy, "", map[string]float64{"guilds": 1})
	h.ReportKey("digest", sdk.HealthDegraded, "late", map[string]float64{"digest_failures": 1})

	cur, _ := h.Current()
	cur.Metrics["guilds"] = 99
	keyed, _ := h.Keyed("digest")
	keyed.Metrics["digest_failures"] = 99
	h.Reports()[0].Metrics["guilds"] = 99
	h.History()[1].Health.Metrics["digest_failures"] = 99
	h.Aggregate().Metrics["guilds"] = 99

	if cur, _ := h.Current(); cur.Metrics["guilds"] != 1 {
		t.Errorf("current metrics = %v, want guilds=1", cur.Metrics)
	}
	if keyed, _ := h.Keyed("digest"); keyed.Metrics["digest_failures"] != 1 {
		t.Errorf("keyed metrics = %v, want digest_failures=1", keyed.Metrics)
	}
	if got := h.History()[0].Health.Metrics["guilds"]; got != 1 {
		t.Errorf("history metrics guilds = %v, want 1", got)
	}
	if got := h.Aggregate().Metrics; got["guilds"] != 1 || got["digest_failures"] != 1 {
		t.Errorf("aggregate metrics = %v", got)
	}
}
