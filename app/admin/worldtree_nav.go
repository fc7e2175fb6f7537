package admin

import (
	"context"
	"sync/atomic"

	"github.com/kimiapp/kimi/app/settings"
)

// worldtreeNav caches whether Worldtree is configured, for the navigation of every page, so a page
// view does not read the settings table. Unknown until first read; saves and removals set it.
type worldtreeNav struct {
	state atomic.Int32 // 0 unknown, 1 not configured, 2 configured
}

func (w *worldtreeNav) set(configured bool) {
	if configured {
		w.state.Store(2)
	} else {
		w.state.Store(1)
	}
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
