package form

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Field names of the /results forms, shared by results.templ and the
// handlers.
const (
	// ResultsStatus and ResultsAfter are the GET filter of a
	// subscription's notifications (status, keyset cursor).
	ResultsStatus = "status"
	ResultsAfter  = "after"
	// ResultsID is the notification of a row's "Retry now" (POST
	// …/retry); absent, the form retries every retry and blocked row.
	ResultsID = "id"
	// ResultsPaused is the pause/resume form's state asked for
	// (POST …/pause): "true" or "false".
	ResultsPaused = "paused"
)

// Messages of refused /results forms.
const (
	MsgResultsStatus = "Choose pending, delivering, retry, blocked, acknowledged or expired (or every status)."
	MsgResultsCursor = "The page cursor is not valid. Go back to the newest page."
	MsgResultsID     = "The notification is not valid: reload the page and press the button again."
	MsgResultsPaused = "Choose whether delivery is paused."
)

// resultsStatuses are the filter's values (app/results.Statuses; the form
// package knows nothing of the service).
var resultsStatuses = []string{"pending", "delivering", "retry", "blocked", "acknowledged", "expired"}

var (
	resultsCursorRE = regexp.MustCompile(`\A[A-Za-z0-9_-]{1,128}\z`)
	resultsIDRE     = regexp.MustCompile(`\A[0-9a-f]{32}\z`)
)

// ResultsFilter is a subscription page's filter (GET …?status=&after=).
type ResultsFilter struct{ Status, After string }

// ParseResultsFilter reads the filter from r's query.
func ParseResultsFilter(r *http.Request) ResultsFilter {
	q := r.URL.Query()
	return ResultsFilter{Status: clipRunes(strings.TrimSpace(q.Get(ResultsStatus)), 300), After: clipRunes(strings.TrimSpace(q.Get(ResultsAfter)), 300)}
}

// Validate checks the status and the cursor's form (the service decides
// whether it is one it handed out).
func (f ResultsFilter) Validate() Errors {
	var e Errors
	if f.Status != "" && !contains(resultsStatuses, f.Status) {
		e.Add(ResultsStatus, MsgResultsStatus)
	}
	if f.After != "" && !resultsCursorRE.MatchString(f.After) {
		e.Add(ResultsAfter, MsgResultsCursor)
	}
	return e
}

// Query is the filter as a query string (without "?"), the cursor
// included when withCursor; "" when empty.
func (f ResultsFilter) Query(withCursor bool) string {
	q := url.Values{}
	if f.Status != "" {
		q.Set(ResultsStatus, f.Status)
	}
	if withCursor && f.After != "" {
		q.Set(ResultsAfter, f.After)
	}
	return q.Encode()
}

// ResultsRetry is "Retry now": of one notification (ID) or of every retry
// and blocked one (ID "").
type ResultsRetry struct {
	ID string
	// repeated: the form held more than one id (a page's rows share one
	// form, each button submitting its own row's id alone).
	repeated bool
}

// ParseResultsRetry reads the retry form from r.
func ParseResultsRetry(r *http.Request) ResultsRetry {
	id := strings.TrimSpace(value(r, ResultsID)) // parses r.Form
	return ResultsRetry{ID: id, repeated: len(r.Form[ResultsID]) > 1}
}

// Validate refuses an id that is not a notification id, and more than one.
func (f ResultsRetry) Validate() Errors {
	var e Errors
	if f.repeated || f.ID != "" && !resultsIDRE.MatchString(f.ID) {
		e.Add(FieldForm, MsgResultsID)
	}
	return e
}

// IDs is the service's ids argument: nil for all, else the one id.
func (f ResultsRetry) IDs() []string {
	if f.ID == "" {
		return nil
	}
	return []string{f.ID}
}

// ResultsPause is the pause/resume form of a subscription.
type ResultsPause struct {
	Paused bool
	raw    string
}

// ParseResultsPause reads the pause form from r.
func ParseResultsPause(r *http.Request) ResultsPause {
	raw := strings.TrimSpace(value(r, ResultsPaused))
	return ResultsPause{Paused: raw == "true", raw: raw}
}

// Validate refuses anything but "true" or "false".
func (f ResultsPause) Validate() Errors {
	var e Errors
	if f.raw != "true" && f.raw != "false" {
		e.Add(FieldForm, MsgResultsPaused)
	}
	return e
}

// ResultsUnsubscribe is a subscription's "Unsubscribe" (confirmed first).
type ResultsUnsubscribe struct{ Confirmed bool }

// ParseResultsUnsubscribe reads the unsubscribe form from r.
func ParseResultsUnsubscribe(r *http.Request) ResultsUnsubscribe {
	return ResultsUnsubscribe{Confirmed: Confirmed(r)}
}

// ResultsPurge is a subscription's "Purge expired" (confirmed first).
type ResultsPurge struct{ Confirmed bool }

// ParseResultsPurge reads the purge form from r.
func ParseResultsPurge(r *http.Request) ResultsPurge {
	return ResultsPurge{Confirmed: Confirmed(r)}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
