package host

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// LongRun is a callback running past its budget (Options.RunningLongAfter):
// shown on /modules as "running long: <What> for N s" from the moment the
// budget passes until it returns; the module is degraded only when the
// callback's timeout expires.
type LongRun struct {
	// What names the callback: its kind and what it is ("command /ping",
	// "job nightly", "event discord.message_create").
	What  string
	Since time.Time
}

// Text is the callback as /modules shows it at now.
func (r LongRun) Text(now time.Time) string {
	return fmt.Sprintf("running long: %s for %d s", r.What, int(now.Sub(r.Since).Seconds()))
}

// longBook keeps the callbacks past their budget, per module.
type longBook struct {
	mu   sync.Mutex
	next int
	runs map[string]map[int]LongRun
}

func newLongBook() *longBook { return &longBook{runs: map[string]map[int]LongRun{}} }

// watch arms the budget of a callback that began at since: past it the
// callback shows as running long (and notify runs) until the returned
// func is called, which the callback's caller does when it returns.
func (b *longBook) watch(module, what string, since time.Time, budget time.Duration, notify func()) (done func()) {
	b.mu.Lock()
	b.next++
	id := b.next
	b.mu.Unlock()
	ended := false // under b.mu: the callback returned
	t := time.AfterFunc(budget, func() {
		b.mu.Lock()
		if ended {
			b.mu.Unlock()
			return
		}
		m := b.runs[module]
		if m == nil {
			m = map[int]LongRun{}
			b.runs[module] = m
		}
		m[id] = LongRun{What: what, Since: since}
		b.mu.Unlock()
		notify()
	})
	return func() {
		t.Stop()
		b.mu.Lock()
		ended = true
		_, shown := b.runs[module][id]
		delete(b.runs[module], id)
		if len(b.runs[module]) == 0 {
			delete(b.runs, module)
		}
		b.mu.Unlock()
		if shown {
			notify()
		}
	}
}

// list returns a module's callbacks past their budget, oldest first.
func (b *longBook) list(module string) []LongRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]LongRun, 0, len(b.runs[module]))
	for _, r := range b.runs[module] {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b LongRun) int { return a.Since.Compare(b.Since) })
	return out
}

// watchedHandler is an event handler that shows as running long past the
// callback budget, like the callbacks the host invokes itself; the bus
// bounds it and reports its timeout (app/events).
func (h *Host) watchedHandler(inst *instance, handler sdk.EventHandler) sdk.EventHandler {
	if handler == nil {
		return nil
	}
	return func(ctx context.Context, ev sdk.Event) error {
		end := h.long.watch(inst.name, "event "+ev.Topic, time.Now(), h.opts.RunningLongAfter, h.watch.Notify)
		defer end()
		return handler(ctx, ev)
	}
}
