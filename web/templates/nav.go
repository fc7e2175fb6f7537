package templates

import (
	"bytes"
	"context"
	"sync"

	"github.com/a-h/templ"
)

// navKey names one variant of the navigation: the active section and
// which optional items are shown (a bit per item of Nav).
type navKey struct {
	active string
	shown  uint64
}

// renderedNav holds navList pre-rendered for every section key (and for no
// active section) and every combination of optional items. The navigation is
// identical on every page of a section, and rendering its icons was a large
// share of each page view.
var renderedNav = sync.OnceValue(func() map[navKey]string {
	var optional []uint64
	for i, item := range Nav {
		if item.Optional && i < 64 {
			optional = append(optional, 1<<i)
		}
	}
	if len(optional) > 4 {
		return nil // too many variants: render on every call
	}
	keys := []string{""}
	for _, item := range Nav {
		keys = append(keys, item.Key)
	}
	out := make(map[navKey]string, len(keys)<<len(optional))
	for combo := 0; combo < 1<<len(optional); combo++ {
		var shown uint64
		for j, bit := range optional {
			if combo&(1<<j) != 0 {
				shown |= bit
			}
		}
		for _, k := range keys {
			var buf bytes.Buffer
			if err := navList(k, shown).Render(context.Background(), &buf); err != nil {
				return nil // rendering falls back to navList on every call
			}
			out[navKey{k, shown}] = buf.String()
		}
	}
	return out
})

// shownOptional turns Chrome.ShowOptional into navList's bit set.
func shownOptional(keys []string) uint64 {
	var shown uint64
	for _, k := range keys {
		for i, item := range Nav {
			if item.Optional && item.Key == k && i < 64 {
				shown |= 1 << i
			}
		}
	}
	return shown
}

// navVisible reports whether Nav[i] is shown: always for a regular item; for
// an optional one when it is switched on or its own page is open.
func navVisible(i int, item NavItem, active string, shown uint64) bool {
	return !item.Optional || item.Key == active || (i < 64 && shown&(1<<i) != 0)
}

// navMarkup returns the navigation of c, pre-rendered when the variant is
// known. Nav is read once, at the first page render.
func navMarkup(c Chrome) templ.Component {
	shown := shownOptional(c.ShowOptional)
	if html, ok := renderedNav()[navKey{c.Active, shown}]; ok {
		return templ.Raw(html)
	}
	return navList(c.Active, shown)
}
