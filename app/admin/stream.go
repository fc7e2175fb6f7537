package admin

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// fragmentRender renders a live region's HTML; ok false means there is
// nothing more to show (the stream ends).
type fragmentRender func(ctx context.Context) (html string, ok bool, err error)

// renderFragment renders one component for a stream, its reads bounded.
func renderFragment(ctx context.Context, cmp templ.Component) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var buf bytes.Buffer
	if err := cmp.Render(ctx, &buf); err != nil {
		return "", fmt.Errorf("admin: render a live fragment: %w", err)
	}
	return buf.String(), nil
}

// streamFragments serves the text/event-stream every live page uses
// (web/static/live.js): a "fragment" event with render's HTML when the
// stream opens, then again after every signal on changed whose rendering
// differs from the last one sent (so a half-filled form in the region is
// not replaced by an identical page). There is no polling: changed is the
// source's Watch. The first render runs before the response starts, so its
// error is the request's (a 404 for something gone); a later render error
// is logged and the stream waits for the next change. It ends when the
// client goes away, when the server shuts down (CloseStreams), when changed
// closes, or when render has nothing more to show.
func (s *Server) streamFragments(c echo.Context, changed <-chan struct{}, render fragmentRender) error {
	ctx := c.Request().Context()
	first, ok, err := render(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return echo.ErrNotFound
	}
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set(echo.HeaderCacheControl, "no-store")
	h.Set("X-Accel-Buffering", "no") // a buffering proxy would hold the events
	w.WriteHeader(http.StatusOK)
	last := first
	if _, err := w.Write(sseEvent("fragment", first)); err != nil {
		return nil // the client went away
	}
	w.Flush()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.streams:
			return nil
		case _, open := <-changed:
			if !open {
				return nil
			}
			html, ok, err := render(ctx)
			if err != nil {
				s.log.Warn("render a live fragment", "path", c.Path(), "err", err)
				continue
			}
			if !ok {
				return nil
			}
			if html == last {
				continue
			}
			last = html
			if _, err := w.Write(sseEvent("fragment", html)); err != nil {
				return nil // the client went away
			}
			w.Flush()
		}
	}
}

// staticFragment renders the component fragment returns, always present.
func staticFragment(fragment func() templ.Component) fragmentRender {
	return func(ctx context.Context) (string, bool, error) {
		html, err := renderFragment(ctx, fragment())
		return html, err == nil, err
	}
}
