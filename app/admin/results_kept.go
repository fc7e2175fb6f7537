package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/a-h/templ"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/web/templates"
)

// resultsRebuildAfter is how long after a change the service signals the
// /results cache is rebuilt: the dispatcher signals after every step's
// commit, tens of times a second under load, and one rebuild then covers
// every change of the window. It is also the longest a page serves a
// render older than a background change (plus the rebuild itself); the
// live regions follow the rebuild.
const resultsRebuildAfter = 75 * time.Millisecond

// resultsRenderTTL bounds how long a kept render is served with no change
// at all: its relative times ("3 minutes ago", "in 29 days") are as of its
// render, so past this a request renders anew.
const resultsRenderTTL = 15 * time.Second

// keptList is /results' live region rendered (it holds no form).
type keptList struct {
	html []byte
	at   time.Time
	// hot: served since the last rebuild (a rebuild renders only what is
	// being looked at; the rest is dropped and renders on its next request).
	hot bool
}

// keptDetail is a subscription page's live region rendered with csrfSlot
// in place of the session's CSRF token (its Retry now forms), with the
// subscription it was read with (the page's actions card) and its region's
// view without its rows.
type keptDetail struct {
	sub   results.Subscription
	d     templates.ResultSubDetail
	html  spliced
	at    time.Time
	until time.Time // the page's first expiry (zero: none)
	hot   bool
}

func (e *keptDetail) good(now time.Time) bool {
	return now.Sub(e.at) < resultsRenderTTL && (e.until.IsZero() || now.Before(e.until))
}

// rawRegion is html as a component.
func rawRegion(html []byte) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := w.Write(html)
		return err
	})
}

// renderBytes is cmp's HTML.
func renderBytes(ctx context.Context, cmp templ.Component) ([]byte, error) {
	var buf bytes.Buffer
	if err := cmp.Render(ctx, &buf); err != nil {
		return nil, fmt.Errorf("admin: render a kept region: %w", err)
	}
	return buf.Bytes(), nil
}

// newKeptDetail renders d (sub's region, read at now, good until until).
func newKeptDetail(ctx context.Context, sub results.Subscription, d templates.ResultSubDetail, now, until time.Time) (*keptDetail, error) {
	html, err := renderBytes(ctx, templates.ResultDetail(csrfSlot, d))
	if err != nil {
		return nil, err
	}
	d.Rows = nil // rendered: only the region's header fields are read again
	return &keptDetail{sub: sub, d: d, html: newSpliced(html), at: now, until: until}, nil
}

// resultFlight is one request's read and render of a region the cache
// lacks, which the requests that want the same region meanwhile wait for
// instead of each reading and rendering it too (after an operator's
// action drops the cache, every open page asks at once). Only requests
// that arrive before the cache's next invalidation join it (gen).
type resultFlight struct {
	gen    uint64
	done   chan struct{}
	list   []byte
	detail *keptDetail
	bad    bool
	err    error
}

// resultListFlight is the flights' key of the list.
type resultListFlight struct{}

// flight is the flight for key to join (leader false: wait for its done)
// or, with none of this generation, a new one the caller leads. r.mu is
// held.
func (r *resultsCache) flight(key any) (f *resultFlight, leader bool) {
	if f := r.flights[key]; f != nil && f.gen == r.gen {
		return f, false
	}
	if r.flights == nil {
		r.flights = map[any]*resultFlight{}
	}
	f = &resultFlight{gen: r.gen, done: make(chan struct{})}
	r.flights[key] = f
	return f, true
}

// land ends f (the leader's, for key), keeping its render when no
// invalidation came since it started (keep runs with r.mu held).
func (r *resultsCache) land(key any, f *resultFlight, keep func()) {
	r.mu.Lock()
	if f.err == nil && !f.bad && r.gen == f.gen {
		keep()
	}
	if r.flights[key] == f {
		delete(r.flights, key)
	}
	r.mu.Unlock()
	close(f.done)
}

// wait is f's outcome for a request that joined it: ok false when f
// failed (the request then reads for itself: the leader's error may be
// its own request's).
func (f *resultFlight) wait(ctx context.Context) (ok bool, err error) {
	select {
	case <-f.done:
		return f.err == nil, nil
	case <-ctx.Done():
		return false, fmt.Errorf("admin: wait for the results region: %w", ctx.Err())
	}
}

// resultsListHTML is /results' live region, kept until the next rebuild
// (or resultsRenderTTL), read and rendered on the request only when none
// is kept (once for every request that asks meanwhile).
func (s *Server) resultsListHTML(ctx context.Context) ([]byte, error) {
	r := &s.resultSubs
	now := time.Now()
	r.mu.Lock()
	if e := r.list; e != nil && now.Sub(e.at) < resultsRenderTTL {
		e.hot = true
		r.mu.Unlock()
		return e.html, nil
	}
	f, leader := r.flight(resultListFlight{})
	r.mu.Unlock()
	if !leader {
		if ok, err := f.wait(ctx); err != nil || ok {
			return f.list, err
		}
		return s.readResultsList(ctx)
	}
	f.list, f.err = s.readResultsList(ctx)
	r.land(resultListFlight{}, f, func() { r.list = &keptList{html: f.list, at: now, hot: true} })
	return f.list, f.err
}

// readResultsList reads and renders /results' live region.
func (s *Server) readResultsList(ctx context.Context) ([]byte, error) {
	v, err := s.resultsListView(ctx)
	if err != nil {
		return nil, err
	}
	return renderBytes(ctx, templates.ResultsList(v))
}

// resultDetailKept is k's live region for f (validated), kept until the
// next rebuild, its page's first expiry or resultsRenderTTL, read and
// rendered on the request only when none is kept (once for every request
// that asks meanwhile). A cursor the service did not hand out is
// badCursor (and nothing is kept).
func (s *Server) resultDetailKept(ctx context.Context, k results.SubKey, f form.ResultsFilter) (e *keptDetail, badCursor bool, err error) {
	r := &s.resultSubs
	key := resultPageKey{k, resultPageFilter(f)}
	now := time.Now()
	r.mu.Lock()
	if e := r.details[key]; e != nil && e.good(now) {
		e.hot = true
		r.mu.Unlock()
		return e, false, nil
	}
	fl, leader := r.flight(key)
	r.mu.Unlock()
	if !leader {
		if ok, err := fl.wait(ctx); err != nil || ok {
			return fl.detail, fl.bad, err
		}
		return s.readResultDetail(ctx, k, f, now)
	}
	fl.detail, fl.bad, fl.err = s.readResultDetail(ctx, k, f, now)
	r.land(key, fl, func() {
		if r.details == nil || len(r.details) >= resultPagesCached {
			r.details = map[resultPageKey]*keptDetail{}
		}
		fl.detail.hot = true
		r.details[key] = fl.detail
	})
	return fl.detail, fl.bad, fl.err
}

// readResultDetail reads and renders k's live region for f.
func (s *Server) readResultDetail(ctx context.Context, k results.SubKey, f form.ResultsFilter, now time.Time) (*keptDetail, bool, error) {
	sub, d, bad, until, err := s.resultDetailView(ctx, k, f)
	if err != nil {
		return nil, false, err
	}
	e, err := newKeptDetail(ctx, sub, d, now, until)
	return e, bad, err
}

// rebuildResults reads and renders anew what the cache holds that was
// served since the last rebuild (the list, the subscription pages), and
// replaces the cache with it in one step; the rest is dropped. Nothing
// looked at: the cache is just dropped. A failed read drops it too (the
// next request reads for itself), and a rebuild that races an operator's
// invalidation is not kept.
func (s *Server) rebuildResults(ctx context.Context) {
	r := &s.resultSubs
	r.mu.Lock()
	gen := r.gen
	listHot := r.list != nil && r.list.hot
	var keys []resultPageKey
	for key, e := range r.details {
		if e.hot {
			keys = append(keys, key)
		}
	}
	r.mu.Unlock()
	if !listHot && len(keys) == 0 {
		r.invalidate()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, subs, pages, details, err := s.buildResults(ctx, listHot, keys)
	if err != nil {
		s.log.Warn("rebuild the results pages", "err", err)
		r.invalidate()
		return
	}
	r.mu.Lock()
	if r.gen == gen {
		r.subs, r.valid, r.pages, r.list, r.details = subs, true, pages, list, details
		r.gen++ // a request's read from before the rebuild is older: not kept
	}
	r.mu.Unlock()
}

// buildResults reads every subscription and each of keys' pages, and
// renders the list (with list) and each page's region.
func (s *Server) buildResults(ctx context.Context, list bool, keys []resultPageKey) (*keptList, []results.Subscription,
	map[resultPageKey]results.NotificationPage, map[resultPageKey]*keptDetail, error) {
	subs, err := s.opts.Results.Subscriptions(ctx)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("admin: read the result subscriptions: %w", err)
	}
	names, now := s.guildNames(), time.Now()
	var kl *keptList
	if list {
		html, err := renderBytes(ctx, templates.ResultsList(resultsListOf(subs, names, now)))
		if err != nil {
			return nil, nil, nil, nil, err
		}
		kl = &keptList{html: html, at: now}
	}
	bySub := make(map[results.SubKey]results.Subscription, len(subs))
	for _, sub := range subs {
		bySub[sub.SubKey] = sub
	}
	pages := make(map[resultPageKey]results.NotificationPage, len(keys))
	details := make(map[resultPageKey]*keptDetail, len(keys))
	for _, key := range keys {
		sub, ok := bySub[key.sub]
		if !ok {
			continue // unsubscribed: its page is a 404 now
		}
		page, err := s.opts.Results.Notifications(ctx, key.sub, key.filter)
		if err != nil {
			continue // a cursor gone stale: the page's next request says so
		}
		f := form.ResultsFilter{Status: string(key.filter.Status), After: key.filter.After}
		e, err := newKeptDetail(ctx, sub, resultDetailOf(sub, page, f, names, now), now, page.Until)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		pages[key], details[key] = page, e
	}
	return kl, subs, pages, details, nil
}
