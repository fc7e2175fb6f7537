package host

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ModuleLabel is the runtime/pprof label naming the module a goroutine
// works for: every callback the host invokes runs under it, and the
// goroutines a callback starts inherit it, so a goroutine profile
// (go tool pprof -tagfocus kimi_module=x) and the host's own count see
// which module they belong to.
const ModuleLabel = "kimi_module"

// Defaults of the per-module goroutine watch.
const (
	// DefaultGoroutineLimit is the count above which a module is degraded.
	DefaultGoroutineLimit = 10000
	// DefaultGoroutinePeriod is how often the goroutines are counted.
	DefaultGoroutinePeriod = 10 * time.Second
	// DefaultGoroutineWindow is how long a count must keep growing (at
	// every sample) for the module to be degraded below the limit.
	DefaultGoroutineWindow = 60 * time.Second
	// DefaultGoroutineGrowth is the least rise over the window that counts
	// as growing.
	DefaultGoroutineGrowth = 1000
)

// goroutineSource is the health source of the goroutine watch.
const goroutineSource = "goroutines"

// GoroutineOptions bound the per-module goroutine watch; zero values take
// the Default* constants.
type GoroutineOptions struct {
	// Limit degrades a module whose count is above it.
	Limit int
	// Period is how often the goroutines are counted.
	Period time.Duration
	// Window and Growth degrade a module whose count rose at every sample
	// for Window, by at least Growth in all.
	Window time.Duration
	Growth int
}

func (o GoroutineOptions) withDefaults() GoroutineOptions {
	if o.Limit <= 0 {
		o.Limit = DefaultGoroutineLimit
	}
	if o.Period <= 0 {
		o.Period = DefaultGoroutinePeriod
	}
	if o.Window <= 0 {
		o.Window = DefaultGoroutineWindow
	}
	if o.Growth <= 0 {
		o.Growth = DefaultGoroutineGrowth
	}
	return o
}

// withModule labels ctx with the module's name (ModuleLabel); a goroutine
// that sets its labels from it (pprof.SetGoroutineLabels, runBounded)
// passes them on to every goroutine it starts.
func withModule(ctx context.Context, module string) context.Context {
	return pprof.WithLabels(ctx, pprof.Labels(ModuleLabel, module))
}

// countGoroutines counts the process's goroutines by their ModuleLabel
// ("" for unlabelled ones) from the goroutine profile's text form (debug
// 1: goroutines grouped by stack and labels, each group a "N @ ..." line
// followed by its "# labels: {...}" line).
func countGoroutines(buf *bytes.Buffer) (map[string]int, error) {
	buf.Reset()
	if err := pprof.Lookup("goroutine").WriteTo(buf, 1); err != nil {
		return nil, fmt.Errorf("host: goroutine profile: %w", err)
	}
	return parseGoroutineProfile(buf.Bytes()), nil
}

// parseGoroutineProfile sums a debug-1 goroutine profile's groups by
// their ModuleLabel.
func parseGoroutineProfile(p []byte) map[string]int {
	out := map[string]int{}
	key := strconv.Quote(ModuleLabel) + ":"
	sc := bufio.NewScanner(bytes.NewReader(p))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	pending, module := 0, ""
	flush := func() {
		if pending > 0 {
			out[module] += pending
		}
		pending, module = 0, ""
	}
	for sc.Scan() {
		line := sc.Text()
		if n, rest, ok := strings.Cut(line, " @ "); ok && rest != "" {
			if c, err := strconv.Atoi(n); err == nil {
				flush()
				pending = c
				continue
			}
		}
		if labels, ok := strings.CutPrefix(line, "# labels: "); ok && pending > 0 {
			if _, v, ok := strings.Cut(labels, key); ok {
				if q, err := strconv.QuotedPrefix(v); err == nil {
					module, _ = strconv.Unquote(q)
				}
			}
		}
	}
	flush()
	return out
}

// goroutineSample is one count of a module's goroutines.
type goroutineSample struct {
	at    time.Time
	count int
}

// goroutineWatch counts each module's goroutines every Period (a timer
// chain: no goroutine while idle) and degrades a module over the limit or
// growing over the window. Nothing else triggers a health refresh: the
// health is otherwise event-driven, so this measurement has its own timer.
type goroutineWatch struct {
	h    *Host
	opts GoroutineOptions

	mu      sync.Mutex
	buf     bytes.Buffer
	timer   *time.Timer
	stopped bool
	samples map[string][]goroutineSample // per running module, oldest first
	last    map[string]int
}

func newGoroutineWatch(h *Host, o GoroutineOptions) *goroutineWatch {
	return &goroutineWatch{h: h, opts: o.withDefaults(), samples: map[string][]goroutineSample{}, last: map[string]int{}}
}

// start arms the first count.
func (w *goroutineWatch) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.timer != nil {
		return
	}
	w.timer = time.AfterFunc(w.opts.Period, w.tick)
}

// stop ends the counting (Close).
func (w *goroutineWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *goroutineWatch) tick() {
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.timer.Reset(w.opts.Period)
	}
}

// count returns a module's goroutines at the last count.
func (w *goroutineWatch) count(module string) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.last[module]
	return n, ok
}

// Goroutines returns each running module's goroutines at the last count
// (every DefaultGoroutinePeriod): the goroutines running under its
// ModuleLabel.
func (h *Host) Goroutines() map[string]int {
	w := h.goroutines
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.last))
	for k, v := range w.last {
		out[k] = v
	}
	return out
}

// sample counts the goroutines once and updates each running module's
// goroutine constraint.
func (w *goroutineWatch) sample() {
	h := w.h
	h.mu.Lock()
	running := make([]*instance, 0, len(h.entries))
	for _, e := range h.entries {
		if e.inst != nil && e.inst.running() {
			running = append(running, e.inst)
		}
	}
	h.mu.Unlock()

	w.mu.Lock()
	counts, err := countGoroutines(&w.buf)
	if err != nil {
		w.mu.Unlock()
		h.log.Warn("counting goroutines failed", "err", err)
		return
	}
	// The watch's period is the wall clock's, so its window is measured
	// on it too, not on the host's clock (a test's controlled clock may
	// stand still, or leap a week).
	now := time.Now()
	type verdict struct {
		inst   *instance
		detail string
	}
	verdicts := make([]verdict, 0, len(running))
	seen := map[string]bool{}
	for _, inst := range running {
		n := counts[inst.name]
		seen[inst.name] = true
		s := append(w.samples[inst.name], goroutineSample{at: now, count: n})
		// Keep the samples of the last window plus the one before it.
		for len(s) > 2 && now.Sub(s[1].at) >= w.opts.Window {
			s = s[1:]
		}
		w.samples[inst.name] = s
		w.last[inst.name] = n
		verdicts = append(verdicts, verdict{inst, w.judge(s)})
	}
	for name := range w.last {
		if !seen[name] {
			delete(w.last, name)
			delete(w.samples, name)
		}
	}
	w.mu.Unlock()

	for _, v := range verdicts {
		state := sdk.HealthHealthy
		if v.detail != "" {
			state = sdk.HealthDegraded
		}
		h.health.constrainUnless(v.inst.revoked, v.inst.name, goroutineSource, state, v.detail, nil)
	}
}

// judge is the detail of a module's goroutine constraint ("" when fine).
func (w *goroutineWatch) judge(s []goroutineSample) string {
	last := s[len(s)-1]
	if last.count > w.opts.Limit {
		return fmt.Sprintf("running %d goroutines, above the limit of %d", last.count, w.opts.Limit)
	}
	first := s[0]
	if last.at.Sub(first.at) < w.opts.Window || len(s) < 3 {
		return ""
	}
	for i := 1; i < len(s); i++ {
		if s[i].count <= s[i-1].count {
			return ""
		}
	}
	if last.count-first.count < w.opts.Growth {
		return ""
	}
	return fmt.Sprintf("goroutines keep growing: %d to %d in %s", first.count, last.count, seconds(last.at.Sub(first.at)))
}
