package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// heldDemoModel scripts the demo model to hold each request until the
// test releases it (one receive on release each), signalling arrived
// first: the test sees each step of a turn in the page before the next.
// The script runs under the fake's lock, so nothing may ask the fake for
// its requests while one is held; the hold ends at the test's end too.
func heldDemoModel(t *testing.T, m *llmfake.Server) (arrived <-chan struct{}, release chan<- struct{}) {
	t.Helper()
	in, out, done := make(chan struct{}, 8), make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(done) }) // before serve stops: startE2E's cleanup runs after
	steps := llmfake.Demo()
	reply := steps[0].Reply
	steps[0].Reply = func(r llmfake.Recorded) llmfake.Plan {
		in <- struct{}{}
		select {
		case <-out:
		case <-done:
		case <-time.After(e2eWait):
		}
		return reply(r)
	}
	m.SetSteps(steps...)
	return in, out
}

// manualClock is a turn clock that moves only when the test advances it:
// its timers (the status throttle's flush, the idle notice, the deadline)
// fire then, never on their own.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

var _ assistant.Clock = (*manualClock)(nil)

type manualTimer struct {
	c    *manualClock
	at   time.Time
	f    func()
	done bool // fired or stopped
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *manualClock) AfterFunc(d time.Duration, f func()) assistant.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// advance moves the clock by d and runs the timers now due.
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// e2eArrived waits for the held model's next request.
func e2eArrived(t *testing.T, arrived <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-arrived:
	case <-time.After(e2eWait):
		t.Fatalf("the demo model got no request: %s", what)
	}
}

// TestBrowserE2EAssistantTurnLiveInTheDemo: `kimi serve --demo` with the
// bundled modules, in a real headless Chromium: sign in, open /demo in
// #general as ada and post `@Kimi give kudos to bo for the docs` through
// the page's own form; then, without a reload, the live chat follows the
// turn the demo model runs, held step by step (and the turn's clock moved
// by the test): ⏳ on the trigger and the "Thinking..." status while the
// model is asked, the status edited to "Giving kudos..." while
// give_kudos' result goes back, then the answer, the status gone, and ✅
// — Kimi's — in place of ⏳.
func TestBrowserE2EAssistantTurnLiveInTheDemo(t *testing.T) {
	clock := newManualClock()
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{hello.Spec(), kudos.Spec()}, seed: func(*fakediscord.Server) {}, clock: clock})
	arrived, release := heldDemoModel(t, a.Model())
	tb := newE2ETab(t)
	general, ada, bo := a.Demo().Channels[1], a.Demo().Members[0], a.Demo().Members[1]
	c := a.signIn()
	c.waitPage("the bot connected", "/discord", `data-state="connected"`, `data-testid="discord-guild-`+a.Demo().GuildID+`"`)

	tb.signIn(a.URL())
	tb.do("post the mention through /demo's form",
		chromedp.Navigate(a.URL()+"/demo?channel="+general+"&as="+ada),
		e2eVisible(`[data-testid=demo-form]`),
		e2eFill(`[data-testid=demo-content-input]`, "<@"+a.Discord().BotID()+"> give kudos to bo for the docs"),
		chromedp.Evaluate[chromedp.Void](`document.body.dataset.kimiBeforePost = "1"`),
		e2eClick(`[data-testid=demo-send]`),
	)
	e2eArrived(t, arrived, "the turn's first call")
	var trigger, status string
	for _, m := range a.Discord().Messages(general) {
		switch {
		case m.Author != nil && m.Author.ID == ada && strings.Contains(m.Content, "give kudos to bo"):
			trigger = m.ID
		case m.Author != nil && m.Author.ID == a.Discord().BotID() && m.Content == assistant.ThinkingText:
			status = m.ID
		}
	}
	if trigger == "" || status == "" {
		t.Fatalf("no trigger (%q) or status message (%q) in #general: %+v", trigger, status, a.Discord().Messages(general))
	}
	msg := `//li[@data-testid="demo-message" and @data-message-id="` + trigger + `"]`
	statusMsg := `//li[@data-testid="demo-message" and @data-message-id="` + status + `"]`
	reaction := func(emoji string) string {
		return msg + `//*[@data-testid="demo-reaction" and @data-emoji="` + emoji + `" and @data-bot="true"]`
	}
	tb.do("the page after the post, marked: a reload would lose the mark",
		chromedp.WaitVisible(chromedp.CSS(`body:not([data-kimi-before-post]) [data-testid=demo-live]`)),
		chromedp.Evaluate[chromedp.Void](`window.kimiNoReload = true`),
	)
	tb.do("⏳ and the status while the model is asked",
		chromedp.WaitVisible(chromedp.Search(reaction(assistant.ReactWorking))),
		chromedp.WaitVisible(chromedp.Search(statusMsg+`//*[@data-testid="demo-content" and .="`+assistant.ThinkingText+`"]`)),
	)

	// The status may change once a StatusInterval after it was sent.
	clock.advance(assistant.StatusInterval)
	release <- struct{}{} // the model calls give_kudos
	e2eArrived(t, arrived, "give_kudos' result")
	tb.do("the status edited live while the result goes back",
		chromedp.WaitVisible(chromedp.Search(statusMsg+`//*[@data-testid="demo-content" and .="Giving kudos..."]`)),
		chromedp.WaitVisible(chromedp.Search(statusMsg+`//*[.="(edited)"]`)),
		chromedp.WaitVisible(chromedp.Search(reaction(assistant.ReactWorking))),
	)

	release <- struct{}{} // the model answers
	tb.do("the answer and ✅ live, ⏳ and the status gone",
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="demo-messages"]//*[@data-testid="demo-content" and contains(., "Done. Kudos to @bo: the docs")]//*[@data-testid="mention-user" and @title="`+bo+`"]`)),
		chromedp.WaitVisible(chromedp.Search(reaction(assistant.ReactDone))),
		chromedp.WaitNotPresent(chromedp.Search(reaction(assistant.ReactWorking))),
		chromedp.WaitNotPresent(chromedp.Search(statusMsg)),
	)
	tb.wantText(`[data-testid=demo-live] li[data-message-id="`+trigger+`"] [data-emoji="✅"] [data-testid=demo-reaction-count]`, "1")
	if !evalE2E[bool](tb, `window.kimiNoReload === true`) {
		t.Fatal("/demo reloaded instead of updating in place")
	}
}

// evalE2E evaluates a JavaScript expression in the tab.
func evalE2E[T any](tb *e2eTab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, e2eWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
