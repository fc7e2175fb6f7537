package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/results"
)

// TestResultPageKeptPerSession: a subscription page's notifications are a
// kept render shared by every session, yet each session's page carries
// its own CSRF token only (never another's, never the slot), and after an
// operator's action through the admin's handler the page its redirect
// shows — and the other session's next page — show the action's effect at
// once, whether or not the service's change signal (and the rebuild it
// starts) has come yet.
func TestResultPageKeptPerSession(t *testing.T) {
	type action struct {
		name   string
		path   string
		form   func(h *harness) url.Values
		before func(t *testing.T, h *harness) string // in the page before, not after
		after  func(t *testing.T, h *harness) string
	}
	retryTitle := func(t *testing.T, h *harness) string {
		return `<time title="` + exactTime(time.UnixMilli(h.resultRetryMs(t, h.vars["retry"]))) + `">`
	}
	actions := []action{
		{name: "retry a row", path: "/retry",
			form:   func(h *harness) url.Values { return url.Values{form.ResultsID: {h.vars["retry"]}} },
			before: retryTitle, after: retryTitle},
		{name: "pause", path: "/pause",
			form:   func(*harness) url.Values { return url.Values{form.ResultsPaused: {"true"}} },
			before: func(*testing.T, *harness) string { return `data-testid="result-pause"` },
			after:  func(*testing.T, *harness) string { return `<span class="badge badge-warning" title="` },
		},
		{name: "purge expired", path: "/purge",
			form:   func(*harness) url.Values { return url.Values{form.FieldConfirm: {form.ConfirmYes}} },
			before: func(_ *testing.T, h *harness) string { return `data-testid="result-row-` + h.vars["expired"] + `"` },
			after:  func(*testing.T, *harness) string { return "Purge expired (0)" },
		},
	}
	for _, signal := range []bool{false, true} {
		for _, a := range actions {
			name := a.name + " without the signal"
			if signal {
				name = a.name + " with the signal"
			}
			t.Run(name, func(t *testing.T) {
				mutate := func(o *Options) { o.Results = silentResults{o.Results.(*results.Service)} }
				if signal {
					mutate = func(*Options) {}
				}
				h := newHarness(t, mutate)
				h.createAdmin()
				resultFixture(t, h)
				one, two := h.newClient(), h.newClient()
				one.login(testUser, testPassword)
				two.login(testUser, testPassword)
				tokens := map[*client]string{one: one.csrf, two: two.csrf}
				if tokens[one] == "" || tokens[one] == tokens[two] {
					t.Fatalf("the sessions' tokens are %q and %q", tokens[one], tokens[two])
				}
				page := func(c *client, res *response, want string, without ...string) {
					t.Helper()
					other := tokens[one]
					if c == one {
						other = tokens[two]
					}
					wantStatus(t, res, http.StatusOK)
					// Every form of the page — the actions card and the kept
					// region's Retry now form — holds this session's token.
					if n := strings.Count(res.body, `name="_csrf" value="`); n < 5 || strings.Count(res.body, `name="_csrf" value="`+tokens[c]+`"`) != n {
						t.Errorf("the page's %d CSRF fields do not all hold the session's token", n)
					}
					for _, bad := range []string{other, csrfSlot} {
						if strings.Contains(res.body, bad) {
							t.Errorf("the page holds %q (another session's token or the slot)", bad)
						}
					}
					if !strings.Contains(res.body, want) {
						t.Errorf("the page lacks %q", want)
					}
					for _, w := range without {
						if strings.Contains(res.body, w) {
							t.Errorf("the page still holds %q", w)
						}
					}
				}
				before := a.before(t, h)
				page(one, one.get(resultPage), before) // rendered and kept
				page(two, two.get(resultPage), before) // the kept render, the other token
				res := two.post(resultPage+a.path, a.form(h))
				wantStatus(t, res, http.StatusSeeOther)
				after := a.after(t, h)
				page(two, followFlash(t, two, res, resultPage), after, before)
				page(one, one.get(resultPage), after, before)
			})
		}
	}
}

// TestResultPagesRebuiltOnSignal: after a change in the background (the
// service signals it, no operator action), /results and a subscription
// page are read and rendered anew by the rebuild the signal starts, before
// the live regions are told: the next request shows the change from the
// kept render without reading the service itself.
func TestResultPagesRebuiltOnSignal(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Results = probeResults{o.Results.(*results.Service)} })
	probeRequests(h)
	h.createAdmin()
	resultFixture(t, h)
	c := h.newClient()
	c.login(testUser, testPassword)
	pages := []struct{ path, paused string }{
		{"/results", `<span class="badge badge-warning" title="`},
		{resultPage, `data-testid="result-resume"`},
	}
	for _, p := range pages {
		if res := c.get(p.path); res.Header.Get(probeHeader) == "" {
			t.Fatalf("GET %s read nothing: the test does not see the service's reads", p.path)
		}
		if res := c.get(p.path); res.Header.Get(probeHeader) != "" || strings.Contains(res.body, p.paused) {
			t.Fatalf("GET %s again read the service (%q) or shows it paused", p.path, res.Header.Get(probeHeader))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rebuilt := h.srv.resultsChanged.Watch(ctx)
	if err := h.results.SetPaused(ctx, resultKey, true, results.Actor{Admin: "test"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rebuilt:
	case <-time.After(15 * time.Second):
		t.Fatal("no rebuild after the service's signal")
	}
	for _, p := range pages {
		res := c.get(p.path)
		if res.Header.Get(probeHeader) != "" {
			t.Errorf("GET %s after the rebuild read the service itself", p.path)
		}
		wantBody(t, res, p.paused)
	}
}
