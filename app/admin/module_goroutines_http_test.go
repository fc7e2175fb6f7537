package admin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/modules/sdk"
)

// withCountedProbe gives the server a host running the probe alone,
// counting goroutines every 10 ms and showing a callback as running long
// after 10 ms.
func withCountedProbe(p *probe) func(*Options) {
	return func(o *Options) {
		ctx := context.Background()
		mh, err := host.New(ctx, host.Options{
			Specs: []sdk.Spec{probeSpec(p)}, Store: o.Store, Guilds: o.Guilds.(*guildcfg.Service), Logger: o.Logger,
			Selection: []string{probeName}, SelectionSet: true,
			Goroutines: host.GoroutineOptions{Period: 10 * time.Millisecond}, RunningLongAfter: 10 * time.Millisecond,
		})
		if err != nil {
			panic(err)
		}
		if err := mh.Start(ctx); err != nil {
			panic(err)
		}
		o.Host, o.Scheduler = mh, mh.Scheduler()
	}
}

// until gets path until its body has every want (a bounded wait, never a
// timed assertion).
func until(t *testing.T, c *client, path string, want ...string) *response {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := c.get(path)
		missing := ""
		for _, w := range want {
			if !strings.Contains(res.body, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s never showed %q:\n%s", path, missing, res.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestModuleGoroutinesAndLongRunsShow: the module's goroutine count shows
// on /modules, its page and /metrics, and a job past its budget shows as
// running long while it runs, before its timeout degrades the module.
func TestModuleGoroutinesAndLongRunsShow(t *testing.T) {
	p := &probe{slow: make(chan string, 1)}
	h := newHarness(t, withCountedProbe(p))
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)

	until(t, c, "/modules", `data-testid="module-goroutines-probe">goroutines: `)
	until(t, c, "/modules/probe", `data-testid="module-goroutines">`)
	until(t, c, "/metrics", `kimi_module_goroutines{module="probe"}`)

	if err := p.runtime(t).Scheduler.RunAt(context.Background(), "hold", time.Now(), "slow", nil); err != nil {
		t.Fatalf("RunAt: %v", err)
	}
	<-p.slow
	until(t, c, "/modules", `data-testid="module-running-long-probe">running long: job hold for `)
	res := until(t, c, "/modules/probe", `data-testid="module-running-long"`, "running long: job hold for ")
	if strings.Contains(res.body, "exceeded") {
		t.Errorf("the module is degraded before the job's timeout:\n%s", res.body)
	}
}
