package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Job keys that need escaping in a path: a slash and a space (RawPath set,
// echo leaves :key escaped), and a literal "%" (RawPath empty, :key is
// already decoded and must not be decoded twice).
const (
	jobSlash   = "digest/weekly run"
	jobPercent = "50% off"
)

// jobProbe is the probe of the job scenarios; it reports its runs.
var jobProbe = &probe{ran: make(chan string, 64), slow: make(chan string, 4)}

var jobMods = []func(*Options){withModules(jobProbe, false)}

// withJobs schedules, through the probe's own scheduler port, the two
// awkward keys two and three hours ahead (they do not run by themselves
// during a test).
func withJobs(t *testing.T, h *harness) {
	t.Helper()
	requireRunning(t, h, probeName)
	for len(jobProbe.ran) > 0 {
		<-jobProbe.ran // runs of an earlier scenario
	}
	sch := jobProbe.runtime(t).Scheduler
	ctx := context.Background()
	if err := sch.RunAt(ctx, jobSlash, time.Now().Add(2*time.Hour), "tick", nil); err != nil {
		t.Fatal(err)
	}
	if err := sch.RunEvery(ctx, jobPercent, 3*time.Hour, "tick", nil, sdk.EveryOptions{}); err != nil {
		t.Fatal(err)
	}
	// The periodic job runs once at once; wait for that run to settle so
	// the page shows it three hours ahead.
	waitJob(t, h, jobPercent, func(j scheduler.Job, ok bool) bool {
		return ok && j.NextRunAt.After(time.Now().Add(2*time.Hour)) && !j.Running(time.Now())
	})
}

// waitJob waits (generously) until the probe's job key satisfies ok (ok's
// second argument: the job exists).
func waitJob(t *testing.T, h *harness, key string, ok func(scheduler.Job, bool) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		jobs, err := h.srv.opts.Scheduler.Jobs(context.Background(), probeName)
		if err != nil {
			t.Fatal(err)
		}
		var found scheduler.Job
		var exists bool
		for _, j := range jobs {
			if j.Key == key {
				found, exists = j, true
			}
		}
		if ok(found, exists) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %q = %+v (exists %v): timed out", key, found, exists)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// jobGone asserts after the request that the job no longer exists.
func jobGone(key string, gone bool) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		jobs, err := h.srv.opts.Scheduler.Jobs(context.Background(), probeName)
		if err != nil {
			t.Fatal(err)
		}
		exists := false
		for _, j := range jobs {
			exists = exists || j.Key == key
		}
		if exists == gone {
			t.Errorf("job %q exists = %v after the request, want %v", key, exists, !gone)
		}
	}
}

// jobUnmoved asserts after the request that the job is still two hours
// ahead (a refused run now moved nothing).
func jobUnmoved(key string) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		waitJob(t, h, key, func(j scheduler.Job, ok bool) bool {
			if !ok || j.NextRunAt.Before(time.Now().Add(time.Hour)) {
				t.Errorf("job %q = %+v (exists %v): moved by a refused request", key, j, ok)
			}
			return true
		})
	}
}

// jobTooltips asserts that the page's tooltip of each job is its own next
// run's exact UTC time (from the job, not the wall clock's date: a job due
// in two hours falls on tomorrow's date late in the UTC day).
func jobTooltips(keys ...string) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, res *response) {
		t.Helper()
		for _, key := range keys {
			waitJob(t, h, key, func(j scheduler.Job, ok bool) bool {
				if want := `title="` + exactTime(j.NextRunAt) + `"`; !ok || !strings.Contains(res.body, want) {
					t.Errorf("job %q (exists %v): the page lacks its tooltip %s", key, ok, want)
				}
				return true
			})
		}
	}
}

func jobForm(key string) url.Values { return url.Values{form.ModuleJobKey: {key}} }

var (
	runSlash      = "/modules/probe/jobs/" + url.PathEscape(jobSlash) + "/run"
	cancelSlash   = "/modules/probe/jobs/" + url.PathEscape(jobSlash) + "/cancel"
	runPercent    = "/modules/probe/jobs/" + url.PathEscape(jobPercent) + "/run"
	cancelPercent = "/modules/probe/jobs/" + url.PathEscape(jobPercent) + "/cancel"
)

var moduleJobScenarios = []scenario{
	{name: "jobs: the module page lists each job with its controls, keys escaped in the paths", method: "GET", url: "/modules/probe",
		opts: jobMods, signedIn: true, setup: withJobs, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="module-jobs"`, ">digest/weekly run<", ">50% off<", `<code class="handler">tick</code>`,
			">in 1 hour<", ">in 2 hours<", "every 3 hours", ">once<",
			`action="` + runSlash + `"`, `action="` + cancelSlash + `"`, `action="` + runPercent + `"`,
			`name="job" value="digest/weekly run"`, ">Run now<", ">Cancel<"},
		check: jobTooltips(jobSlash, jobPercent)},

	{name: "jobs: anonymous run now is refused and moves nothing", method: "POST", url: runSlash, opts: jobMods,
		form: jobForm(jobSlash), setup: withJobs, wantStatus: http.StatusUnauthorized, wantNoAudit: true, check: jobUnmoved(jobSlash)},
	{name: "jobs: run now without CSRF changes nothing", method: "POST", url: runSlash, opts: jobMods, signedIn: true, noCSRF: true,
		form: jobForm(jobSlash), setup: withJobs, wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: jobUnmoved(jobSlash)},
	{name: "jobs: run now is audited by the scheduler and the job runs", method: "POST", url: runSlash, opts: jobMods, signedIn: true,
		form: jobForm(jobSlash), setup: withJobs, wantStatus: http.StatusSeeOther, wantLocation: "/modules/probe#card-module-jobs",
		wantAudit: []string{scheduler.ActionJobRunNow},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			waitRan(t, jobSlash)
			target := auditTarget(t, h, scheduler.ActionJobRunNow)
			if target != probeName+":"+jobSlash {
				t.Errorf("audit target = %q, want %q", target, probeName+":"+jobSlash)
			}
		}},
	{name: "jobs: run now of a key with a literal percent sign", method: "POST", url: runPercent, opts: jobMods, signedIn: true,
		form: jobForm(jobPercent), setup: withJobs, wantStatus: http.StatusSeeOther, wantAudit: []string{scheduler.ActionJobRunNow},
		check: func(t *testing.T, h *harness, _ *client, _ *response) { waitRan(t, jobPercent) }},
	{name: "jobs: a form naming another job than the address is refused", method: "POST", url: runSlash, opts: jobMods, signedIn: true,
		form: jobForm(jobPercent), setup: withJobs, wantStatus: http.StatusBadRequest,
		wantContains: []string{form.MsgModuleJobMismatch}, wantNoAudit: true},
	{name: "jobs: a form without the job is refused", method: "POST", url: runSlash, opts: jobMods, signedIn: true,
		setup: withJobs, wantStatus: http.StatusBadRequest, wantContains: []string{form.MsgModuleJobKey}, wantNoAudit: true},
	{name: "jobs: run now of an unknown job is a 404", method: "POST", url: "/modules/probe/jobs/nope/run", opts: jobMods, signedIn: true,
		form: jobForm("nope"), setup: withJobs, wantStatus: http.StatusNotFound, wantNoAudit: true},
	{name: "jobs: run now in an unknown module is a 404", method: "POST", url: "/modules/nope/jobs/x/run", opts: jobMods, signedIn: true,
		form: jobForm("x"), wantStatus: http.StatusNotFound, wantNoAudit: true},

	{name: "jobs: anonymous cancel is refused and deletes nothing", method: "POST", url: cancelSlash, opts: jobMods,
		form: confirmed(jobForm(jobSlash)), setup: withJobs, wantStatus: http.StatusUnauthorized, wantNoAudit: true, check: jobGone(jobSlash, false)},
	{name: "jobs: cancel without CSRF deletes nothing", method: "POST", url: cancelSlash, opts: jobMods, signedIn: true, noCSRF: true,
		form: confirmed(jobForm(jobSlash)), setup: withJobs, wantStatus: http.StatusForbidden, wantNoAudit: true, check: jobGone(jobSlash, false)},
	{name: "jobs: cancel asks first", method: "POST", url: cancelSlash, opts: jobMods, signedIn: true,
		form: jobForm(jobSlash), setup: withJobs, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="confirm-card"`, "Cancel the job digest/weekly run of probe?", `action="` + cancelSlash + `"`,
			`name="job" value="digest/weekly run"`},
		wantNoAudit: true, check: jobGone(jobSlash, false)},
	{name: "jobs: cancel confirmed is audited by the scheduler and deletes the job", method: "POST", url: cancelSlash, opts: jobMods,
		signedIn: true, form: confirmed(jobForm(jobSlash)), setup: withJobs,
		wantStatus: http.StatusSeeOther, wantLocation: "/modules/probe#card-module-jobs", wantAudit: []string{scheduler.ActionJobCancel},
		check: jobGone(jobSlash, true)},
	{name: "jobs: cancel confirmed of a key with a literal percent sign", method: "POST", url: cancelPercent, opts: jobMods,
		signedIn: true, form: confirmed(jobForm(jobPercent)), setup: withJobs,
		wantStatus: http.StatusSeeOther, wantAudit: []string{scheduler.ActionJobCancel}, check: jobGone(jobPercent, true)},
	{name: "jobs: cancelling a job already gone is a 404", method: "POST", url: "/modules/probe/jobs/nope/cancel", opts: jobMods,
		signedIn: true, form: confirmed(jobForm("nope")), setup: withJobs, wantStatus: http.StatusNotFound, wantNoAudit: true},
}

func TestModuleJobPages(t *testing.T) { runScenarios(t, moduleJobScenarios) }

// waitRan waits (generously) for the probe to run key.
func waitRan(t *testing.T, key string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case k := <-jobProbe.ran:
			if k == key {
				return
			}
		case <-deadline:
			t.Fatalf("job %q did not run", key)
		}
	}
}

// auditTarget is the target of the newest audit row of action.
func auditTarget(t *testing.T, h *harness, action string) string {
	t.Helper()
	var target string
	if err := h.st.Reader().QueryRow(`SELECT coalesce(target, '') FROM kimi_audit_log WHERE action = ? ORDER BY id DESC LIMIT 1`,
		action).Scan(&target); err != nil {
		t.Fatal(err)
	}
	return target
}

// TestModuleJobsLeaseAndErrorAndOverview: a job running now shows its
// lease holder, a failed one its attempt and last error, and the overview
// shows the runner active with the job that waits behind the running one
// (one job per module at a time) counted as overdue.
func TestModuleJobsLeaseAndErrorAndOverview(t *testing.T) {
	p := &probe{slow: make(chan string, 4)}
	h := newHarness(t, withModules(p, false))
	h.createAdmin()
	requireRunning(t, h, probeName)
	ctx := context.Background()
	sch := p.runtime(t).Scheduler
	if err := sch.RunAt(ctx, "flaky", time.Now(), "fail", nil); err != nil {
		t.Fatal(err)
	}
	waitJob(t, h, "flaky", func(j scheduler.Job, ok bool) bool { return ok && j.LastError != "" && !j.Running(time.Now()) })
	// "hold" runs and keeps its lease; "late", due an hour ago, waits
	// behind it (one job per module at a time).
	if err := sch.RunAt(ctx, "hold", time.Now(), "slow", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.slow:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow job did not start")
	}
	if err := sch.RunAt(ctx, "late", time.Now().Add(-time.Hour), "tick", nil); err != nil {
		t.Fatal(err)
	}
	c := h.newClient()
	c.login(testUser, testPassword)

	page := c.get("/modules/probe")
	wantStatus(t, page, http.StatusOK)
	for _, want := range []string{`<code class="break" data-testid="job-holder">` + holderOf(t, h, "hold") + `</code>`,
		"probe: upstream said no", ">overdue, 1 hour ago<"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("module page lacks %q", want)
		}
	}

	// "late" waits behind "hold" (one job per module at a time); "flaky"
	// may be due again for its retry, so the count is 1 or 2.
	ov := c.get("/")
	wantStatus(t, ov, http.StatusOK)
	for _, want := range []string{`data-testid="card-scheduler"`, `data-state="active"`, "this process runs the jobs"} {
		if !strings.Contains(ov.body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	_, overdue, _ := strings.Cut(ov.body, `data-testid="scheduler-overdue">`)
	n, _, _ := strings.Cut(strings.TrimPrefix(overdue, `<span class="badge badge-warning">`), "<")
	if !strings.HasPrefix(overdue, `<span class="badge badge-warning">`) || n == "0" || n == "" {
		t.Errorf("overview's overdue jobs = %.80q, want a warning badge with the count (at least 1)", overdue)
	}
}

// holderOf is the lease holder of the probe's running job key.
func holderOf(t *testing.T, h *harness, key string) string {
	t.Helper()
	var holder string
	waitJob(t, h, key, func(j scheduler.Job, ok bool) bool {
		holder = j.LeaseHolder
		return ok && j.Running(time.Now())
	})
	if holder == "" {
		t.Fatal("running job without a holder")
	}
	return holder
}

// TestRelativeNext: a job's next run reads ahead ("in 5 minutes"), a due
// one as overdue.
func TestRelativeNext(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "now"},
		{30 * time.Second, "now"},
		{-30 * time.Second, "now"},
		{time.Minute, "in 1 minute"},
		{5 * time.Minute, "in 5 minutes"},
		{3 * time.Hour, "in 3 hours"},
		{30 * time.Hour, "tomorrow"},
		{4 * 24 * time.Hour, "in 4 days"},
		{30 * 24 * time.Hour, "Jul 1"},
		{250 * 24 * time.Hour, "Feb 6, 2027"},
		{-3 * time.Minute, "overdue, 3 minutes ago"},
		{-2 * time.Hour, "overdue, 2 hours ago"},
	}
	for _, tt := range tests {
		if got := relativeNext(now.Add(tt.d), now); got != tt.want {
			t.Errorf("relativeNext(now%+v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
