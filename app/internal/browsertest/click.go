package browsertest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/chromedp"
)

// Click clicks the first visible node sel matches, as chromedp.Click does,
// and queries again when the node it found is gone before the click lands:
// a live region replaced by an update between the query and the click
// leaves Chromium a stale node id ("Could not find node with given id").
// Those errors come from scrolling the node into view and measuring it,
// before any mouse event is sent, so a retry never clicks twice.
func Click[S chromedp.Selectable](sel S) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for {
			_, err := chromedp.Click(sel)(ctx, t)
			if err == nil || !staleNode(err) {
				return err
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// staleNode reports whether err is Chromium's answer about a node id that
// no longer names a node in the document.
func staleNode(err error) bool {
	var e *cdproto.Error
	if !errors.As(err, &e) || e.Code != -32000 {
		return false
	}
	switch e.Message {
	case "Could not find node with given id", "No node with given id found", "Node is detached from document",
		"Could not compute box model.", "Could not compute content quads.":
		return true
	}
	return false
}

// WaitText waits until the first element matching css shows want (its
// text contains it), or ctx ends; it returns the last text read and, when
// want never showed, why (the last read's error, or ctx's). A wait, not a
// single read: a live region may be swapped, or not yet filled, at the
// moment it is read (its text reads "" then, or its node is gone).
func WaitText(ctx context.Context, css, want string) (string, error) {
	for {
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
		got = strings.TrimSpace(got)
		if err == nil && strings.Contains(got, want) {
			return got, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return got, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}
