package results

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kimiapp/kimi/app/internal/stmtcache"

	"github.com/kimiapp/kimi/modules/sdk"
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

func (s *Service) loop() {
	defer close(s.loopDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		next := s.step()
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(max(next.Sub(s.now()), 0))
		}
		select {
		case <-s.stop:
			timer.Stop()
			return
		case <-s.wake:
		case <-timer.C:
			s.timerFires.Add(1)
		}
	}
}

// claim is one leased notification, queued or being delivered.
type claim struct {
	id, token string
	key       SubKey
	// attempts counts this invocation (the row's count once written).
	attempts int
	// prev is the row's status when claimed (a never-launched claim goes
	// back to it at Close).
	prev    Status
	gen     uint64 // s.gen when the step that claimed it began
	pub     Publication
	expires time.Time
	// Guarded by s.mu: the lease's end (unix ms; renewed by steps, 0 once
	// lost), whether the handler was launched, and whether the row's
	// attempts already count the invocation (at claim for the claims
	// launched at once; else by the first step after the launch).
	leaseUntil        int64
	launched, counted bool
}

// result is the typed notification handed to the handler (cloned per call).
func (c *claim) result() sdk.ScheduledResult {
	return sdk.ScheduledResult{
		NotificationID: c.id,
		Subscription:   c.key.Name,
		TaskID:         c.pub.TaskID,
		RunID:          c.pub.RunID,
		Revision:       c.pub.Revision,
		GuildID:        c.pub.GuildID,
		OwnerID:        c.pub.OwnerID,
		PublishedAt:    c.pub.PublishedAt,
		ExpiresAt:      c.expires,
		Messages:       c.pub.Messages,
		Outcome:        sdk.ResultCompleted,
	}
}

// outcome is a delivery's verdict; status "" settles nothing (the lease
// was lost). inc is 1 when the settle also counts the invocation in the
// row's attempts (a queued claim launched since the last step).
type outcome struct {
	c      *claim
	status Status
	detail string
	inc    int
}

// prefetch is how many claims the dispatcher holds per handler slot:
// up to prefetch×MaxInFlight rows are claimed, at most MaxInFlight
// handlers run, the others wait in memory and launch as slots free up
// without a transaction. 8 rather than 4: BenchmarkResultsDelivery's
// commits/notification halve (0.135 → 0.066) and notifications/s rise
// ~15%; after a crash the held rows wait out their lease (60 s) either
// way.
const prefetch = 8

// launchMargin is the lease a queued claim needs left to be launched: a
// whole handler run (timeout and cancel grace), capped at ¾ of the lease
// when the options make the lease shorter than that (a fresh claim has
// no more either).
func (s *Service) launchMargin() int64 {
	return min((s.opts.HandlerTimeout + s.opts.CancelGrace).Milliseconds(), s.opts.Lease.Milliseconds()*3/4)
}

// renewBelow is the lease left under which a step renews a held claim's
// lease: past half the lease, and always before the launch margin (so a
// queued claim short of it is renewed by the next step, then launched).
func (s *Service) renewBelow() int64 {
	return max(s.opts.Lease.Milliseconds()/2, s.launchMargin())
}

// renewal is a held claim whose lease a step renews.
type renewal struct {
	c     *claim
	token string
	id    string
	ok    bool
}

// noPrune is pruneAt when nothing will expire.
const noPrune = 1<<63 - 1

// stepTimeout bounds one step's transaction.
const stepTimeout = time.Minute

// step runs one write transaction (prune, settle, claim) and returns when
// the next one is due (zero: only on a signal).
func (s *Service) step() time.Time {
	defer s.steps.Add(1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return time.Time{}
	}
	gen := s.gen.Load()
	now := s.now()
	nowMs := now.UnixMilli()
	settles := s.done
	s.done = nil
	for i, o := range settles {
		delete(s.inflight, o.c.token)
		if o.c.launched && !o.c.counted {
			settles[i].inc = 1
		}
	}
	s.dropDeadQueued(nowMs)
	var renewals []*renewal
	var counts []*claim // launched, not yet counted, still running
	for _, c := range s.inflight {
		if c.leaseUntil > nowMs && c.leaseUntil-nowMs < s.renewBelow() {
			renewals = append(renewals, &renewal{c: c, token: c.token, id: c.id})
		}
		if c.launched && !c.counted {
			counts = append(counts, c)
		}
	}
	// limit: the claims this step may add; atOnce: how many of them find
	// a free handler slot at once (their attempts are counted at claim).
	limit := prefetch*s.opts.MaxInFlight - len(s.inflight)
	atOnce := max(0, s.opts.MaxInFlight-s.running-len(s.queue))
	quarantined := slices.Sorted(maps.Keys(s.quarantine))
	released := slices.Sorted(maps.Keys(s.released))
	clear(s.released)
	pruneAt := min(s.pruneAt, s.pruneHint)
	s.pruneHint = noPrune
	announce, announceHealth := s.afterCommit, s.afterCommitHealth
	s.afterCommit, s.afterCommitHealth = false, nil
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	var (
		claims      []*claim
		next        int64
		nextPrune   int64
		changedRows bool
		health      []string
	)
	err := s.st.Write(ctx, func(sqlTx *sql.Tx) error {
		tx := s.stmts.Tx(sqlTx)
		claims, changedRows = nil, false
		affected := map[string]bool{}
		nextPrune = pruneAt
		if pruneAt <= nowMs {
			n, err := s.prune(ctx, tx, nowMs, affected)
			if err != nil {
				return err
			}
			changedRows = changedRows || n > 0
			if nextPrune, err = s.nextPrune(ctx, tx, nowMs); err != nil {
				return err
			}
		}
		for _, m := range released {
			res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET retry_ms = ?
				WHERE module = ? AND status = 'blocked' AND detail = ? AND retry_ms > ?`, nowMs, m, DetailQuarantined, nowMs)
			if err != nil {
				return fmt.Errorf("requeue %s: %w", m, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				changedRows = true
			}
			affected[m] = true
		}
		ok, err := s.settleAll(ctx, tx, settles, now)
		if err != nil {
			return err
		}
		for i, o := range settles {
			if !ok[i] {
				s.log.Debug("notification lease lost; nothing settled", "module", o.c.key.Module, "id", o.c.id, "outcome", string(o.status))
			}
			changedRows = changedRows || ok[i]
			affected[o.c.key.Module] = true
		}
		for _, c := range counts {
			res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET attempts = attempts + 1
				WHERE id = ? AND lease_token = ? AND status = 'delivering'`, c.id, c.token)
			if err != nil {
				return fmt.Errorf("count attempt %s: %w", c.id, err)
			}
			// /results shows the attempts (and keeps its pages until a signal).
			if n, _ := res.RowsAffected(); n > 0 {
				changedRows = true
			}
		}
		for _, r := range renewals {
			res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET lease_until_ms = ?
				WHERE id = ? AND lease_token = ? AND status = 'delivering' AND lease_until_ms > ? AND expires_ms > ?`,
				nowMs+s.opts.Lease.Milliseconds(), r.id, r.token, nowMs, nowMs)
			if err != nil {
				return fmt.Errorf("renew lease %s: %w", r.id, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("renew lease %s: %w", r.id, err)
			}
			r.ok = n > 0
			// /results shows the lease (and keeps its pages until a signal).
			changedRows = changedRows || r.ok
		}
		for _, m := range quarantined {
			n, err := s.blockQuarantined(ctx, tx, m, nowMs)
			if err != nil {
				return err
			}
			if n > 0 {
				changedRows = true
				affected[m] = true
			}
		}
		if limit > 0 {
			var err error
			if claims, err = s.claim(ctx, tx, nowMs, limit, atOnce); err != nil {
				return err
			}
			for _, c := range claims {
				affected[c.key.Module] = true
			}
			changedRows = changedRows || len(claims) > 0
		}
		if next, err = s.nextDue(ctx, tx, nowMs); err != nil {
			return err
		}
		health = slices.Collect(maps.Keys(affected))
		return nil
	})
	s.stmts.PrepareSeen(ctx)
	if err != nil {
		s.log.Error("dispatch step failed", "err", err)
		s.mu.Lock()
		// The outcomes are settled by a later step (their leases may
		// expire meanwhile: the rows are then delivered again).
		s.done = append(settles, s.done...)
		for _, o := range settles {
			s.inflight[o.c.token] = o.c
		}
		for _, m := range released {
			s.released[m] = true
		}
		s.pruneHint = min(s.pruneHint, pruneAt)
		if announce {
			s.afterCommit = true
			if s.afterCommitHealth == nil {
				s.afterCommitHealth = map[string]bool{}
			}
			maps.Copy(s.afterCommitHealth, announceHealth)
		}
		s.mu.Unlock()
		return now.Add(time.Second)
	}
	s.commits.Add(1)
	if len(claims) > 0 {
		s.claimTxs.Add(1)
	}
	s.mu.Lock()
	s.pruneAt = nextPrune
	if pa := min(s.pruneAt, s.pruneHint); pa < noPrune && (next == 0 || pa < next) {
		next = pa
	}
	for _, c := range counts {
		c.counted = true
	}
	for _, r := range renewals {
		if r.ok {
			r.c.leaseUntil = nowMs + s.opts.Lease.Milliseconds()
		} else {
			r.c.leaseUntil = 0 // lost: a queued claim is dropped, a running one's checks fail
		}
	}
	for i, c := range claims {
		c.gen, c.counted = gen, i < atOnce
		s.inflight[c.token] = c
		s.queue = append(s.queue, c)
	}
	s.launchQueued()
	// The next renewal of a held claim (one whose lease still runs).
	for _, c := range s.inflight {
		if at := c.leaseUntil - s.renewBelow(); c.leaseUntil > nowMs && (next == 0 || at < next) {
			next = max(at, nowMs+1)
		}
	}
	s.mu.Unlock()
	// The reporter runs after every step that touched a module's rows
	// (coalesced: it reads kimi_result_counts, a few rows per module).
	s.healthLater(health...)
	s.healthLater(slices.Collect(maps.Keys(announceHealth))...)
	if changedRows || announce {
		s.watch.Notify()
	}
	if next == 0 {
		return time.Time{}
	}
	return time.UnixMilli(next)
}

// prune expires live rows past their expiry, deletes acknowledged rows
// past it and expired rows a further Retention on, and publications past
// expiry with no notifications left.
func (s *Service) prune(ctx context.Context, tx querier, nowMs int64, affected map[string]bool) (int, error) {
	total := 0
	stmts := []struct {
		q   string
		arg int64
	}{
		{`UPDATE kimi_result_notifications SET status = 'expired', lease_token = '', lease_until_ms = 0
			WHERE run_id IN (SELECT run_id FROM kimi_result_publications WHERE expires_ms <= ?)
			AND status IN ('pending', 'delivering', 'retry', 'blocked') RETURNING module`, nowMs},
		{`DELETE FROM kimi_result_notifications
			WHERE run_id IN (SELECT run_id FROM kimi_result_publications WHERE expires_ms <= ?)
			AND status = 'acknowledged' RETURNING module`, nowMs},
		{`DELETE FROM kimi_result_notifications
			WHERE run_id IN (SELECT run_id FROM kimi_result_publications WHERE expires_ms <= ?)
			AND status = 'expired' RETURNING module`, nowMs - Retention.Milliseconds()},
	}
	for _, st := range stmts {
		rows, err := tx.QueryContext(ctx, st.q, st.arg)
		if err != nil {
			return 0, fmt.Errorf("prune: %w", err)
		}
		mods, err := scanStrings(rows)
		if err != nil {
			return 0, fmt.Errorf("prune: %w", err)
		}
		for _, m := range mods {
			affected[m] = true
		}
		total += len(mods)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM kimi_result_publications WHERE expires_ms <= ?
		AND NOT EXISTS (SELECT 1 FROM kimi_result_notifications n WHERE n.run_id = kimi_result_publications.run_id)`, nowMs)
	if err != nil {
		return 0, fmt.Errorf("prune publications: %w", err)
	}
	n, _ := res.RowsAffected()
	return total + int(n), nil
}

// nextPrune is when prune next has work: the earliest publication expiry
// to come, or the purge of expired rows (0: none).
func (s *Service) nextPrune(ctx context.Context, tx querier, nowMs int64) (int64, error) {
	var a, b sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT min(expires_ms) FROM kimi_result_publications WHERE expires_ms > ?`, nowMs).Scan(&a); err != nil {
		return 0, fmt.Errorf("next prune: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT min(p.expires_ms) FROM kimi_result_publications p WHERE p.expires_ms <= ?
		AND EXISTS (SELECT 1 FROM kimi_result_notifications n WHERE n.run_id = p.run_id AND n.status = 'expired')`, nowMs).Scan(&b); err != nil {
		return 0, fmt.Errorf("next prune: %w", err)
	}
	next := int64(noPrune)
	if a.Valid {
		next = a.Int64
	}
	if b.Valid {
		next = min(next, b.Int64+Retention.Milliseconds())
	}
	return next, nil
}

// settle writes one outcome, guarded by the claim's token, a live lease
// and the row's expiry; false: the lease was lost (nothing written).
func (s *Service) settle(ctx context.Context, tx querier, o outcome, now time.Time) (bool, error) {
	if o.status == "" {
		return false, nil
	}
	nowMs := now.UnixMilli()
	var (
		res sql.Result
		err error
	)
	guard := `WHERE id = ? AND lease_token = ? AND status = 'delivering' AND lease_until_ms > ? AND expires_ms > ?`
	if o.status == StatusAcknowledged {
		res, err = tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET status = 'acknowledged', acknowledged_ms = ?,
			retry_ms = 0, lease_token = '', lease_until_ms = 0, detail = '', detail_ms = ?, attempts = attempts + ? `+guard,
			nowMs, nowMs, o.inc, o.c.id, o.c.token, nowMs, nowMs)
	} else {
		delay := s.opts.BlockedRetry
		if o.status == StatusRetry {
			delay = retryDelay(o.c.attempts)
		}
		res, err = tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET status = ?, retry_ms = ?,
			lease_token = '', lease_until_ms = 0, detail = ?, detail_ms = ?, attempts = attempts + ? `+guard,
			string(o.status), now.Add(delay).UnixMilli(), clipRunes(o.detail, DetailMax), nowMs, o.inc, o.c.id, o.c.token, nowMs, nowMs)
	}
	if err != nil {
		return false, fmt.Errorf("settle %s: %w", o.c.id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("settle %s: %w", o.c.id, err)
	}
	return n > 0, nil
}

// leaseRows is the rows of a batch statement: a JSON array of [id,
// token, inc] (one statement for the batch: each statement costs about
// as much as the row it writes).
const leaseRows = `(SELECT value->>0 AS id, value->>1 AS token, value->>2 AS inc FROM json_each(?1))`

// ackQuery acknowledges a batch, each row under settle's guard (the unary
// + keeps the planner on the id lookup per batch row: on the due index's
// status it scanned json_each once per delivering row).
const ackQuery = `UPDATE kimi_result_notifications AS n SET status = 'acknowledged', acknowledged_ms = ?2,
	retry_ms = 0, lease_token = '', lease_until_ms = 0, detail = '', detail_ms = ?2, attempts = n.attempts + j.inc
	FROM ` + leaseRows + ` AS j
	WHERE n.id = j.id AND n.lease_token = j.token AND +n.status = 'delivering' AND n.lease_until_ms > ?2 AND n.expires_ms > ?2
	RETURNING id`

// batchJSON is leaseRows' argument for claims, with inc[i] for claim i.
func batchJSON(cs []*claim, inc func(i int) int) (string, error) {
	rows := make([][3]any, len(cs))
	for i, c := range cs {
		rows[i] = [3]any{c.id, c.token, inc(i)}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return "", fmt.Errorf("batch: %w", err)
	}
	return string(b), nil
}

// settleAll settles outcomes: the acknowledgements in one statement, the
// others one by one (settle); ok[i] reports whether outcome i was written.
func (s *Service) settleAll(ctx context.Context, tx querier, outs []outcome, now time.Time) ([]bool, error) {
	ok := make([]bool, len(outs))
	var acks []*claim
	var ackInc []int
	for i, o := range outs {
		if o.status == StatusAcknowledged {
			acks, ackInc = append(acks, o.c), append(ackInc, o.inc)
			continue
		}
		var err error
		if ok[i], err = s.settle(ctx, tx, o, now); err != nil {
			return nil, err
		}
	}
	if len(acks) == 0 {
		return ok, nil
	}
	arg, err := batchJSON(acks, func(i int) int { return ackInc[i] })
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, ackQuery, arg, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	ids, err := scanStrings(rows)
	if err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	for i, o := range outs {
		if o.status == StatusAcknowledged {
			ok[i] = slices.Contains(ids, o.c.id)
		}
	}
	return ok, nil
}

// dueWhere selects the claimable rows of an unpaused subscription (a
// delivering row whose lease ran out belongs to a crashed or stuck
// delivery: claimable again).
const dueWhere = `n.status IN ('pending', 'retry', 'blocked', 'delivering') AND n.expires_ms > ?1 AND n.retry_ms <= ?1
	AND n.lease_until_ms <= ?1 AND EXISTS (SELECT 1 FROM kimi_result_subscriptions s
	WHERE s.module = n.module AND s.name = n.name AND s.guild_id = n.guild_id AND s.paused = 0)`

// claimQuery selects up to ?2 (the claim's limit, written in) due rows in claim order: each status's
// rows come in that order from the due index, so only the first ?2 of
// each are read, and the four are merged.
var claimQuery = func() string {
	var parts []string
	for _, st := range []Status{StatusPending, StatusRetry, StatusBlocked, StatusDelivering} {
		parts = append(parts, `SELECT * FROM (SELECT n.id, n.module, n.name, n.guild_id, n.attempts, n.expires_ms, n.retry_ms, n.published_ms, n.run_id, n.status
			FROM kimi_result_notifications n WHERE n.status = '`+string(st)+`' AND `+dueWhere+`
			ORDER BY n.retry_ms, n.published_ms, n.id LIMIT ?2)`)
	}
	return `SELECT d.id, d.module, d.name, d.guild_id, d.attempts, d.expires_ms, d.status,
		p.run_id, p.task_id, p.revision, p.owner_id, p.origin_channel, p.published_ms, p.messages
		FROM (` + strings.Join(parts, " UNION ALL ") + `) d JOIN kimi_result_publications p ON p.run_id = d.run_id
		ORDER BY d.retry_ms, d.published_ms, d.id LIMIT ?2`
}()

// blockQuarantined settles a quarantined module's due rows blocked
// (DetailQuarantined) without delivering them.
func (s *Service) blockQuarantined(ctx context.Context, tx querier, module string, nowMs int64) (int64, error) {
	res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications AS n SET status = 'blocked', attempts = attempts + 1,
		retry_ms = ?2, lease_token = '', lease_until_ms = 0, detail = ?3, detail_ms = ?1
		WHERE n.module = ?4 AND `+dueWhere, nowMs, nowMs+s.opts.BlockedRetry.Milliseconds(), DetailQuarantined, module)
	if err != nil {
		return 0, fmt.Errorf("block quarantined %s: %w", module, err)
	}
	return res.RowsAffected()
}

// claim leases up to limit due rows, oldest due first; the first atOnce
// (those launched at once) count the attempt in the row now, the others
// when they are launched (attempts count handler invocations).
func (s *Service) claim(ctx context.Context, tx querier, nowMs int64, limit, atOnce int) ([]*claim, error) {
	// The limit is written into the statement (at most MaxInFlight
	// variants, each prepared once): a bound LIMIT in the compound query
	// made SQLite re-prepare it on every run.
	rows, err := tx.QueryContext(ctx, strings.ReplaceAll(claimQuery, "?2", strconv.Itoa(limit)), nowMs)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	var out []*claim
	var msgs []string
	for rows.Next() {
		c := &claim{token: newToken(), leaseUntil: nowMs + s.opts.Lease.Milliseconds()}
		var guild, owner, origin, exp, pub int64
		var m, prev string
		if err := rows.Scan(&c.id, &c.key.Module, &c.key.Name, &guild, &c.attempts, &exp, &prev,
			&c.pub.RunID, &c.pub.TaskID, &c.pub.Revision, &owner, &origin, &pub, &m); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim: %w", err)
		}
		c.key.GuildID, c.pub.GuildID, c.pub.OwnerID, c.pub.OriginChannelID = uint64(guild), uint64(guild), uint64(owner), uint64(origin)
		c.attempts++
		c.prev = Status(prev)
		c.expires, c.pub.PublishedAt, c.pub.Outcome = time.UnixMilli(exp), time.UnixMilli(pub), sdk.ResultCompleted
		out = append(out, c)
		msgs = append(msgs, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	for i, c := range out {
		if c.pub.Messages, err = decodeMessages(msgs[i]); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	arg, err := batchJSON(out, func(i int) int {
		if i < atOnce {
			return 1
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications AS n SET status = 'delivering', attempts = n.attempts + j.inc,
		lease_token = j.token, lease_until_ms = ?2 FROM `+leaseRows+` AS j WHERE n.id = j.id`, arg, nowMs+s.opts.Lease.Milliseconds()); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return out, nil
}

// nextDue is the earliest moment a row becomes due (a retry, a lease
// running out) or a publication expires (0: none; the step adds the
// purge of expired rows).
func (s *Service) nextDue(ctx context.Context, tx querier, nowMs int64) (int64, error) {
	var t sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT min(t) FROM (
		SELECT min(retry_ms) AS t FROM kimi_result_notifications WHERE status = 'pending' AND retry_ms > ?1
		UNION ALL SELECT min(retry_ms) FROM kimi_result_notifications WHERE status = 'retry' AND retry_ms > ?1
		UNION ALL SELECT min(retry_ms) FROM kimi_result_notifications WHERE status = 'blocked' AND retry_ms > ?1
		UNION ALL SELECT min(lease_until_ms) FROM kimi_result_notifications WHERE status = 'delivering' AND lease_until_ms > ?1
		UNION ALL SELECT min(expires_ms) FROM kimi_result_publications WHERE expires_ms > ?1)`, nowMs).Scan(&t)
	if err != nil {
		return 0, fmt.Errorf("next due: %w", err)
	}
	if !t.Valid {
		return 0, nil
	}
	return t.Int64, nil
}

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
	AND status = 'delivering' AND lease_until_ms > ? AND expires_ms > ?`

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
			for _, o := range settle {
				if _, err := s.settle(wctx, tx, o, now); err != nil {
					return err
				}
			}
			for _, c := range counts {
				if _, err := tx.ExecContext(wctx, `UPDATE kimi_result_notifications SET attempts = attempts + 1
					WHERE id = ? AND lease_token = ? AND status = 'delivering'`, c.id, c.token); err != nil {
					return fmt.Errorf("count attempt %s: %w", c.id, err)
				}
			}
			// Queued claims go back to the status they were claimed in,
			// unleased: claimable at once by the next start (their
			// retry_ms was due when claimed).
			for i, c := range queued {
				if _, err := tx.ExecContext(wctx, `UPDATE kimi_result_notifications SET status = ?, lease_token = '', lease_until_ms = 0,
					attempts = attempts - ? WHERE id = ? AND lease_token = ? AND status = 'delivering'`,
					string(c.prev), uncount[i], c.id, c.token); err != nil {
					return fmt.Errorf("release %s: %w", c.id, err)
				}
			}
			return nil
		})
		if err != nil && werr == nil {
			werr = fmt.Errorf("results: close: settle: %w", err)
		}
	}
	s.watch.Close()
	return werr
}
