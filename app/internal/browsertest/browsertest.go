// Package browsertest starts the one headless Chromium a test package's
// browser tests share (Debian's chromium, never downloaded), kept on
// loopback. Only tests import it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's chromium; tests never download a browser.
const ChromiumPath = "/usr/bin/chromium"

// Browser is a package's shared browser, started lazily by the first test
// that asks for it; the package's TestMain closes it. The zero value is
// ready to use.
type Browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

// Require returns the browser's context, starting it on first use. Without
// chromium it skips loudly, and fails under CI=true (CI installs it).
func (b *Browser) Require(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		msg := "!!! BROWSER TESTS NOT RUN: " + ChromiumPath + " is missing. Install it with `apt-get install -y chromium`. !!!"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	b.once.Do(b.start)
	if b.err != nil {
		t.Fatalf("browser: %v", b.err)
	}
	return b.ctx
}

func (b *Browser) start() {
	userData, err := os.MkdirTemp("", "kimi-chromium-")
	if err != nil {
		b.err = err
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// The browser reaches the test servers on loopback only: every
		// other name resolves to nothing (no DNS query leaves the machine),
		// no proxy, no DNS prefetch or background probes.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.Flag("proxy-server", "direct://"),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-features", "MediaRouter,OptimizationHints,Translate,DialMediaRouteProvider,AsyncDns"),
		chromedp.Flag("no-pings", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(userData),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		b.err = fmt.Errorf("start chromium: %w", err)
	}
	b.ctx = ctx
	b.cancel = func() {
		cancel()
		allocCancel()
		_ = os.RemoveAll(userData)
	}
}

// Close stops the browser if it was started.
func (b *Browser) Close() {
	if b.cancel != nil {
		b.cancel()
	}
}
