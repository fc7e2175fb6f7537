package results

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// dropDeadQueued forgets queued claims whose lease ran out or was lost,
// or whose row expired: nothing was invoked (their attempts were not
// counted unless they were to launch at once), and the row is claimable
// again or pruned. s.mu held.
func (s *Service) dropDeadQueued(nowMs int64) {
	s.queue = slices.DeleteFunc(s.queue, func(c *claim) bool {
		if c.leaseUntil > nowMs && c.expires.UnixMilli() > nowMs {
			return false
		}
		delete(s.inflight, c.token)
		return true
	})
}

// launchQueued launches queued claims, in claim order, into the free
// handler slots. A claim with less than launchMargin of lease left is not
// launched: the dispatcher is woken to renew it first (renewBelow ≥
// launchMargin), and launched after that step. s.mu held.
func (s *Service) launchQueued() {
	if s.closed {
		return
	}
	nowMs := s.now().UnixMilli()
	s.dropDeadQueued(nowMs)
	for s.running < s.opts.MaxInFlight && len(s.queue) > 0 {
		c := s.queue[0]
		if c.leaseUntil-nowMs < s.launchMargin() {
			s.signal()
			return
		}
		s.queue = s.queue[1:]
		c.launched = true
		s.running++
		s.launch(c)
	}
}

// launch delivers c in its own goroutine; when it returns, the next
// queued claim takes its slot. s.mu held.
func (s *Service) launch(c *claim) {
	s.deliveries.Add(1)
	go func() {
		defer s.deliveries.Done()
		o := s.deliver(c)
		s.mu.Lock()
		s.running--
		s.done = append(s.done, o)
		s.launchQueued()
		s.mu.Unlock()
		s.signal()
	}()
}

// handlerReturn is how a handler call ended.
type handlerReturn struct {
	err      error
	panicked bool
}

// deliver runs the checks, the handler and the checks again (reference
// §5.2) and returns the verdict.
func (s *Service) deliver(c *claim) outcome {
	blocked := func(detail string) outcome {
		if detail == DetailLeaseLost {
			return outcome{c: c}
		}
		return outcome{c: c, status: StatusBlocked, detail: detail}
	}
	if s.isQuarantined(c.key.Module) {
		return blocked(DetailQuarantined)
	}
	ctx := s.runCtx
	reg, detail := s.fullCheck(ctx, c)
	if detail != "" {
		return blocked(detail)
	}
	files := newFiles(s, c)
	defer files.close()
	hctx, cancel := context.WithTimeout(ctx, s.opts.HandlerTimeout)
	defer cancel()
	var (
		mu       sync.Mutex
		returned bool
		stuck    bool
	)
	ch := make(chan handlerReturn, 1)
	go func() {
		var r handlerReturn
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("scheduled-result handler panicked", "module", c.key.Module, "subscription", c.key.Name,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				r = handlerReturn{panicked: true}
			}
			mu.Lock()
			returned = true
			wasStuck := stuck
			mu.Unlock()
			ch <- r
			if wasStuck {
				s.release(c.key.Module)
			}
		}()
		r.err = reg.h(hctx, c.result().Clone(), files)
	}()
	var r handlerReturn
	select {
	case r = <-ch:
	case <-hctx.Done():
		grace := time.NewTimer(s.opts.CancelGrace)
		select {
		case r = <-ch:
			grace.Stop()
		case <-grace.C:
			mu.Lock()
			if !returned {
				stuck = true
				s.quarantineAdd(c.key.Module)
			}
			mu.Unlock()
			if stuck {
				files.close()
				s.log.Warn("scheduled-result handler ignored cancellation; module quarantined", "module", c.key.Module, "subscription", c.key.Name)
				return outcome{c: c, status: StatusBlocked, detail: DetailIgnoredCancel}
			}
			r = <-ch
		}
	}
	files.close()
	if !r.panicked && r.err == nil {
		// The data was handed over and cannot be recalled: acknowledged
		// whatever the checks say now.
		return outcome{c: c, status: StatusAcknowledged}
	}
	o := outcome{c: c, status: StatusRetry}
	switch {
	case r.panicked:
		o.detail = DetailPanic
	case hctx.Err() != nil:
		o.detail = DetailTimeout
	default:
		o.detail = DetailRaisedPrefix + fmt.Sprintf("%T", r.err)
	}
	// A retry that could not be delivered anyway is blocked instead. The
	// checks outlive Close's cancellation: its outcome is still settled.
	pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.HandlerTimeout)
	defer pcancel()
	if _, detail := s.fullCheck(pctx, c); detail != "" {
		return blocked(detail)
	}
	return o
}

// quarantineAdd marks one stuck handler goroutine of module.
func (s *Service) quarantineAdd(module string) {
	s.mu.Lock()
	s.quarantine[module]++
	s.mu.Unlock()
	s.healthLater(module)
	s.signal()
}

// release ends one stuck goroutine's quarantine mark.
func (s *Service) release(module string) {
	s.mu.Lock()
	if s.quarantine[module]--; s.quarantine[module] <= 0 {
		delete(s.quarantine, module)
		s.released[module] = true
	}
	s.mu.Unlock()
	s.healthLater(module)
	s.log.Info("quarantined scheduled-result handler returned", "module", module)
	s.signal()
	s.watch.Notify() // /results' quarantined badge ends even with nothing waiting
}

// check is the module side of §5.2's check(): the handler registered by a
// running instance, the name still declared, the guild active, and the
// row still leased under c's token and not expired. It returns the
// registration or the detail that stops the delivery.
func (s *Service) check(ctx context.Context, c *claim) (*registration, string) {
	s.mu.Lock()
	reg := s.handlers[c.key]
	closed := reg == nil || reg.b.closed
	s.mu.Unlock()
	if closed || !reg.b.running() || !reg.b.declared(c.key.Name) {
		return nil, DetailUnavailable
	}
	if !reg.b.guildActive(c.key.GuildID) {
		return nil, DetailInactive
	}
	if !s.live(ctx, c) {
		return nil, DetailLeaseLost
	}
	return reg, ""
}

// fullCheck is check, the producer's access check, and check again.
func (s *Service) fullCheck(ctx context.Context, c *claim) (*registration, string) {
	if _, d := s.check(ctx, c); d != "" {
		return nil, d
	}
	p := s.getProducer()
	if p == nil {
		return nil, DetailAccess
	}
	actx, cancel := context.WithTimeout(ctx, s.opts.HandlerTimeout)
	err := p.CheckAccess(actx, c.pub)
	cancel()
	if err != nil {
		s.log.Debug("scheduled-result access refused", "module", c.key.Module, "run", c.pub.RunID, "err", err)
		return nil, DetailAccess
	}
	return s.check(ctx, c)
}

const liveQuery = `SELECT 1 FROM kimi_result_notifications WHERE id = ? AND lease_token = ?
	AND lease_until_ms > ? AND expires_ms > ?`

// live reports whether c's row is still delivering under its token with a
// live lease and not expired. The row stops being live only through this
// service (settle, prune, renewal, revoke, unsubscribe, the admin's
// actions; serve's exclusive lock keeps other processes off the data dir)
// or by its lease or expiry running out, which are known in memory: with
// the generation unchanged since the claim and the lease and expiry fine
// in memory, it answers without a read; else it reads the committed
// state. Two services on one database (TestLeaseExpiryRedelivery) take
// each other's rows only once the lease ran out, which the in-memory
// lease check sees without the generation.
func (s *Service) live(ctx context.Context, c *claim) bool {
	nowMs := s.now().UnixMilli()
	s.mu.Lock()
	until := c.leaseUntil
	s.mu.Unlock()
	if until <= nowMs || c.expires.UnixMilli() <= nowMs {
		return false
	}
	if s.gen.Load() == c.gen {
		return true
	}
	var one int
	err := s.readStmt(ctx, liveQuery).QueryRowContext(ctx, c.id, c.token, nowMs, nowMs).Scan(&one)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		s.log.Warn("notification liveness check failed", "id", c.id, "err", err)
	}
	return err == nil
}
