package admin

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/host"
)

// fakeStartup is serve's progress as a test sets it.
type fakeStartup struct {
	mu       sync.Mutex
	starting []string
	closing  bool
}

func (f *fakeStartup) Starting() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.starting)
}
func (f *fakeStartup) Closing() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.closing }

var _ Startup = (*fakeStartup)(nil)

func TestReadyzNamesThePartsStillStarting(t *testing.T) {
	tests := []struct {
		name       string
		starting   []string
		closing    bool
		wantStatus int
		wantBody   string
	}{
		{name: "modules starting", starting: []string{"modules", "results", "tasks"}, wantStatus: http.StatusServiceUnavailable,
			wantBody: `{"starting":["modules","results","tasks"]}`},
		{name: "every part started", wantStatus: http.StatusOK, wantBody: "ready\n"},
		{name: "shutting down", closing: true, wantStatus: http.StatusServiceUnavailable, wantBody: `{"stopping":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			su := &fakeStartup{starting: tt.starting, closing: tt.closing}
			h := newHarness(t, func(o *Options) { o.Startup = su })
			c := h.newClient()
			res := c.get("/readyz")
			wantStatus(t, res, tt.wantStatus)
			if strings.TrimSpace(res.body) != strings.TrimSpace(tt.wantBody) {
				t.Fatalf("/readyz body = %q, want %q", res.body, tt.wantBody)
			}
			// Liveness answers whatever readiness says.
			wantStatus(t, c.get("/healthz"), http.StatusOK)
		})
	}
}

func TestStartingReason(t *testing.T) {
	since := time.Date(2030, 5, 6, 14, 3, 7, 0, time.UTC)
	now := since.Add(12 * time.Second)
	tests := []struct {
		name string
		m    host.ModuleStatus
		want string
	}{
		{name: "its own start", m: host.ModuleStatus{State: host.StateStarting, Since: since}, want: "starting for 12s (since 14:03:07 UTC)"},
		{name: "waiting for Discord", m: host.ModuleStatus{State: host.StateStarting, Since: since, Reason: "waiting for Discord to be ready"},
			want: "waiting for Discord to be ready; starting for 12s (since 14:03:07 UTC)"},
		{name: "no start time yet", m: host.ModuleStatus{State: host.StateStarting}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := startingReason(tt.m, now); got != tt.want {
				t.Fatalf("startingReason = %q, want %q", got, tt.want)
			}
		})
	}
}
