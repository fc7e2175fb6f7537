package assistant

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// Progress timing (the original's activity reporter, reference
// assistant.md §5).
const (
	// StatusInterval is the least time between two status edits.
	StatusInterval = time.Second
	// IdleAfter is how long one status may stand before it becomes
	// "Still thinking… (Ns)"; IdleTick re-counts it after.
	IdleAfter = 30 * time.Second
	IdleTick  = 15 * time.Second
	// ThinkingText is the status while the model is answering.
	ThinkingText = "Thinking..."
)

// idleText is the status after secs seconds without progress.
func idleText(secs int) string { return "Still thinking… (" + strconv.Itoa(secs) + "s)" }

// progress is a turn's status message: at most one Status call per
// StatusInterval (a later text waits for a timer, the newest wins), the
// idle notice after IdleAfter without a new text, and ClearStatus at the
// end. Driven by timers on the turn's clock, never by polling. The status
// message's id is handed to sent once the surface reports it (nil: not
// needed).
type progress struct {
	ctx   context.Context
	s     Surface
	clock Clock
	log   *slog.Logger
	sent  func(messageID uint64)

	mu       sync.Mutex
	shown    string    // the text the surface shows
	want     string    // the newest text asked for
	changed  time.Time // when want last changed (idle counts from it)
	sentAt   time.Time
	sentOnce bool
	flush    Timer // pending throttled send
	idle     Timer
	closed   bool
	statusID uint64 // the status message's id handed to sent (0: none yet)
}

func newProgress(ctx context.Context, s Surface, c Clock, log *slog.Logger, sent func(messageID uint64)) *progress {
	return &progress{ctx: ctx, s: s, clock: c, log: log, sent: sent}
}

// set asks for text as the status.
func (p *progress) set(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || text == p.want {
		return
	}
	p.want = text
	p.changed = p.clock.Now()
	p.armIdle(IdleAfter)
	p.sendLocked()
}

// sendLocked shows want now if the interval allows, else arms the flush.
func (p *progress) sendLocked() {
	if p.closed || p.want == p.shown {
		return
	}
	now := p.clock.Now()
	if wait := p.sentAt.Add(StatusInterval).Sub(now); p.sentOnce && wait > 0 {
		if p.flush == nil {
			p.flush = p.clock.AfterFunc(wait, p.onFlush)
		}
		return
	}
	p.shown, p.sentAt, p.sentOnce = p.want, now, true
	id, err := p.s.Status(p.ctx, p.want)
	if err != nil {
		p.log.Warn("status update failed", "err", err)
	}
	if id != 0 && id != p.statusID && p.sent != nil {
		p.statusID = id
		p.sent(id)
	}
}

func (p *progress) onFlush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush = nil
	p.sendLocked()
}

func (p *progress) armIdle(d time.Duration) {
	if p.idle != nil {
		p.idle.Stop()
	}
	p.idle = p.clock.AfterFunc(d, p.onIdle)
}

func (p *progress) onIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	secs := int(p.clock.Now().Sub(p.changed) / time.Second)
	p.want = idleText(secs)
	p.idle = p.clock.AfterFunc(IdleTick, p.onIdle)
	p.sendLocked()
}

// close stops the timers and deletes the status message (when one was
// sent), bounded by ctx.
func (p *progress) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	for _, t := range []Timer{p.flush, p.idle} {
		if t != nil {
			t.Stop()
		}
	}
	sent := p.sentOnce
	p.mu.Unlock()
	if !sent {
		return
	}
	if err := p.s.ClearStatus(ctx); err != nil {
		p.log.Warn("deleting the status message failed", "err", err)
	}
}
