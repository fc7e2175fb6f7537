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
