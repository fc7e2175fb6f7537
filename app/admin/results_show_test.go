package admin

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
)

// TestResultRowsShareOneRetryForm: the rows' Retry now buttons submit one
// form of the page (one CSRF field for all of them, not one per row), each
// with its row's id, and a click retries that row alone.
func TestResultRowsShareOneRetryForm(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	resultFixture(t, h) // two retryable rows: {blocked} and {retry}
	body := c.get(resultPage).body
	live := body[strings.Index(body, `data-testid="result-live"`):]
	if n := strings.Count(live, `name="_csrf"`); n != 1 {
		t.Errorf("the live region has %d CSRF fields, want 1 (the rows' shared form)", n)
	}
	for _, want := range []string{
		`<form id="result-retry-rows" method="post" action="/results/kudos/digest/42/retry">`,
		`<button type="submit" form="result-retry-rows" name="id" value="` + h.vars["blocked"] + `"`,
		`<button type="submit" form="result-retry-rows" name="id" value="` + h.vars["retry"] + `"`,
	} {
		if !strings.Contains(live, want) {
			t.Errorf("the live region lacks %q", want)
		}
	}
	// What a click on {blocked}'s button sends: the form's fields and the button's name and value.
	before := h.resultRetryMs(t, h.vars["retry"])
	wantStatus(t, c.post(resultPage+"/retry", url.Values{form.ResultsID: {h.vars["blocked"]}}), http.StatusSeeOther)
	if ms := h.resultRetryMs(t, h.vars["retry"]); ms != before {
		t.Errorf("retrying {blocked} moved {retry}'s next attempt: %d → %d", before, ms)
	}
	if ms := h.resultRetryMs(t, h.vars["blocked"]); ms > time.Now().UnixMilli() {
		t.Errorf("{blocked} is not due after its retry: retry_ms %d", ms)
	}
}

// TestResultRowsOmitEmptyTimes: a row's cells without a time (no next
// retry, no lease, not acknowledged) are empty, not an empty <time>, and
// those with one keep it with its exact time as the title.
func TestResultRowsOmitEmptyTimes(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	resultFixture(t, h)
	body := c.get(resultPage).body
	if strings.Contains(body, `<time title=""`) {
		t.Errorf("the page has an empty <time>")
	}
	for _, st := range []string{"pending", "acknowledged", "blocked"} {
		i := strings.Index(body, `data-testid="result-row-`+h.vars[st]+`"`)
		if i < 0 {
			t.Fatalf("no %s row", st)
		}
		row := body[i : i+strings.Index(body[i:], "</tr>")]
		want := map[string]int{"pending": 2, "acknowledged": 3, "blocked": 3}[st] // published, expires (+ acknowledged or next retry)
		if n := strings.Count(row, `<time title="`); n != want {
			t.Errorf("%s row has %d times, want %d: %s", st, n, want, row)
		}
	}
}
