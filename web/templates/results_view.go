package templates

import (
	"github.com/a-h/templ"

	"github.com/kimiapp/kimi/app/admin/form"
)

// ResultsView is GET /results: the subscriptions' live region.
type ResultsView struct {
	Live string // the region's event stream
	List ResultsListView
	// Region, when set, is the live region rendered already (the admin's
	// kept render of List); List is then not rendered.
	Region templ.Component
}

// ResultsListView is the live region of /results: the subscriptions
// grouped by module.
type ResultsListView struct {
	Modules []ResultsModuleGroup
}

// ResultsModuleGroup is one module's subscriptions.
type ResultsModuleGroup struct {
	Module string
	Subs   []ResultSubRow
}

// ResultSubRow is one subscription's summary.
type ResultSubRow struct {
	Key       string // module/name/guild: the test ids' suffix
	TestKey   string // Key with "/" as "-"
	URL       string
	Module    string
	Name      string
	Guild     string // the guild's id
	GuildName string // "" when not known
	GuildRef  Name   // the guild as the page names it
	Counts    []ResultCount
	// Oldest is the oldest open notification's age ("" none).
	Oldest, OldestExact string
	LastError           string
	LastErrorAt         string
	LastErrorExact      string
	Badges              []ResultBadge
}

// ResultCount is one status' count, linking the filtered page.
type ResultCount struct {
	Status string
	Count  int
	URL    string
	Active bool
}

// ResultBadge is a subscription's state badge.
type ResultBadge struct {
	Kind, Text, Title string
}

// ResultSubView is GET /results/{module}/{name}/{guild}.
type ResultSubView struct {
	Title      string
	Sub        ResultSubRow
	Live       string
	ActionBase string // the subscription's address: …/retry, …/pause, …
	Paused     bool
	// Retryable and Expired are the counts the actions act on.
	Retryable, Expired int
	Filter             form.ResultsFilter
	Errors             form.Errors
	Detail             ResultSubDetail
	// Region, when set, is the live region rendered already (the admin's
	// kept render of Detail with the session's CSRF token); Detail is then
	// not rendered.
	Region templ.Component
}

// ResultSubDetail is the subscription page's live region: counts, badges
// and a page of notifications.
type ResultSubDetail struct {
	Sub        ResultSubRow
	ActionBase string
	Invalid    bool // the filter was refused: nothing listed
	Filtered   bool
	AllURL     string
	Rows       []ResultRow
	// CanRetry is whether a row has a Retry now button: the rows' buttons
	// share one form (and its CSRF field), resultRetryForm.
	CanRetry bool
	FirstURL string
	NextURL  string
}

// ResultRow is one notification.
type ResultRow struct {
	ID, Run, Task  string
	Revision       string
	Status, Kind   string // the status and its badge kind
	Attempts       string
	Detail         string
	NextRetry      string
	NextRetryExact string
	Lease          string
	LeaseExact     string
	Published      string
	PublishedExact string
	Expires        string
	ExpiresExact   string
	Acknowledged   string
	AckExact       string
	CanRetry       bool
}
