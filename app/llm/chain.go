package llm

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// RetryDelay is the wait before the one retry of a transient failure.
const RetryDelay = 2 * time.Second

// ChainOptions configure a Chain; the zero value is the original's policy.
type ChainOptions struct {
	// Sleep waits d or until ctx ends (a test hook; default: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock of the cooldowns (default time.Now).
	Now func() time.Time
	// Cooldown is how long a backend is skipped after repeated failures
	// (default 60 s).
	Cooldown time.Duration
	// FailuresBeforeCooldown is how many failed attempts in a row start a
	// cooldown (default 3).
	FailuresBeforeCooldown int
	// Logger receives the chain's warnings (retries, failovers, cooldowns).
	Logger *slog.Logger
}

// Chain is a primary and an optional fallback behind the failure policy
// (Classify): one retry after RetryDelay on a Retry disposition, then the
// fallback; the fallback at once on Failover; nothing more on Stop. It
// moves forward only, and a backend that failed FailuresBeforeCooldown
// attempts in a row is skipped for Cooldown (in memory). Chain is itself a
// Provider whose every call is a fresh turn; Turn gives a Provider that
// stays, within one assistant turn, on whichever backend last served.
type Chain struct {
	o        ChainOptions
	backends []*backend
}

type backend struct {
	name string
	p    Provider

	mu        sync.Mutex
	failures  int
	coolUntil time.Time
}

var _ Provider = (*Chain)(nil)

// NewChain puts primary and fallback (nil: none) behind the policy. A nil
// primary makes every call fail with ErrNotConfigured.
func NewChain(primary, fallback Provider, o ChainOptions) *Chain {
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Cooldown <= 0 {
		o.Cooldown = 60 * time.Second
	}
	if o.FailuresBeforeCooldown <= 0 {
		o.FailuresBeforeCooldown = 3
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Chain{o: o}
	if primary != nil {
		c.backends = append(c.backends, &backend{name: "primary", p: primary})
		if fallback != nil {
			c.backends = append(c.backends, &backend{name: "fallback", p: fallback})
		}
	}
	return c
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Turn returns a Provider for one assistant turn: each call starts on the
// backend that served the turn's last call. It is not for concurrent use.
func (c *Chain) Turn() Provider { return &turn{c: c} }

// Complete is one call on a fresh turn.
func (c *Chain) Complete(ctx context.Context, req Request, onEvent func(Event)) (Response, error) {
	return c.Turn().Complete(ctx, req, onEvent)
}

// Models lists the primary's models, or the fallback's when the primary
// fails with a Retry or Failover disposition.
func (c *Chain) Models(ctx context.Context) ([]Model, error) {
	if len(c.backends) == 0 {
		return nil, fmt.Errorf("llm: models: %w", ErrNotConfigured)
	}
	var err error
	for _, b := range c.backends {
		var ms []Model
		if ms, err = b.p.Models(ctx); err == nil {
			return ms, nil
		}
		if d, _ := Classify(err); d == Stop || ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}

// turn is one assistant turn's view of a Chain.
type turn struct {
	c    *Chain
	from int // the backend that served last
}

var _ Provider = (*turn)(nil)

func (t *turn) Models(ctx context.Context) ([]Model, error) { return t.c.Models(ctx) }

func (t *turn) Complete(ctx context.Context, req Request, onEvent func(Event)) (Response, error) {
	c := t.c
	if len(c.backends) == 0 {
		return Response{}, fmt.Errorf("llm: complete: %w", ErrNotConfigured)
	}
	streamed := false
	relay := func(e Event) {
		streamed = true
		if onEvent != nil {
			onEvent(e)
		}
	}
	var last error
	cooling := 0
	for i := t.from; i < len(c.backends); i++ {
		b := c.backends[i]
		if b.coolingDown(c.o.Now()) {
			cooling++
			c.o.Logger.Warn("model backend skipped: cooling down", "backend", b.name)
			continue
		}
		for try := 1; try <= 2; try++ {
			if streamed && onEvent != nil {
				onEvent(Event{Kind: EventReset})
			}
			streamed = false
			resp, err := b.p.Complete(ctx, req, relay)
			if err == nil {
				b.succeeded()
				t.from = i
				resp.Backend = b.name
				return resp, nil
			}
			last = err
			d, _ := Classify(err)
			if d == Stop || ctx.Err() != nil {
				return Response{}, err
			}
			cooled := b.failed(c.o.Now(), c.o.FailuresBeforeCooldown, c.o.Cooldown)
			if cooled {
				c.o.Logger.Warn("model backend cooling down after repeated failures", "backend", b.name, "cooldown", c.o.Cooldown)
			}
			if d != Retry || try == 2 || cooled {
				c.o.Logger.Warn("model backend failed; moving on", "backend", b.name, "err", err)
				break
			}
			c.o.Logger.Warn("model backend failed; retrying once", "backend", b.name, "after", RetryDelay, "err", err)
			if err := c.o.Sleep(ctx, RetryDelay); err != nil {
				return Response{}, fmt.Errorf("llm: complete: waiting to retry: %w", err)
			}
		}
	}
	if last == nil && cooling > 0 {
		return Response{}, fmt.Errorf("llm: complete: %w", ErrCoolingDown)
	}
	return Response{}, last
}

func (b *backend) coolingDown(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return now.Before(b.coolUntil)
}

func (b *backend) succeeded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures = 0
}

// failed counts a failed attempt and reports whether it started a cooldown.
func (b *backend) failed(now time.Time, limit int, cooldown time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	if b.failures < limit {
		return false
	}
	b.failures = 0
	b.coolUntil = now.Add(cooldown)
	return true
}
