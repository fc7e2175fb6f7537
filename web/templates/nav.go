package templates

import (
	"bytes"
	"context"
	"sync"

	"github.com/a-h/templ"
)

// renderedNav holds navList pre-rendered for every section key (and for no
// active section). The navigation is identical on every page of a section,
// and rendering its icons was a large share of each page view.
var renderedNav = sync.OnceValue(func() map[string]string {
	out := make(map[string]string, len(Nav)+1)
	keys := []string{""}
	for _, item := range Nav {
		keys = append(keys, item.Key)
	}
	for _, k := range keys {
		var buf bytes.Buffer
		if err := navList(k).Render(context.Background(), &buf); err != nil {
			return nil // rendering falls back to navList on every call
		}
		out[k] = buf.String()
	}
	return out
})

// navMarkup returns the navigation with active marked, pre-rendered when the
// key is known. Nav is read once, at the first page render.
func navMarkup(active string) templ.Component {
	if html, ok := renderedNav()[active]; ok {
		return templ.Raw(html)
	}
	return navList(active)
}
