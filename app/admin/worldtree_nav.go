package admin

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// worldtreeNav is the Worldtree state the server keeps across requests: whether Worldtree is
// configured, cached for the navigation of every page so a page view does not read the settings
// table (unknown until first read; saves and removals set it), and the result of each admin
// session's last save, shown once by the page the save redirects to.
type worldtreeNav struct {
	state atomic.Int32 // 0 unknown, 1 not configured, 2 configured

	mu      sync.Mutex
	results map[string]worldtreeResult // by admin session ID
}

// worldtreeResult is a save's connection-test outcome, waiting for the page that shows it.
type worldtreeResult struct {
	page  string // "/worldtree" or "/settings": the only page that shows it
	flash templates.Flash
	at    time.Time
}

// Bounds of the pending results: one per admin session, each shown within worldtreeResultTTL
// (the flash cookie's lifetime) or dropped, and never more than worldtreeMaxResults at once.
const (
	worldtreeResultTTL  = time.Minute
	worldtreeMaxResults = 256
)

func (w *worldtreeNav) set(configured bool) {
	if configured {
		w.state.Store(2)
	} else {
		w.state.Store(1)
	}
}

// putResult keeps the save result of session sessionID for page.
func (w *worldtreeNav) putResult(sessionID, page string, f templates.Flash, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.results == nil {
		w.results = map[string]worldtreeResult{}
	}
	if len(w.results) >= worldtreeMaxResults {
		for id, r := range w.results {
			if now.Sub(r.at) > worldtreeResultTTL {
				delete(w.results, id)
			}
		}
		if len(w.results) >= worldtreeMaxResults {
			clear(w.results)
		}
	}
	w.results[sessionID] = worldtreeResult{page: page, flash: f, at: now}
}

// takeResult returns and forgets the pending result of sessionID when it is for page and fresh.
func (w *worldtreeNav) takeResult(sessionID, page string, now time.Time) (templates.Flash, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.results[sessionID]
	if !ok || r.page != page {
		return templates.Flash{}, false
	}
	delete(w.results, sessionID)
	if now.Sub(r.at) > worldtreeResultTTL {
		return templates.Flash{}, false
	}
	return r.flash, true
}

// configured reports whether the Worldtree nav item shows. A failed read hides it this time and
// tries again on the next page.
func (s *Server) worldtreeConfigured(ctx context.Context) bool {
	switch s.worldtree.state.Load() {
	case 1:
		return false
	case 2:
		return true
	}
	st, err := settings.LoadWorldtree(ctx, s.opts.Store)
	if err != nil {
		s.log.Warn("read Worldtree settings for the navigation", "err", err)
		return false
	}
	v := int32(1)
	if st.Configured() {
		v = 2
	}
	// A save or removal that raced this read wins.
	s.worldtree.state.CompareAndSwap(0, v)
	return s.worldtree.state.Load() == 2
}
