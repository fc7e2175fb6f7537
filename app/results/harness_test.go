package results

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Guilds of the tests.
const (
	guildA uint64 = 1001
	guildB uint64 = 1002
)

// clock is an injectable clock the test advances (frozen otherwise, so
// every stored time is exact).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return st
}

// producer is the test's scheduled tasks: access can be denied, files
// are served by attachment id.
type producer struct {
	mu     sync.Mutex
	deny   bool
	files  map[string][]byte
	checks atomic.Int64
	reads  atomic.Int64
}

var _ Producer = (*producer)(nil)

func (p *producer) CheckAccess(ctx context.Context, pub Publication) error {
	p.checks.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deny {
		return errors.New("owner left the guild")
	}
	return nil
}

func (p *producer) ReadFile(ctx context.Context, runID, attachmentID string, limit int64) ([]byte, error) {
	p.reads.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	data, ok := p.files[attachmentID]
	if !ok {
		return nil, errors.New("no such file")
	}
	if int64(len(data)) > limit {
		return nil, errors.New("too large")
	}
	return bytes.Clone(data), nil
}

func (p *producer) setDeny(v bool) {
	p.mu.Lock()
	p.deny = v
	p.mu.Unlock()
}

// env is a real store, a clock, a producer and a started service.
type env struct {
	t    *testing.T
	ctx  context.Context
	st   *store.Store
	clk  *clock
	prod *producer
	svc  *Service
}

// fast are the test bounds: short enough that a timeout is reached, long
// enough that nothing races a noisy machine.
func fast(o *Options) {
	o.HandlerTimeout = 10 * time.Second
	o.CancelGrace = 10 * time.Second
}

func newEnv(t *testing.T, tune ...func(*Options)) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), st: openStore(t), clk: newClock(), prod: &producer{files: map[string][]byte{}}}
	e.svc = e.newService(tune...)
	e.svc.Start()
	return e
}

// newService returns another service on the same database (not started).
func (e *env) newService(tune ...func(*Options)) *Service {
	e.t.Helper()
	o := Options{Store: e.st, Logger: slog.New(slog.DiscardHandler), Now: e.clk.Now, Producer: e.prod}
	fast(&o)
	for _, f := range tune {
		f(&o)
	}
	s, err := New(o)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// mod is a bound module instance's hooks, as the host would give them.
type mod struct {
	name     string
	running  atomic.Bool
	mu       sync.Mutex
	inactive map[uint64]bool
	health   []healthReport
}

type healthReport struct {
	state   sdk.HealthState
	detail  string
	metrics map[string]float64
}

func (m *mod) setInactive(g uint64, v bool) {
	m.mu.Lock()
	m.inactive[g] = v
	m.mu.Unlock()
}

func (m *mod) lastHealth() (healthReport, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.health) == 0 {
		return healthReport{}, false
	}
	return m.health[len(m.health)-1], true
}

// bind binds module on svc with the declared names ("digest" when none).
func (e *env) bind(svc *Service, module string, declared ...string) (*Binding, *mod) {
	if len(declared) == 0 {
		declared = []string{"digest"}
	}
	m := &mod{name: module, inactive: map[uint64]bool{}}
	m.running.Store(true)
	b := svc.Bind(module, Hooks{
		Declared: declared,
		Running:  m.running.Load,
		GuildActive: func(g uint64) bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			return !m.inactive[g]
		},
		Health: func(state sdk.HealthState, detail string, metrics map[string]float64) {
			m.mu.Lock()
			m.health = append(m.health, healthReport{state, detail, metrics})
			m.mu.Unlock()
		},
	})
	return b, m
}

// pub is a completed publication of run in guild with one message and
// one attachment.
func (e *env) pub(run string, guild uint64) Publication {
	return Publication{
		RunID: run, TaskID: "task-1", Revision: 3, GuildID: guild, OwnerID: 42, OriginChannelID: 7,
		PublishedAt: e.clk.Now(), Outcome: sdk.ResultCompleted,
		Messages: []sdk.ScheduledResultMessage{{
			Message:     sdk.MessageRef{GuildID: guild, ChannelID: 11, MessageID: 5001},
			Content:     "Daily digest",
			Attachments: []sdk.ScheduledResultAttachment{{ID: "att-1", Filename: "digest.txt", SizeBytes: 5, Description: "the digest"}},
			EmbedJSON:   `{"title":"Digest"}`,
		}},
	}
}

// enqueue commits p in its own producer transaction.
func (e *env) enqueue(p Publication) int {
	e.t.Helper()
	var n int
	err := e.st.Write(e.ctx, func(tx *sql.Tx) error {
		var err error
		n, err = e.svc.Enqueue(e.ctx, tx, p)
		return err
	})
	if err != nil {
		e.t.Fatalf("Enqueue %s: %v", p.RunID, err)
	}
	return n
}

// row is a notification's stored state, Status as the service reads it
// at the env's clock (a live lease reads as delivering; Stored is the
// column).
type row struct {
	ID                                 string
	Status, Stored                     Status
	Attempts                           int
	Detail                             string
	RetryMs, LeaseMs, AckMs, ExpiresMs int64
	DetailMs, PublishedMs              int64
	Token                              string
	Module, Name, Run                  string
	Guild                              uint64
}

func (e *env) rows(where string, args ...any) []row {
	e.t.Helper()
	q := `SELECT id, status, attempts, detail, retry_ms, lease_until_ms, acknowledged_ms, expires_ms, detail_ms, published_ms,
		lease_token, module, name, run_id, guild_id FROM kimi_result_notifications`
	if where != "" {
		q += " WHERE " + where
	}
	rs, err := e.st.Reader().QueryContext(e.ctx, q+" ORDER BY published_ms, run_id, module, name, guild_id", args...)
	if err != nil {
		e.t.Fatalf("rows: %v", err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		var g int64
		if err := rs.Scan(&r.ID, &r.Status, &r.Attempts, &r.Detail, &r.RetryMs, &r.LeaseMs, &r.AckMs, &r.ExpiresMs, &r.DetailMs, &r.PublishedMs,
			&r.Token, &r.Module, &r.Name, &r.Run, &g); err != nil {
			e.t.Fatalf("rows: %v", err)
		}
		r.Guild = uint64(g)
		r.Stored = r.Status
		if now := e.clk.Now().UnixMilli(); r.Token != "" && r.LeaseMs > now && r.ExpiresMs > now {
			r.Status = StatusDelivering
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		e.t.Fatalf("rows: %v", err)
	}
	return out
}

// one returns the only notification of run.
func (e *env) one(run string) row {
	e.t.Helper()
	rs := e.rows("run_id = ?", run)
	if len(rs) != 1 {
		e.t.Fatalf("run %s: %d notifications, want 1: %+v", run, len(rs), rs)
	}
	return rs[0]
}

// count runs a count query.
func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.st.Reader().QueryRowContext(e.ctx, q, args...).Scan(&n); err != nil {
		e.t.Fatalf("count %q: %v", q, err)
	}
	return n
}

// waitFor waits (generously) for cond; no timing is asserted.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitStatus waits for run's only notification to reach status.
func (e *env) waitStatus(run string, want Status) row {
	e.t.Helper()
	var r row
	waitFor(e.t, fmt.Sprintf("run %s %s", run, want), func() bool {
		rs := e.rows("run_id = ?", run)
		if len(rs) == 1 {
			r = rs[0]
		}
		return len(rs) == 1 && rs[0].Status == want
	})
	return r
}

// settled waits until svc ran two full steps after now (a step that
// started before the call may have read older rows) with nothing in
// flight: whatever was due has been handled.
func settled(t *testing.T, svc *Service) {
	t.Helper()
	svc.signal()
	n := svc.steps.Load()
	waitFor(t, "two dispatcher steps", func() bool {
		if svc.steps.Load() < n+2 {
			svc.signal()
			return false
		}
		svc.mu.Lock()
		defer svc.mu.Unlock()
		return len(svc.inflight) == 0 && len(svc.done) == 0
	})
}

// recorder is a handler that records calls and answers with fn.
type recorder struct {
	mu    sync.Mutex
	calls []sdk.ScheduledResult
	fn    func(ctx context.Context, r sdk.ScheduledResult, f sdk.ScheduledResultFiles) error
}

func (h *recorder) handle(ctx context.Context, r sdk.ScheduledResult, f sdk.ScheduledResultFiles) error {
	h.mu.Lock()
	h.calls = append(h.calls, r)
	fn := h.fn
	h.mu.Unlock()
	if fn != nil {
		return fn(ctx, r, f)
	}
	return nil
}

func (h *recorder) n() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

func (h *recorder) all() []sdk.ScheduledResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sdk.ScheduledResult(nil), h.calls...)
}

// subscribe subscribes h (name "digest" in guild) or fails the test.
func (e *env) subscribe(b *Binding, guild uint64, h *recorder) {
	e.t.Helper()
	if err := b.Subscribe(e.ctx, "digest", guild, h.handle); err != nil {
		e.t.Fatalf("Subscribe: %v", err)
	}
}
