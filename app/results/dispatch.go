package results

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kimiapp/kimi/app/internal/stmtcache"
	"github.com/kimiapp/kimi/app/internal/wake"
)

// errNotImplemented marks the skeleton's bodies (removed as they are filled).
var errNotImplemented = errors.New("results: not implemented")

// DetailPanic is the retry detail of a handler that panicked (the
// original's "Subscriber raised <Type>" for an exception; a Go panic has
// no error type to name).
const DetailPanic = DetailRaisedPrefix + "panic"

// state is the dispatcher's and the registry's state (dispatch.go, port.go).
type state struct {
	mu       sync.Mutex
	started  bool
	closed   bool
	producer Producer
	// handlers are the registered handlers by subscription; latest is
	// each module's newest binding (whose Hooks.Health reports).
	handlers map[SubKey]*registration
	latest   map[string]*Binding
	// quarantine counts each module's handler goroutines still running
	// after their cancel grace; released lists modules whose count fell
	// to zero (their DetailQuarantined rows become due at once).
	quarantine map[string]int
	released   map[string]bool
	// inflight are the claims this service holds (by token): queued
	// (claimed ahead, not launched yet, in claim order) or running
	// (launched; running counts those whose deliver has not returned);
	// done are the outcomes waiting for the next step's settle.
	inflight map[string]*claim
	queue    []*claim
	running  int
	done     []outcome
	// gen is bumped by every operation that deletes or rewrites rows
	// outside the dispatcher's own steps (changed: revoke, unsubscribe,
	// the admin's actions); live answers from memory for a claim made at
	// the current generation.
	gen atomic.Uint64
	// healthDirty are modules whose health the reporter reports next.
	healthDirty map[string]bool
	healthWake  chan struct{}
	healthDone  chan struct{}
	// stmts are the dispatcher's prepared statements (only the loop
	// goroutine uses them, and Close after it stopped).
	stmts *stmtcache.Cache
	// fails is the run of failed steps (loop goroutine only).
	fails *wake.Failures
	// readStmts are statements prepared on the read pool (database/sql
	// prepares them again on each connection as needed).
	readMu    sync.Mutex
	readStmts map[string]*sql.Stmt
	// pruneAt is when the next prune has work (unix ms; 0: at once);
	// pruneHint is the earliest expiry enqueued since the last step began
	// (the step reads it before its transaction, which waits for the
	// enqueuing one to commit).
	pruneAt, pruneHint int64
	// afterCommit holds what a change inside a producer's transaction
	// (Enqueue, a revoke) must announce once it commits: the next step
	// reads it before its own transaction, which waits for the producer's
	// to end, and announces it after its commit — an announcement before
	// the producer's commit let /results cache the old state.
	afterCommit       bool
	afterCommitHealth map[string]bool

	stop       chan struct{}
	loopDone   chan struct{}
	runCtx     context.Context
	cancelRun  context.CancelFunc
	deliveries sync.WaitGroup

	// Counters for tests and benchmarks.
	steps, claimTxs, timerFires, commits atomic.Int64
}

func (s *Service) initState() {
	s.stmts = stmtcache.New(s.st.Writer(), s.log)
	s.fails = wake.NewFailures(func() time.Time { return s.now() })
	s.producer = s.opts.Producer
	s.handlers = map[SubKey]*registration{}
	s.latest = map[string]*Binding{}
	s.quarantine = map[string]int{}
	s.released = map[string]bool{}
	s.inflight = map[string]*claim{}
	s.healthDirty = map[string]bool{}
	s.pruneHint = noPrune
	s.healthWake = make(chan struct{}, 1)
	s.healthDone = make(chan struct{})
	s.stop = make(chan struct{})
	s.loopDone = make(chan struct{})
	s.runCtx, s.cancelRun = context.WithCancel(context.Background())
}

// SetProducer sets the producer before Start (the scheduled tasks are
// built after the service, which they enqueue into).
func (s *Service) SetProducer(p Producer) {
	s.mu.Lock()
	s.producer = p
	s.opts.Producer = p
	s.mu.Unlock()
	s.signal()
}

func (s *Service) getProducer() Producer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.producer
}

func (s *Service) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// isQuarantined reports whether module's handler ignored cancellation
// and still runs.
func (s *Service) isQuarantined(module string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quarantine[module] > 0
}

// changed records a change of modules' rows: the generation is bumped
// (held claims' liveness is read from the database again), their health
// is reported by the next step, the dispatcher wakes and /results'
// watchers are told. The admin's actions and unsubscribe call it after
// their transactions commit, a revoke inside the producer's transaction
// (before its commit; bumping for one that rolls back only costs reads).
func (s *Service) changed(modules ...string) {
	s.gen.Add(1)
	s.healthLater(modules...)
	s.signal()
	s.watch.Notify()
}

// changedInTx is changed for a change inside a producer's transaction:
// the liveness generation moves at once, the health and /results are told
// by the next step, after the producer's commit (see afterCommit).
func (s *Service) changedInTx(modules ...string) {
	s.gen.Add(1)
	s.mu.Lock()
	s.afterCommit = true
	if s.afterCommitHealth == nil {
		s.afterCommitHealth = map[string]bool{}
	}
	for _, m := range modules {
		s.afterCommitHealth[m] = true
	}
	s.mu.Unlock()
	s.signal()
}

// Start runs the dispatcher: it prunes, claims and delivers whatever is
// due, then waits for a signal or its one timer.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	go s.loop()
	go s.reportLoop()
}

// loop is the dispatcher goroutine: a step at once, then one after every
// signal and at the moment the step returned, until Close
// (app/internal/wake); timerFires counts the timer's wake-ups.
func (s *Service) loop() {
	defer close(s.loopDone)
	wake.Loop{Step: s.step, Wake: s.wake, Now: s.now, OnTimer: func() { s.timerFires.Add(1) }}.Run(s.stop)
}

// Close stops the dispatcher: no new claims; running handlers are
// cancelled and waited for up to the cancel grace; leases of handlers
// still running are left to expire; queued claims (never launched) are
// released, in the same transaction as the last settles. ctx bounds the
// wait.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	close(s.stop)
	if started {
		<-s.loopDone
		<-s.healthDone
	}
	s.stmts.Close()
	s.readMu.Lock()
	for q, p := range s.readStmts {
		_ = p.Close()
		delete(s.readStmts, q)
	}
	s.readMu.Unlock()
	s.cancelRun()
	waited := make(chan struct{})
	go func() { s.deliveries.Wait(); close(waited) }()
	grace := time.NewTimer(s.opts.CancelGrace)
	defer grace.Stop()
	var werr error
	select {
	case <-waited:
	case <-grace.C:
		s.log.Warn("scheduled-result handlers still running at close; their leases will expire")
	case <-ctx.Done():
		werr = fmt.Errorf("results: close: %w", ctx.Err())
	}
	s.mu.Lock()
	outs := s.done
	s.done = nil
	queued := s.queue
	s.queue = nil
	var settle []outcome
	var counts []*claim // launched, not counted, no outcome to settle
	for _, o := range outs {
		delete(s.inflight, o.c.token)
		if o.c.launched && !o.c.counted {
			o.inc = 1
		}
		if o.detail != DetailIgnoredCancel {
			settle = append(settle, o)
		} else if o.inc > 0 {
			counts = append(counts, o.c)
		}
	}
	for _, c := range queued {
		delete(s.inflight, c.token)
	}
	for _, c := range s.inflight {
		if c.launched && !c.counted {
			counts = append(counts, c)
		}
	}
	// A claim counted at claim but never launched (Close came between)
	// gives the attempt back.
	uncount := make([]int, len(queued))
	for i, c := range queued {
		if c.counted {
			uncount[i] = 1
		}
	}
	s.mu.Unlock()
	if len(settle)+len(queued)+len(counts) > 0 {
		now := s.now()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepTimeout)
		defer cancel()
		err := s.st.Write(wctx, func(tx *sql.Tx) error {
			deltas := countDeltas{}
			for _, o := range settle {
				if _, err := s.settle(wctx, tx, o, now, deltas); err != nil {
					return err
				}
			}
			for _, c := range counts {
				if _, err := tx.ExecContext(wctx, `UPDATE kimi_result_notifications SET attempts = attempts + 1
					WHERE id = ? AND lease_token = ?`, c.id, c.token); err != nil {
					return fmt.Errorf("count attempt %s: %w", c.id, err)
				}
			}
			// Queued claims are unleased, their status untouched:
			// claimable at once by the next start (their retry_ms was due
			// when claimed).
			for i, c := range queued {
				if _, err := tx.ExecContext(wctx, `UPDATE kimi_result_notifications SET lease_token = '', lease_until_ms = 0,
					attempts = attempts - ? WHERE id = ? AND lease_token = ?`, uncount[i], c.id, c.token); err != nil {
					return fmt.Errorf("release %s: %w", c.id, err)
				}
			}
			return deltas.write(wctx, tx)
		})
		if err != nil && werr == nil {
			werr = fmt.Errorf("results: close: settle: %w", err)
		}
	}
	s.watch.Close()
	return werr
}
