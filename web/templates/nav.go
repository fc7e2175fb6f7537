package templates

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/a-h/templ"
)

// navKey names one variant of the navigation: the active section and
// which optional items are shown (a bit per item of Nav).
type navKey struct {
	active string
	shown  uint64
}

// navPendingMark is where the pre-rendered navigation takes the pending
// badge (an HTML comment: nothing shows if it is ever left in).
const navPendingMark = "<!--kimi:pending-->"

// pendingBadgeHTML is the badge of n pending proposals: the number, read
// as "n pending" by assistive technology.
func pendingBadgeHTML(n int) string {
	s := strconv.Itoa(n)
	return `<span class="nav-badge" data-testid="nav-pending" title="` + s + ` pending"><span class="visually-hidden">, </span>` +
		s + `<span class="visually-hidden"> pending</span></span>`
}

// navParts is one pre-rendered navigation, cut at navPendingMark.
type navParts struct{ before, after string }

// renderedNav holds navList pre-rendered for every section key (and for no
// active section) and every combination of optional items. The navigation is
// identical on every page of a section, and rendering its icons was a large
// share of each page view.
var renderedNav = sync.OnceValue(func() map[navKey]navParts {
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
	out := make(map[navKey]navParts, len(keys)<<len(optional))
	for combo := 0; combo < 1<<len(optional); combo++ {
		var shown uint64
		for j, bit := range optional {
			if combo&(1<<j) != 0 {
				shown |= bit
			}
		}
		for _, k := range keys {
			var buf bytes.Buffer
			if err := navList(k, shown, -1).Render(context.Background(), &buf); err != nil {
				return nil // rendering falls back to navList on every call
			}
			before, after, _ := strings.Cut(buf.String(), navPendingMark)
			out[navKey{k, shown}] = navParts{before, after}
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
	if p, ok := renderedNav()[navKey{c.Active, shown}]; ok {
		return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
			badge := ""
			if c.Pending > 0 {
				badge = pendingBadgeHTML(c.Pending)
			}
			_, err := io.WriteString(w, p.before+badge+p.after)
			return err
		})
	}
	return navList(c.Active, shown, c.Pending)
}
