package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/web/templates"
)

// ResultsAdmin is what the /results pages need of the scheduled-results
// outbox (app/serve.go passes the *results.Service): the subscriptions
// with their counts, a subscription's notifications, the operator's
// actions (each audited by the service) and a change signal for the live
// regions.
type ResultsAdmin interface {
	Subscriptions(ctx context.Context) ([]results.Subscription, error)
	Subscription(ctx context.Context, k results.SubKey) (results.Subscription, error)
	Notifications(ctx context.Context, k results.SubKey, f results.NotificationFilter) (results.NotificationPage, error)
	RetryNow(ctx context.Context, k results.SubKey, ids []string, a results.Actor) (int, error)
	SetPaused(ctx context.Context, k results.SubKey, paused bool, a results.Actor) error
	Unsubscribe(ctx context.Context, k results.SubKey, a results.Actor) (int, error)
	PurgeExpired(ctx context.Context, k results.SubKey, a results.Actor) (int, error)
	Watch(ctx context.Context) <-chan struct{}
}

var _ ResultsAdmin = (*results.Service)(nil)

// resultsPageSize is a subscription page's notifications per page.
const resultsPageSize = 25

// resultsActionTimeout bounds one operator action (one write).
const resultsActionTimeout = 30 * time.Second

var (
	// resultModuleRE is a module name; resultNameRE a subscription name
	// (the migration's CHECK); resultGuildRE a snowflake's digits.
	resultModuleRE = regexp.MustCompile(`\A[a-z][a-z0-9_-]{0,63}\z`)
	resultNameRE   = regexp.MustCompile(`\A[a-z0-9_]{1,64}\z`)
	resultGuildRE  = regexp.MustCompile(`\A[1-9][0-9]{0,19}\z`)
)

// requireResults answers 503 when the server runs without the results
// service (a server over an unmigrated database, some tests).
func (s *Server) requireResults(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.opts.Results == nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "The scheduled-results service is not running in this server.")
		}
		return next(c)
	}
}

// resultKeyParam is the {module}/{name}/{guild} of a subscription address;
// anything no subscription can have is a 404.
func resultKeyParam(c echo.Context) (results.SubKey, error) {
	return parseResultKey(c.Param("module"), c.Param("name"), c.Param("guild"))
}

func parseResultKey(module, name, guild string) (results.SubKey, error) {
	if !resultModuleRE.MatchString(module) || !resultNameRE.MatchString(name) || !resultGuildRE.MatchString(guild) {
		return results.SubKey{}, echo.ErrNotFound
	}
	id, err := strconv.ParseUint(guild, 10, 64)
	if err != nil || id > 1<<63-1 {
		return results.SubKey{}, echo.ErrNotFound
	}
	return results.SubKey{Module: module, Name: name, GuildID: id}, nil
}

// resultPath is a subscription's page.
func resultPath(k results.SubKey) string {
	return "/results/" + k.Module + "/" + k.Name + "/" + strconv.FormatUint(k.GuildID, 10)
}

// resultURL is a subscription's page with f's filter and cursor.
func resultURL(k results.SubKey, f form.ResultsFilter) string {
	if q := f.Query(true); q != "" {
		return resultPath(k) + "?" + q
	}
	return resultPath(k)
}

// resultsActor is the signed-in admin as the actor of an action.
func resultsActor(c echo.Context) results.Actor {
	return results.Actor{Admin: actor(c), IP: c.RealIP()}
}

// resultsNotFound maps the service's ErrNotFound to a 404.
func resultsNotFound(err error, what string) error {
	if errors.Is(err, results.ErrNotFound) {
		return echo.ErrNotFound
	}
	return fmt.Errorf("admin: %s: %w", what, err)
}

// resultActed keeps the action's message for the page it redirects to
// (the counts are the service's, which a flash code cannot carry).
func (s *Server) resultActed(c echo.Context, page, message string) error {
	s.resultSubs.invalidate() // the page redirected to shows the action's effect
	if sess := sessionOf(c); sess != nil {
		s.decisions.put(sess.ID, page, templates.Flash{Kind: templates.FlashSuccess, Message: message}, time.Now())
	}
	return c.Redirect(http.StatusSeeOther, page)
}

// guildNames are the guilds' names as the bot knows them (empty without
// the bot or before it connects).
func (s *Server) guildNames() map[uint64]string {
	names := map[uint64]string{}
	if s.opts.Discord == nil {
		return names
	}
	for _, g := range s.opts.Discord.Status().Guilds {
		if id, err := strconv.ParseUint(g.ID, 10, 64); err == nil && g.Name != "" {
			names[id] = g.Name
		}
	}
	return names
}

// resultStatusKind is a status' badge kind.
func resultStatusKind(st results.Status) string {
	switch st {
	case results.StatusAcknowledged:
		return "success"
	case results.StatusRetry, results.StatusDelivering:
		return "warning"
	case results.StatusBlocked:
		return "danger"
	}
	return "neutral"
}

// resultSubRow is a subscription's summary; active is the status filter
// of the page it is on ("" every status).
func resultSubRow(sub results.Subscription, names map[uint64]string, active string, now time.Time) templates.ResultSubRow {
	k := sub.SubKey
	r := templates.ResultSubRow{
		Key: k.String(), TestKey: strings.ReplaceAll(k.String(), "/", "-"), URL: resultPath(k),
		Module: k.Module, Name: k.Name, Guild: strconv.FormatUint(k.GuildID, 10), GuildName: names[k.GuildID],
		LastError: sub.LastError,
	}
	r.GuildRef = templates.Name{Kind: templates.KindGuild, ID: r.Guild, Known: r.GuildName != "", Label: r.GuildName}
	for _, st := range results.Statuses {
		r.Counts = append(r.Counts, templates.ResultCount{Status: string(st), Count: sub.Counts[st],
			URL: resultURL(k, form.ResultsFilter{Status: string(st)}), Active: active == string(st)})
	}
	if !sub.OldestPending.IsZero() {
		r.Oldest, r.OldestExact = relativeTime(sub.OldestPending, now), exactTime(sub.OldestPending)
	}
	if !sub.LastErrorAt.IsZero() {
		r.LastErrorAt, r.LastErrorExact = relativeTime(sub.LastErrorAt, now), exactTime(sub.LastErrorAt)
	}
	switch {
	case sub.Quarantined:
		r.Badges = append(r.Badges, templates.ResultBadge{Kind: "danger", Text: "quarantined",
			Title: results.DetailIgnoredCancel})
	case sub.Registered:
		r.Badges = append(r.Badges, templates.ResultBadge{Kind: "success", Text: "registered",
			Title: "A running instance of " + k.Module + " handles this subscription."})
	default:
		r.Badges = append(r.Badges, templates.ResultBadge{Kind: "neutral", Text: "not registered",
			Title: "No running instance of " + k.Module + " handles it now: its notifications wait (blocked) until the module subscribes again or they expire."})
	}
	if sub.Paused {
		r.Badges = append(r.Badges, templates.ResultBadge{Kind: "warning", Text: "paused", Title: results.DetailPaused})
	}
	return r
}

// resultsCache is the subscriptions as /results shows them, the pages of
// notifications subscription pages show, and the live regions rendered
// from them (results_kept.go), kept between changes: the list, every
// subscription page and every open live region share one read and one
// render per change. After a change the service signals (Watch: an
// enqueue, a claim, a settle, a subscription) they are rebuilt together
// once the change has settled for resultsRebuildAfter, off the request
// path; until the rebuild lands the pages serve the last good render (the
// live regions then follow). An operator's action drops them at once
// instead (invalidate): the page its redirect shows renders anew, with the
// action's effect. A page of notifications is also only good until the
// first expiry of an open row of its subscription
// (results.NotificationPage.Until: past it the row reads as expired), at
// most resultPagesCached of them are kept, and a read or a rebuild that
// races an invalidation is not kept.
type resultsCache struct {
	mu    sync.Mutex
	subs  []results.Subscription
	valid bool
	pages map[resultPageKey]results.NotificationPage
	gen   uint64
	// list and details are the kept renders, flights the reads and
	// renders of missing ones under way (results_kept.go).
	list    *keptList
	details map[resultPageKey]*keptDetail
	flights map[any]*resultFlight
}

// resultPagesCached bounds the pages of notifications kept: past it the
// cache starts over (a page is a few kilobytes).
const resultPagesCached = 256

// resultPageKey is one page of a subscription's notifications.
type resultPageKey struct {
	sub    results.SubKey
	filter results.NotificationFilter
}

func (r *resultsCache) invalidate() {
	r.mu.Lock()
	r.valid = false
	r.pages = nil
	r.list, r.details = nil, nil
	r.gen++
	r.mu.Unlock()
}

func (r *resultsCache) get(ctx context.Context, read func(context.Context) ([]results.Subscription, error)) ([]results.Subscription, error) {
	r.mu.Lock()
	if r.valid {
		subs := r.subs
		r.mu.Unlock()
		return subs, nil
	}
	gen := r.gen
	r.mu.Unlock()
	subs, err := read(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.gen == gen {
		r.subs, r.valid = subs, true
	}
	r.mu.Unlock()
	return subs, nil
}

// page is k's page of notifications for f, read by read unless a page
// kept since the last change is still good at now. Errors are not kept.
// The page's Items are shared: callers must not modify them.
func (r *resultsCache) page(ctx context.Context, k results.SubKey, f results.NotificationFilter, now time.Time,
	read func(context.Context, results.SubKey, results.NotificationFilter) (results.NotificationPage, error)) (results.NotificationPage, error) {
	key := resultPageKey{k, f}
	r.mu.Lock()
	if p, ok := r.pages[key]; ok && (p.Until.IsZero() || now.Before(p.Until)) {
		r.mu.Unlock()
		return p, nil
	}
	gen := r.gen
	r.mu.Unlock()
	p, err := read(ctx, k, f)
	if err != nil {
		return results.NotificationPage{}, err
	}
	r.mu.Lock()
	if r.gen == gen {
		if r.pages == nil || len(r.pages) >= resultPagesCached {
			r.pages = map[resultPageKey]results.NotificationPage{}
		}
		r.pages[key] = p
	}
	r.mu.Unlock()
	return p, nil
}

// watchResults rebuilds the cache (rebuildResults) resultsRebuildAfter
// after the first change of the service not yet rebuilt for, then signals
// resultsChanged (the live regions' source), until Close. A timer, not a
// poll: with no change nothing runs; under a stream of changes one rebuild
// per resultsRebuildAfter, each after every change before it.
func (s *Server) watchResults() {
	if s.opts.Results == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	changed := s.opts.Results.Watch(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var timer *time.Timer
		var due <-chan time.Time
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		for {
			select {
			case _, ok := <-changed:
				if !ok {
					return
				}
				if due == nil {
					timer = time.NewTimer(resultsRebuildAfter)
					due = timer.C
				}
			case <-due:
				due = nil
				s.rebuildResults(ctx)
				s.resultsChanged.Notify() // after: a stream's render reads the rebuilt cache
			}
		}
	}()
	s.unwatchResults = func() { cancel(); <-done }
}

// resultSubscriptions are every subscription (cached).
func (s *Server) resultSubscriptions(ctx context.Context) ([]results.Subscription, error) {
	return s.resultSubs.get(ctx, s.opts.Results.Subscriptions)
}

// resultSubscription is one subscription (cached); results.ErrNotFound
// when there is none.
func (s *Server) resultSubscription(ctx context.Context, k results.SubKey) (results.Subscription, error) {
	subs, err := s.resultSubscriptions(ctx)
	if err != nil {
		return results.Subscription{}, err
	}
	for _, sub := range subs {
		if sub.SubKey == k {
			return sub, nil
		}
	}
	return results.Subscription{}, results.ErrNotFound
}

// resultsListView reads every subscription, grouped by module.
func (s *Server) resultsListView(ctx context.Context) (templates.ResultsListView, error) {
	subs, err := s.resultSubscriptions(ctx)
	if err != nil {
		return templates.ResultsListView{}, fmt.Errorf("admin: results list: %w", err)
	}
	return resultsListOf(subs, s.guildNames(), time.Now()), nil
}

// resultsListOf is the list's view of subs.
func resultsListOf(subs []results.Subscription, names map[uint64]string, now time.Time) templates.ResultsListView {
	var v templates.ResultsListView
	for _, sub := range subs {
		if n := len(v.Modules); n == 0 || v.Modules[n-1].Module != sub.Module {
			v.Modules = append(v.Modules, templates.ResultsModuleGroup{Module: sub.Module})
		}
		g := &v.Modules[len(v.Modules)-1]
		g.Subs = append(g.Subs, resultSubRow(sub, names, "", now))
	}
	return v
}

// resultDetailView reads a subscription's live region for f (validated):
// an unknown subscription is echo.ErrNotFound; a cursor the service did
// not hand out is reported as badCursor with nothing listed. until is
// when the page read stops being good (zero: until a change).
func (s *Server) resultDetailView(ctx context.Context, k results.SubKey, f form.ResultsFilter) (sub results.Subscription, d templates.ResultSubDetail, badCursor bool, until time.Time, err error) {
	sub, err = s.resultSubscription(ctx, k)
	if err != nil {
		return sub, d, false, until, resultsNotFound(err, "result subscription")
	}
	now := time.Now()
	page, err := s.resultSubs.page(ctx, k, resultPageFilter(f), now, s.opts.Results.Notifications)
	switch {
	case errors.Is(err, results.ErrBadCursor):
		d = resultDetailOf(sub, results.NotificationPage{}, f, s.guildNames(), now)
		d.Invalid, d.FirstURL = true, ""
		return sub, d, true, until, nil
	case err != nil:
		return sub, d, false, until, resultsNotFound(err, "result notifications")
	}
	return sub, resultDetailOf(sub, page, f, s.guildNames(), now), false, page.Until, nil
}

// resultPageFilter is the service's filter for a page's f.
func resultPageFilter(f form.ResultsFilter) results.NotificationFilter {
	return results.NotificationFilter{Status: results.Status(f.Status), After: f.After, Limit: resultsPageSize}
}

// resultDetailOf is sub's live region showing page (read for f).
func resultDetailOf(sub results.Subscription, page results.NotificationPage, f form.ResultsFilter, names map[uint64]string, now time.Time) templates.ResultSubDetail {
	k := sub.SubKey
	d := templates.ResultSubDetail{Sub: resultSubRow(sub, names, f.Status, now), ActionBase: resultPath(k),
		Filtered: f.Status != "", AllURL: resultPath(k)}
	if len(page.Items) > 0 {
		d.Rows = make([]templates.ResultRow, 0, len(page.Items))
	}
	for _, n := range page.Items {
		r := resultRow(n, now)
		d.CanRetry = d.CanRetry || r.CanRetry
		d.Rows = append(d.Rows, r)
	}
	if page.Next != "" {
		next := f
		next.After = page.Next
		d.NextURL = resultURL(k, next)
	}
	if f.After != "" {
		first := f
		first.After = ""
		d.FirstURL = resultURL(k, first)
	}
	return d
}

// resultRow is one notification as the table shows it.
func resultRow(n results.Notification, now time.Time) templates.ResultRow {
	r := templates.ResultRow{
		ID: n.ID, Run: n.RunID, Task: n.TaskID, Revision: strconv.Itoa(n.Revision), Status: string(n.Status),
		Kind: resultStatusKind(n.Status), Attempts: plural(n.Attempts, "attempt"), Detail: n.Detail,
		Published: relativeTime(n.PublishedAt, now), PublishedExact: exactTime(n.PublishedAt),
		Expires: relativeNext(n.ExpiresAt, now), ExpiresExact: exactTime(n.ExpiresAt),
		CanRetry: n.Status == results.StatusRetry || n.Status == results.StatusBlocked,
	}
	if r.CanRetry && !n.RetryAt.IsZero() {
		r.NextRetry, r.NextRetryExact = relativeNext(n.RetryAt, now), exactTime(n.RetryAt)
	}
	if n.Status == results.StatusDelivering && !n.LeaseUntil.IsZero() {
		r.Lease, r.LeaseExact = "until "+exactTime(n.LeaseUntil), exactTime(n.LeaseUntil)
	}
	if !n.AcknowledgedAt.IsZero() {
		r.Acknowledged, r.AckExact = relativeTime(n.AcknowledgedAt, now), exactTime(n.AcknowledgedAt)
	}
	return r
}

// resultEventsURL is the live region's stream of a subscription page.
func resultEventsURL(k results.SubKey, f form.ResultsFilter) string {
	q := url.Values{"view": {"sub"}, "module": {k.Module}, "name": {k.Name}, "guild": {strconv.FormatUint(k.GuildID, 10)}}
	if f.Status != "" {
		q.Set(form.ResultsStatus, f.Status)
	}
	if f.After != "" {
		q.Set(form.ResultsAfter, f.After)
	}
	return "/results/events?" + q.Encode()
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
