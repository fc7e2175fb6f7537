package form

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestResultsFormsValidate(t *testing.T) {
	get := func(q url.Values) *http.Request {
		return httptest.NewRequest(http.MethodGet, "/results/kudos/digest/42?"+q.Encode(), nil)
	}
	id := strings.Repeat("ab", 16)
	tests := []struct {
		name string
		errs Errors
		want Errors
	}{
		{"no filter", ParseResultsFilter(get(nil)).Validate(), nil},
		{"a status and a cursor", ParseResultsFilter(get(url.Values{ResultsStatus: {"blocked"}, ResultsAfter: {"MTIzLmFi"}})).Validate(), nil},
		{"an unknown status", ParseResultsFilter(get(url.Values{ResultsStatus: {"lost"}})).Validate(), Errors{ResultsStatus: MsgResultsStatus}},
		{"a cursor with other characters", ParseResultsFilter(get(url.Values{ResultsAfter: {"a b"}})).Validate(), Errors{ResultsAfter: MsgResultsCursor}},
		{"retry all", ParseResultsRetry(post(t, "/", url.Values{})).Validate(), nil},
		{"retry one", ParseResultsRetry(post(t, "/", url.Values{ResultsID: {id}})).Validate(), nil},
		{"retry a bad id", ParseResultsRetry(post(t, "/", url.Values{ResultsID: {"ABC"}})).Validate(), Errors{FieldForm: MsgResultsID}},
		{"retry two ids", ParseResultsRetry(post(t, "/", url.Values{ResultsID: {id, strings.Repeat("cd", 16)}})).Validate(), Errors{FieldForm: MsgResultsID}},
		{"retry one id twice", ParseResultsRetry(post(t, "/", url.Values{ResultsID: {id, id}})).Validate(), Errors{FieldForm: MsgResultsID}},
		{"pause", ParseResultsPause(post(t, "/", url.Values{ResultsPaused: {"true"}})).Validate(), nil},
		{"resume", ParseResultsPause(post(t, "/", url.Values{ResultsPaused: {"false"}})).Validate(), nil},
		{"pause without a state", ParseResultsPause(post(t, "/", url.Values{})).Validate(), Errors{FieldForm: MsgResultsPaused}},
		{"pause with another word", ParseResultsPause(post(t, "/", url.Values{ResultsPaused: {"yes"}})).Validate(), Errors{FieldForm: MsgResultsPaused}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !maps.Equal(tt.errs, tt.want) {
				t.Errorf("Validate() = %v, want %v", tt.errs, tt.want)
			}
		})
	}
	if f := ParseResultsRetry(post(t, "/", url.Values{ResultsID: {id}})); len(f.IDs()) != 1 || f.IDs()[0] != id {
		t.Errorf("IDs = %v", f.IDs())
	}
	if f := ParseResultsRetry(post(t, "/", url.Values{})); f.IDs() != nil {
		t.Errorf("IDs of retry all = %v, want nil", f.IDs())
	}
	if q := (ResultsFilter{Status: "retry", After: "x"}).Query(false); q != "status=retry" {
		t.Errorf("Query = %q", q)
	}
	if !ParseResultsUnsubscribe(post(t, "/", url.Values{FieldConfirm: {ConfirmYes}})).Confirmed || ParseResultsPurge(post(t, "/", url.Values{})).Confirmed {
		t.Error("confirmation not read")
	}
}
