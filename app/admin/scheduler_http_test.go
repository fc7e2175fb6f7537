package admin

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/scheduler"
)

// TestReadyzSchedulerStandby: /readyz stays 200 either way (the server
// serves), and its detail says standby while another runner — here a
// second scheduler on the same database file — holds the runner lease.
func TestReadyzSchedulerStandby(t *testing.T) {
	tests := []struct {
		name     string
		otherRun bool // another scheduler takes the runner lease first
		want     string
	}{
		{"active runner", false, "ready\n"},
		{"standby runner", true, readyStandby},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ours, other *scheduler.Scheduler
			h := newHarness(t, func(o *Options) {
				mk := func(holder string) *scheduler.Scheduler {
					s, err := scheduler.New(scheduler.Options{Store: o.Store, Logger: slog.New(slog.DiscardHandler), Holder: holder})
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				if tt.otherRun {
					other = mk("other-host:1")
				}
				ours = mk("this-host:2")
				o.Scheduler = ours
			})
			// Closed before the harness closes the store.
			defer func() {
				_ = ours.Close(context.Background())
				if other != nil {
					_ = other.Close(context.Background())
				}
			}()
			if other != nil {
				other.Start()
				waitStatus(t, other, func(st scheduler.Status) bool { return st.Active })
			}
			ours.Start()
			waitStatus(t, ours, func(st scheduler.Status) bool { return st.Active || st.Standby })
			res := h.newClient().get("/readyz")
			wantStatus(t, res, http.StatusOK)
			if res.body != tt.want {
				t.Fatalf("/readyz = %q, want %q", res.body, tt.want)
			}
		})
	}
}

// waitStatus waits (generously) until the scheduler's status satisfies ok.
func waitStatus(t *testing.T, s *scheduler.Scheduler, ok func(scheduler.Status) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := s.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("scheduler status %+v: timed out", st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
