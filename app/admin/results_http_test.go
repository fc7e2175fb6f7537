package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/results"
)

// resultKey is the subscription the /results scenarios set up.
var resultKey = results.SubKey{Module: "kudos", Name: "digest", GuildID: testGuild}

const resultPage = "/results/kudos/digest/42"

// resultRow is a notification a test inserts with plain SQL (the
// dispatcher is not started in the harness).
type resultFix struct {
	status  results.Status
	age     time.Duration // published this long ago
	retryIn time.Duration // retry_ms = now + retryIn (0: 0)
	detail  string
	expired bool // expires_ms in the past
}

// addSubscription inserts a subscription of k.
func (h *harness) addSubscription(t testing.TB, k results.SubKey) {
	t.Helper()
	if _, err := h.st.Writer().Exec(`INSERT INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES (?, ?, ?, ?)`,
		k.Module, k.Name, int64(k.GuildID), time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
}

// addResult inserts r (and its publication, a run of its own) for k and
// returns its id.
func (h *harness) addResult(t testing.TB, k results.SubKey, r resultFix) string {
	t.Helper()
	h.resultSeq++
	id := fmt.Sprintf("%032x", h.resultSeq)
	run := fmt.Sprintf("run-%d", h.resultSeq)
	now := time.Now().UnixMilli()
	pub, exp := now-r.age.Milliseconds(), now+results.Retention.Milliseconds()-r.age.Milliseconds()
	if r.expired {
		exp = now - 1
	}
	retry, detailMs, ack := int64(0), int64(0), int64(0)
	if r.retryIn != 0 {
		retry = now + r.retryIn.Milliseconds()
	}
	if r.detail != "" {
		detailMs = now
	}
	if r.status == results.StatusAcknowledged {
		ack = now
	}
	if _, err := h.st.Writer().Exec(`INSERT INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, published_ms, expires_ms, messages)
		VALUES (?, ?, 2, ?, 9, ?, ?, '[]')`, run, "task-"+run, int64(k.GuildID), pub, exp); err != nil {
		t.Fatal(err)
	}
	// Delivering is a pending row under a live lease (migration 00018).
	status, token, lease := r.status, "", int64(0)
	if status == results.StatusDelivering {
		status, token, lease = results.StatusPending, fmt.Sprintf("%032x", 1<<40+h.resultSeq), now+time.Minute.Milliseconds()
	}
	if _, err := h.st.Writer().Exec(`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms, status, attempts, retry_ms, detail, detail_ms, acknowledged_ms,
		lease_token, lease_until_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, run, k.Module, k.Name, int64(k.GuildID), pub, exp, string(status),
		min(h.resultSeq, 3), retry, r.detail, detailMs, ack, token, lease); err != nil {
		t.Fatal(err)
	}
	return id
}

// resultFixture subscribes kudos/digest/42 with one notification in each
// state: {pending}, {retry}, {blocked}, {acknowledged}, {expired}.
func resultFixture(t *testing.T, h *harness) {
	t.Helper()
	h.addSubscription(t, resultKey)
	h.vars["acknowledged"] = h.addResult(t, resultKey, resultFix{status: results.StatusAcknowledged, age: 3 * time.Hour})
	h.vars["expired"] = h.addResult(t, resultKey, resultFix{status: results.StatusExpired, age: 31 * 24 * time.Hour, expired: true})
	h.vars["blocked"] = h.addResult(t, resultKey, resultFix{status: results.StatusBlocked, age: 2 * time.Hour, retryIn: time.Minute, detail: results.DetailAccess})
	h.vars["retry"] = h.addResult(t, resultKey, resultFix{status: results.StatusRetry, age: time.Hour, retryIn: time.Hour, detail: "Subscriber raised *errors.errorString"})
	h.vars["pending"] = h.addResult(t, resultKey, resultFix{status: results.StatusPending, age: time.Minute})
}

func (h *harness) resultRetryMs(t *testing.T, id string) int64 {
	t.Helper()
	var ms int64
	if err := h.st.Reader().QueryRow(`SELECT retry_ms FROM kimi_result_notifications WHERE id = ?`, id).Scan(&ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

func (h *harness) resultSub(t *testing.T) (results.Subscription, error) {
	t.Helper()
	return h.results.Subscription(context.Background(), resultKey)
}

// followFlash follows an action's redirect to want and returns the page.
func followFlash(t *testing.T, c *client, res *response, want string) *response {
	t.Helper()
	if loc := res.Header.Get("Location"); loc != want {
		t.Fatalf("Location = %q, want %q", loc, want)
	}
	return c.get(want)
}

func withoutResults(o *Options) { o.Results = nil }

var resultScenarios = []scenario{
	{
		name: "the list groups subscriptions with counts, oldest waiting and last error", method: http.MethodGet, url: "/results",
		signedIn: true, setup: func(t *testing.T, h *harness) {
			resultFixture(t, h)
			h.addSubscription(t, results.SubKey{Module: "alpha", Name: "feed", GuildID: 7})
		},
		wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="results-module-kudos"`, `data-testid="results-module-alpha"`,
			`data-testid="result-count-kudos-digest-42-pending">1<`, `data-testid="result-count-kudos-digest-42-blocked">1<`,
			`data-testid="result-count-kudos-digest-42-expired">1<`, `data-testid="result-count-kudos-digest-42-acknowledged">1<`,
			`data-testid="result-count-alpha-feed-7-pending">0<`, "Oldest waiting: published", "2 hours ago",
			"Subscriber raised *errors.errorString", "not registered", `href="/results/kudos/digest/42"`,
			`data-live="/results/events?view=list"`},
		wantNotContains: []string{"No subscriptions yet"},
	},
	{
		name: "the empty list says what a subscription is and how a module gets one", method: http.MethodGet, url: "/results",
		signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{"No subscriptions yet", "permissions.scheduled_results", "result_guild_id"},
	},
	{
		name: "signed out, the list sends to the sign-in page", method: http.MethodGet, url: "/results",
		wantStatus: http.StatusSeeOther,
	},
	{
		name: "without the service the pages answer 503", method: http.MethodGet, url: "/results", signedIn: true,
		opts: []func(*Options){withoutResults}, wantStatus: http.StatusServiceUnavailable,
	},
	{
		name: "a subscription's page lists its notifications newest first with the actions", method: http.MethodGet, url: resultPage,
		signedIn: true, setup: resultFixture, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="result-row-{pending}" data-status="pending"`, `data-testid="result-row-{retry}" data-status="retry"`,
			`data-testid="result-retry-{blocked}"`, `data-testid="result-retry-{retry}"`, results.DetailAccess, "task-run-", "Retry now (2 waiting)",
			"Purge expired (1)", `data-testid="result-pause"`, `data-testid="result-unsubscribe"`, "the module subscribes again at its next start",
			`data-live="/results/events?`},
		wantNotContains: []string{`data-testid="result-retry-{pending}"`, `data-testid="result-retry-{acknowledged}"`},
	},
	{
		name: "the status filter lists only that status", method: http.MethodGet, url: resultPage + "?status=blocked",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusOK,
		wantContains:    []string{`data-testid="result-row-{blocked}"`, `<option value="blocked" selected>`},
		wantNotContains: []string{`data-testid="result-row-{pending}"`, `data-testid="result-row-{retry}"`},
	},
	{
		name: "an unknown status is a 400 with the reason", method: http.MethodGet, url: resultPage + "?status=lost",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusBadRequest,
		wantContains: []string{form.MsgResultsStatus}, wantNotContains: []string{`data-testid="result-row-`},
	},
	{
		name: "a cursor the service did not hand out is a 400, not a 500", method: http.MethodGet, url: resultPage + "?after=bm90LWEtY3Vyc29y",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusBadRequest,
		wantContains: []string{form.MsgResultsCursor}, wantNotContains: []string{`data-testid="result-row-`},
	},
	{
		name: "a cursor with other characters is a 400", method: http.MethodGet, url: resultPage + "?after=%27%20OR%201",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusBadRequest, wantContains: []string{form.MsgResultsCursor},
	},
	{name: "an unknown subscription's page", method: http.MethodGet, url: "/results/kudos/other/42", signedIn: true, wantStatus: http.StatusNotFound},
	{name: "a module no module can have", method: http.MethodGet, url: "/results/Kudos/digest/42", signedIn: true, wantStatus: http.StatusNotFound},
	{name: "a name no subscription can have", method: http.MethodGet, url: "/results/kudos/Digest-1/42", signedIn: true, wantStatus: http.StatusNotFound},
	{name: "guild 0", method: http.MethodGet, url: "/results/kudos/digest/0", signedIn: true, wantStatus: http.StatusNotFound},
	{name: "a guild that is not a number", method: http.MethodGet, url: "/results/kudos/digest/4x", signedIn: true, wantStatus: http.StatusNotFound},
	{name: "a guild past int64", method: http.MethodGet, url: "/results/kudos/digest/18446744073709551615", signedIn: true, wantStatus: http.StatusNotFound},
	{name: "the stream without a view", method: http.MethodGet, url: "/results/events", signedIn: true, wantStatus: http.StatusBadRequest},
	{
		name: "the stream of an unknown subscription", method: http.MethodGet, url: "/results/events?view=sub&module=kudos&name=none&guild=42",
		signedIn: true, wantStatus: http.StatusNotFound,
	},
	{
		name: "the stream of a bad address", method: http.MethodGet, url: "/results/events?view=sub&module=kudos&name=digest&guild=0",
		signedIn: true, wantStatus: http.StatusNotFound,
	},
	{
		name: "the stream with a bad status", method: http.MethodGet, url: "/results/events?view=sub&module=kudos&name=digest&guild=42&status=x",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusBadRequest,
	},

	{
		name: "retry now makes every retry and blocked row due, audited", method: http.MethodPost, url: resultPage + "/retry",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusSeeOther, wantLocation: resultPage, wantAudit: []string{results.ActionRetryNow},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, resultPage), "Retry requested: 2 notifications due now.")
			now := time.Now().UnixMilli()
			for _, id := range []string{h.vars["retry"], h.vars["blocked"]} {
				if ms := h.resultRetryMs(t, id); ms > now || ms < now-time.Minute.Milliseconds() {
					t.Errorf("row %s retry_ms = %d, want now (%d)", id, ms, now)
				}
			}
			if got := h.auditDetail(results.ActionRetryNow); !strings.Contains(got, "2 notifications") {
				t.Errorf("audit = %q", got)
			}
		},
	},
	{
		name: "retry now of one row", method: http.MethodPost, url: resultPage + "/retry", form: url.Values{form.ResultsID: {"{blocked}"}},
		signedIn: true, setup: resultFixture, wantStatus: http.StatusSeeOther, wantLocation: resultPage, wantAudit: []string{results.ActionRetryNow},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, resultPage), "Retry requested: 1 notification due now.")
			if ms := h.resultRetryMs(t, h.vars["retry"]); ms < time.Now().Add(30*time.Minute).UnixMilli() {
				t.Errorf("the other row was made due: %d", ms)
			}
		},
	},
	{
		name: "retry now with a bad id", method: http.MethodPost, url: resultPage + "/retry", form: url.Values{form.ResultsID: {"1 OR 1"}},
		signedIn: true, setup: resultFixture, wantStatus: http.StatusBadRequest, wantNoAudit: true, wantContains: []string{form.MsgResultsID},
	},
	{
		// The page's rows share one form: a button submits its row's id
		// alone, so two ids are a forged or broken request, not a choice.
		name: "retry now with two ids", method: http.MethodPost, url: resultPage + "/retry", form: url.Values{form.ResultsID: {"{blocked}", "{retry}"}},
		signedIn: true, setup: resultFixture, wantStatus: http.StatusBadRequest, wantNoAudit: true, wantContains: []string{form.MsgResultsID},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			for _, id := range []string{h.vars["retry"], h.vars["blocked"]} {
				if ms := h.resultRetryMs(t, id); ms < time.Now().Add(30*time.Second).UnixMilli() {
					t.Errorf("a refused request made row %s due: %d", id, ms)
				}
			}
		},
	},
	{
		name: "retry now of another subscription's row retries nothing", method: http.MethodPost, url: resultPage + "/retry", form: url.Values{form.ResultsID: {"{other}"}},
		signedIn: true, setup: func(t *testing.T, h *harness) {
			resultFixture(t, h)
			other := results.SubKey{Module: "kudos", Name: "weekly", GuildID: 42}
			h.addSubscription(t, other)
			h.vars["other"] = h.addResult(t, other, resultFix{status: results.StatusRetry, age: time.Hour, retryIn: time.Hour})
		},
		wantStatus: http.StatusSeeOther, wantLocation: resultPage, wantAudit: []string{results.ActionRetryNow},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, resultPage), "Nothing to retry: that notification of this subscription is no longer retrying or blocked.")
			for _, id := range []string{h.vars["other"], h.vars["retry"]} {
				if ms := h.resultRetryMs(t, id); ms < time.Now().Add(30*time.Minute).UnixMilli() {
					t.Errorf("row %s was made due by a retry of another subscription's page: %d", id, ms)
				}
			}
		},
	},
	{
		name: "retry now of an unknown subscription", method: http.MethodPost, url: "/results/kudos/none/42/retry",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "retry now of a bad address", method: http.MethodPost, url: "/results/kudos/digest/0/retry",
		signedIn: true, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "retry now without the CSRF token", method: http.MethodPost, url: resultPage + "/retry", noCSRF: true,
		signedIn: true, setup: resultFixture, wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if ms := h.resultRetryMs(t, h.vars["retry"]); ms < time.Now().Add(30*time.Minute).UnixMilli() {
				t.Errorf("a refused request made the row due: %d", ms)
			}
		},
	},
	{
		name: "retry now signed out", method: http.MethodPost, url: resultPage + "/retry",
		setup: resultFixture, wantStatus: http.StatusUnauthorized, wantNoAudit: true,
	},
	{
		name: "pause delivery, audited", method: http.MethodPost, url: resultPage + "/pause", form: url.Values{form.ResultsPaused: {"true"}},
		signedIn: true, setup: resultFixture, wantStatus: http.StatusSeeOther, wantLocation: resultPage, wantAudit: []string{results.ActionPause},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := followFlash(t, c, res, resultPage)
			wantBody(t, page, "Delivery paused", `data-testid="result-resume"`, ">paused<")
			if sub, err := h.resultSub(t); err != nil || !sub.Paused {
				t.Errorf("subscription = %+v, %v; want paused", sub, err)
			}
		},
	},
	{
		name: "resume delivery makes waiting rows due, audited", method: http.MethodPost, url: resultPage + "/pause", form: url.Values{form.ResultsPaused: {"false"}},
		signedIn: true, setup: func(t *testing.T, h *harness) {
			resultFixture(t, h)
			if err := h.results.SetPaused(context.Background(), resultKey, true, results.Actor{Admin: "other"}); err != nil {
				t.Fatal(err)
			}
		},
		wantStatus: http.StatusSeeOther, wantLocation: resultPage, wantAudit: []string{results.ActionResume},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, resultPage), "Delivery resumed", `data-testid="result-pause"`)
			if sub, err := h.resultSub(t); err != nil || sub.Paused {
				t.Errorf("subscription = %+v, %v; want resumed", sub, err)
			}
			if ms := h.resultRetryMs(t, h.vars["retry"]); ms > time.Now().UnixMilli() {
				t.Errorf("the retry row is not due after resume: %d", ms)
			}
		},
	},
	{
		name: "resume of a running subscription (a stale page) changes nothing, audited as such", method: http.MethodPost, url: resultPage + "/pause",
		form: url.Values{form.ResultsPaused: {"false"}}, signedIn: true, setup: resultFixture,
		wantStatus: http.StatusSeeOther, wantLocation: resultPage, wantAudit: []string{results.ActionResume},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, resultPage), "Delivery was not paused; nothing changed.", `data-testid="result-pause"`)
			if ms := h.resultRetryMs(t, h.vars["retry"]); ms <= time.Now().UnixMilli() {
				t.Errorf("the retry row's back-off was cut: retry_ms %d", ms)
			}
			if got, want := h.auditDetail(results.ActionResume), "admin kudos/digest/42 "+results.DetailNotPaused; got != want {
				t.Errorf("audit = %q, want %q", got, want)
			}
		},
	},
	{
		name: "pause with another word", method: http.MethodPost, url: resultPage + "/pause", form: url.Values{form.ResultsPaused: {"yes"}},
		signedIn: true, setup: resultFixture, wantStatus: http.StatusBadRequest, wantNoAudit: true, wantContains: []string{form.MsgResultsPaused},
	},
	{
		name: "pause an unknown subscription", method: http.MethodPost, url: "/results/kudos/none/42/pause", form: url.Values{form.ResultsPaused: {"true"}},
		signedIn: true, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "pause without the CSRF token", method: http.MethodPost, url: resultPage + "/pause", form: url.Values{form.ResultsPaused: {"true"}},
		noCSRF: true, signedIn: true, setup: resultFixture, wantStatus: http.StatusForbidden, wantNoAudit: true,
	},
	{
		name: "unsubscribe asks first, with the warning, and deletes nothing", method: http.MethodPost, url: resultPage + "/unsubscribe",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{`data-testid="confirm-form"`, "pending, retrying and blocked ones too", "subscribes again at its next start",
			`action="/results/kudos/digest/42/unsubscribe"`},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if sub, err := h.resultSub(t); err != nil || sub.Counts[results.StatusPending] != 1 {
				t.Errorf("subscription after the question = %+v, %v", sub, err)
			}
		},
	},
	{
		name: "unsubscribe confirmed deletes it and its notifications, audited", method: http.MethodPost, url: resultPage + "/unsubscribe",
		form: url.Values{form.FieldConfirm: {form.ConfirmYes}}, signedIn: true, setup: resultFixture,
		wantStatus: http.StatusSeeOther, wantLocation: "/results", wantAudit: []string{results.ActionUnsubscribe},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, "/results"), "Unsubscribed kudos/digest/42: 5 notifications deleted.", "No subscriptions yet")
			if _, err := h.resultSub(t); err == nil {
				t.Error("the subscription is still there")
			}
			if got := h.auditDetail(results.ActionUnsubscribe); !strings.Contains(got, "5 notifications") {
				t.Errorf("audit = %q", got)
			}
		},
	},
	{
		name: "unsubscribe an unknown subscription", method: http.MethodPost, url: "/results/kudos/none/42/unsubscribe",
		form: url.Values{form.FieldConfirm: {form.ConfirmYes}}, signedIn: true, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "unsubscribe without the CSRF token", method: http.MethodPost, url: resultPage + "/unsubscribe",
		form: url.Values{form.FieldConfirm: {form.ConfirmYes}}, noCSRF: true, signedIn: true, setup: resultFixture,
		wantStatus: http.StatusForbidden, wantNoAudit: true,
	},
	{
		name: "purge expired asks first", method: http.MethodPost, url: resultPage + "/purge",
		signedIn: true, setup: resultFixture, wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{`data-testid="confirm-form"`, `action="/results/kudos/digest/42/purge"`},
	},
	{
		name: "purge expired confirmed, audited", method: http.MethodPost, url: resultPage + "/purge",
		form: url.Values{form.FieldConfirm: {form.ConfirmYes}}, signedIn: true, setup: resultFixture,
		wantStatus: http.StatusSeeOther, wantLocation: resultPage, wantAudit: []string{results.ActionPurgeExpired},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, followFlash(t, c, res, resultPage), "Purged 1 expired notification.", "Purge expired (0)")
			if sub, err := h.resultSub(t); err != nil || sub.Counts[results.StatusExpired] != 0 || sub.Counts[results.StatusPending] != 1 {
				t.Errorf("subscription after purge = %+v, %v", sub, err)
			}
		},
	},
	{
		name: "purge an unknown subscription", method: http.MethodPost, url: "/results/kudos/none/42/purge",
		form: url.Values{form.FieldConfirm: {form.ConfirmYes}}, signedIn: true, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "purge without the CSRF token", method: http.MethodPost, url: resultPage + "/purge",
		form: url.Values{form.FieldConfirm: {form.ConfirmYes}}, noCSRF: true, signedIn: true, setup: resultFixture,
		wantStatus: http.StatusForbidden, wantNoAudit: true,
	},
	{
		name: "an action without the service", method: http.MethodPost, url: resultPage + "/retry",
		signedIn: true, opts: []func(*Options){withoutResults}, wantStatus: http.StatusServiceUnavailable, wantNoAudit: true,
	},
}

var (
	resultRowRE = regexp.MustCompile(`data-testid="result-row-([0-9a-f]{32})"`)
	pageNextRE  = regexp.MustCompile(`href="([^"]+)" rel="next"`)
)

func TestResultScenarios(t *testing.T) { runScenarios(t, resultScenarios) }

// TestResultPages walks a subscription's notifications a page at a time
// (Older →) and back to the newest, each row once.
func TestResultPages(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	h.addSubscription(t, resultKey)
	want := map[string]bool{}
	for i := 0; i < resultsPageSize+7; i++ {
		want[h.addResult(t, resultKey, resultFix{status: results.StatusAcknowledged, age: time.Duration(i) * time.Second})] = true
	}
	seen := map[string]bool{}
	page := c.get(resultPage)
	for n := 0; ; n++ {
		wantStatus(t, page, http.StatusOK)
		for _, m := range resultRowRE.FindAllStringSubmatch(page.body, -1) {
			if seen[m[1]] {
				t.Errorf("row %s listed twice", m[1])
			}
			seen[m[1]] = true
		}
		next := pageNextRE.FindStringSubmatch(page.body)
		if next == nil {
			break
		}
		if n > 3 {
			t.Fatal("pagination does not end")
		}
		page = c.get(strings.ReplaceAll(next[1], "&amp;", "&"))
		wantBody(t, page, `data-testid="page-first"`)
	}
	if len(seen) != len(want) {
		t.Errorf("listed %d rows, want %d", len(seen), len(want))
	}
}
