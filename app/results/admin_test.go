package results

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// adminFixture is a service over a migrated SQLite file with a settable
// clock; rows are inserted with plain SQL to set up every state.
type adminFixture struct {
	t   *testing.T
	st  *store.Store
	svc *Service
	mu  sync.Mutex
	now time.Time
	seq int
}

func newAdminFixture(t *testing.T) *adminFixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	f := &adminFixture{t: t, st: st, now: time.UnixMilli(1_800_000_000_000)}
	f.svc, err = New(Options{Store: st, Logger: slog.New(slog.DiscardHandler), Now: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *adminFixture) clock() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }

func (f *adminFixture) exec(q string, args ...any) {
	f.t.Helper()
	if _, err := f.st.Writer().Exec(q, args...); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
}

func (f *adminFixture) subscribe(k SubKey) {
	f.t.Helper()
	f.exec(`INSERT INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES (?, ?, ?, ?)`,
		k.Module, k.Name, int64(k.GuildID), f.clock().UnixMilli())
}

// adminRow is a notification to insert: published age before now, and state.
type adminRow struct {
	age      time.Duration
	status   Status
	retryIn  time.Duration // retry_ms = now + retryIn (0: 0)
	detail   string
	detailAt time.Duration // detail_ms = now - detailAt
	expired  bool          // expires_ms <= now (else now + a day)
	run      string        // "" a fresh run per row
}

// add inserts r for k (its publication too) and returns the id.
func (f *adminFixture) add(k SubKey, r adminRow) string {
	f.t.Helper()
	f.seq++
	now := f.clock().UnixMilli()
	id := fmt.Sprintf("%032x", f.seq)
	run := r.run
	if run == "" {
		run = fmt.Sprintf("run-%d", f.seq)
	}
	pub := now - r.age.Milliseconds()
	exp := now + (24 * time.Hour).Milliseconds()
	if r.expired {
		exp = now - 1
	}
	f.exec(`INSERT OR IGNORE INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, published_ms, expires_ms, messages)
		VALUES (?, ?, 3, ?, 7, ?, ?, '[]')`, run, "task-"+run, int64(k.GuildID), pub, exp)
	retry, detailMs := int64(0), int64(0)
	if r.retryIn != 0 {
		retry = now + r.retryIn.Milliseconds()
	}
	if r.detail != "" {
		detailMs = now - r.detailAt.Milliseconds()
	}
	ack := int64(0)
	if r.status == StatusAcknowledged {
		ack = now
	}
	// Delivering is a pending row under a live lease (migration 00018).
	status, token, lease := r.status, "", int64(0)
	if status == StatusDelivering {
		status, token, lease = StatusPending, fmt.Sprintf("%032x", 1<<40+f.seq), now+Lease.Milliseconds()
	}
	f.exec(`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms, status, attempts, retry_ms, detail, detail_ms, acknowledged_ms,
		lease_token, lease_until_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)`, id, run, k.Module, k.Name, int64(k.GuildID), pub, exp, string(status), retry, r.detail, detailMs, ack, token, lease)
	return id
}

func (f *adminFixture) auditRows(action string) []store.AuditEntry {
	f.t.Helper()
	rows, _, err := f.st.ListAudit(context.Background(), store.AuditFilter{Action: action, Limit: store.AuditPageMax})
	if err != nil {
		f.t.Fatal(err)
	}
	return rows
}

func (f *adminFixture) retryMs(id string) int64 {
	f.t.Helper()
	var ms int64
	if err := f.st.Reader().QueryRow(`SELECT retry_ms FROM kimi_result_notifications WHERE id = ?`, id).Scan(&ms); err != nil {
		f.t.Fatal(err)
	}
	return ms
}

func (f *adminFixture) notificationCount(k SubKey) int {
	f.t.Helper()
	var n int
	if err := f.st.Reader().QueryRow(`SELECT COUNT(*) FROM kimi_result_notifications WHERE module = ? AND name = ? AND guild_id = ?`,
		k.Module, k.Name, int64(k.GuildID)).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

var (
	subA = SubKey{Module: "kudos", Name: "digest", GuildID: 42}
	subB = SubKey{Module: "kudos", Name: "digest", GuildID: 7}
	subC = SubKey{Module: "alpha", Name: "feed", GuildID: 42}
	admn = Actor{Admin: "admin", IP: "127.0.0.1"}
)

// TestSubscriptionsCounts: counts by status with open rows past their
// expiry under expired (acknowledged ones stay acknowledged), the oldest
// open publication, the newest retry/blocked detail, ordered by module,
// name and guild.
func TestSubscriptionsCounts(t *testing.T) {
	f := newAdminFixture(t)
	for _, k := range []SubKey{subA, subB, subC} {
		f.subscribe(k)
	}
	f.add(subA, adminRow{age: time.Minute, status: StatusPending})
	f.add(subA, adminRow{age: 3 * time.Hour, status: StatusPending, expired: true}) // expired, not the oldest pending
	f.add(subA, adminRow{age: 2 * time.Hour, status: StatusRetry, detail: "Subscriber raised *errors.errorString", detailAt: time.Minute})
	f.add(subA, adminRow{age: 30 * time.Minute, status: StatusBlocked, detail: DetailAccess, detailAt: 2 * time.Minute})
	f.add(subA, adminRow{age: time.Hour, status: StatusDelivering})
	f.add(subA, adminRow{age: 4 * time.Hour, status: StatusAcknowledged})
	f.add(subA, adminRow{age: 5 * time.Hour, status: StatusAcknowledged, expired: true})
	f.add(subA, adminRow{age: 6 * time.Hour, status: StatusExpired, expired: true})
	f.add(subC, adminRow{age: time.Minute, status: StatusAcknowledged})

	subs, err := f.svc.Subscriptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var keys []SubKey
	for _, s := range subs {
		keys = append(keys, s.SubKey)
	}
	if want := []SubKey{subC, subB, subA}; !slices.Equal(keys, want) {
		t.Fatalf("order = %v, want %v", keys, want)
	}
	a := subs[2]
	want := Counts{StatusPending: 1, StatusDelivering: 1, StatusRetry: 1, StatusBlocked: 1, StatusAcknowledged: 2, StatusExpired: 2}
	for _, st := range Statuses {
		if a.Counts[st] != want[st] {
			t.Errorf("count %s = %d, want %d", st, a.Counts[st], want[st])
		}
	}
	now := f.clock()
	if got, want := a.OldestPending, now.Add(-2*time.Hour); !got.Equal(want) {
		t.Errorf("OldestPending = %v, want %v", got, want)
	}
	if a.LastError != "Subscriber raised *errors.errorString" || !a.LastErrorAt.Equal(now.Add(-time.Minute)) {
		t.Errorf("LastError = %q at %v", a.LastError, a.LastErrorAt)
	}
	if a.Registered || a.Quarantined || a.Paused {
		t.Errorf("flags = %+v", a)
	}
	if b := subs[1]; len(b.Counts) != 0 || !b.OldestPending.IsZero() || b.LastError != "" {
		t.Errorf("empty subscription = %+v", b)
	}
	if c := subs[0]; c.Counts[StatusAcknowledged] != 1 || !c.OldestPending.IsZero() {
		t.Errorf("alpha = %+v", c)
	}

	one, err := f.svc.Subscription(context.Background(), subA)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range Statuses {
		if one.Counts[st] != want[st] {
			t.Errorf("Subscription count %s = %d, want %d", st, one.Counts[st], want[st])
		}
	}
	if !one.OldestPending.Equal(a.OldestPending) || one.LastError != a.LastError {
		t.Errorf("Subscription = %+v, Subscriptions = %+v", one, a)
	}
	if _, err := f.svc.Subscription(context.Background(), SubKey{Module: "kudos", Name: "none", GuildID: 42}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown subscription: err = %v, want ErrNotFound", err)
	}
}

// TestNotificationsPages walks a subscription's pages newest first with
// ties on the publication time, each row once; filters by status.
func TestNotificationsPages(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	f.subscribe(subB)
	var want []string // newest first: by age, then id descending
	for i := 0; i < 7; i++ {
		want = append(want, f.add(subA, adminRow{age: time.Duration(i/2) * time.Minute, status: StatusAcknowledged}))
	}
	// ids ascend with age ties: within a tie the higher id is first.
	for i := 0; i+1 < len(want); i += 2 {
		want[i], want[i+1] = want[i+1], want[i]
	}
	f.add(subB, adminRow{age: 0, status: StatusPending}) // another subscription's row is never listed
	var got []string
	after := ""
	pages := 0
	for {
		p, err := f.svc.Notifications(context.Background(), subA, NotificationFilter{After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, n := range p.Items {
			got = append(got, n.ID)
			if n.TaskID == "" || n.Revision != 3 || n.SubKey != subA || n.AcknowledgedAt.IsZero() {
				t.Errorf("row = %+v", n)
			}
		}
		if p.Next == "" {
			break
		}
		after = p.Next
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("pages = %d, ids = %v, want %v", pages, got, want)
	}

	f.subscribe(subC)
	pending := f.add(subC, adminRow{age: time.Minute, status: StatusPending})
	stale := f.add(subC, adminRow{age: time.Hour, status: StatusRetry, expired: true})
	marked := f.add(subC, adminRow{age: 2 * time.Hour, status: StatusExpired, expired: true})
	f.add(subC, adminRow{age: 3 * time.Hour, status: StatusAcknowledged, expired: true})
	for _, tc := range []struct {
		status Status
		want   []string
	}{
		{StatusPending, []string{pending}},
		{StatusRetry, nil},
		{StatusExpired, []string{stale, marked}},
	} {
		p, err := f.svc.Notifications(context.Background(), subC, NotificationFilter{Status: tc.status})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, n := range p.Items {
			ids = append(ids, n.ID)
			if n.Status != tc.status {
				t.Errorf("%s filter: row %s status %s", tc.status, n.ID, n.Status)
			}
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("%s filter = %v, want %v", tc.status, ids, tc.want)
		}
	}
}

// TestNotificationsRefusesBadInput: a cursor it did not hand out, an
// unknown status or limit, an unknown subscription.
func TestNotificationsRefusesBadInput(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name string
		k    SubKey
		f    NotificationFilter
		want error
	}{
		{"not base64", subA, NotificationFilter{After: "%%%"}, ErrBadCursor},
		{"no separator", subA, NotificationFilter{After: enc("12345")}, ErrBadCursor},
		{"bad time", subA, NotificationFilter{After: enc("x." + fmt.Sprintf("%032x", 1))}, ErrBadCursor},
		{"negative time", subA, NotificationFilter{After: enc("-1." + fmt.Sprintf("%032x", 1))}, ErrBadCursor},
		{"bad id", subA, NotificationFilter{After: enc("12.' OR 1=1 --")}, ErrBadCursor},
		{"unknown status", subA, NotificationFilter{Status: "lost"}, ErrBadFilter},
		{"limit too large", subA, NotificationFilter{Limit: 201}, ErrBadFilter},
		{"negative limit", subA, NotificationFilter{Limit: -1}, ErrBadFilter},
		{"unknown subscription", subB, NotificationFilter{}, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.svc.Notifications(context.Background(), tc.k, tc.f); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := f.svc.Notifications(context.Background(), subA, NotificationFilter{After: makeCursor(5, fmt.Sprintf("%032x", 9))}); err != nil {
		t.Errorf("a good cursor: %v", err)
	}
}

// watchOnce returns a channel that is closed when the service signals a
// change after the call.
func watchOnce(t *testing.T, s *Service) <-chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := s.Watch(ctx)
	done := make(chan struct{})
	go func() {
		<-ch
		close(done)
	}()
	return done
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no change signalled", what)
	}
}

func drainWake(s *Service) {
	select {
	case <-s.wake:
	default:
	}
}

func wantWake(t *testing.T, s *Service, what string) {
	t.Helper()
	select {
	case <-s.wake:
	default:
		t.Errorf("%s did not wake the dispatcher", what)
	}
}

// TestRetryNow: retry and blocked rows (all, or the given ids) become due
// now with their status kept; pending, acknowledged and expired rows are
// untouched; audited with the count; the dispatcher and /results are
// signalled.
func TestRetryNow(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	f.subscribe(subB)
	retry := f.add(subA, adminRow{status: StatusRetry, retryIn: time.Hour, detail: "x"})
	blocked := f.add(subA, adminRow{status: StatusBlocked, retryIn: time.Minute, detail: DetailAccess})
	pending := f.add(subA, adminRow{status: StatusPending, retryIn: time.Hour})
	stale := f.add(subA, adminRow{status: StatusRetry, retryIn: time.Hour, expired: true})
	other := f.add(subB, adminRow{status: StatusRetry, retryIn: time.Hour})
	now := f.clock().UnixMilli()

	drainWake(f.svc)
	changed := watchOnce(t, f.svc)
	n, err := f.svc.RetryNow(context.Background(), subA, []string{blocked}, admn)
	if err != nil || n != 1 {
		t.Fatalf("RetryNow(one) = %d, %v", n, err)
	}
	waitSignal(t, changed, "retry now")
	wantWake(t, f.svc, "retry now")
	if f.retryMs(blocked) != now || f.retryMs(retry) == now {
		t.Errorf("one id: retry_ms blocked %d retry %d, now %d", f.retryMs(blocked), f.retryMs(retry), now)
	}
	n, err = f.svc.RetryNow(context.Background(), subA, nil, admn)
	if err != nil || n != 2 {
		t.Fatalf("RetryNow(all) = %d, %v", n, err)
	}
	for id, due := range map[string]bool{retry: true, blocked: true, pending: false, stale: false, other: false} {
		if got := f.retryMs(id) == now; got != due {
			t.Errorf("row %s due now = %v, want %v", id, got, due)
		}
	}
	var st Status
	if err := f.st.Reader().QueryRow(`SELECT status FROM kimi_result_notifications WHERE id = ?`, blocked).Scan(&st); err != nil || st != StatusBlocked {
		t.Errorf("status after retry now = %q (%v), want kept", st, err)
	}
	rows := f.auditRows(ActionRetryNow)
	if len(rows) != 2 || rows[0].Target != subA.String() || rows[0].Detail != DetailRetryRequested+": 2 notifications" ||
		rows[1].Detail != DetailRetryRequested+": 1 notification ("+blocked+")" || rows[0].Actor != "admin" || rows[0].IP != "127.0.0.1" {
		t.Errorf("audit = %+v", rows)
	}
	if _, err := f.svc.RetryNow(context.Background(), SubKey{Module: "kudos", Name: "none", GuildID: 1}, nil, admn); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown subscription: %v", err)
	}
	if _, err := f.svc.RetryNow(context.Background(), subA, []string{"not-an-id"}, admn); !errors.Is(err, ErrNotFound) {
		t.Errorf("bad id: %v", err)
	}
	if got := len(f.auditRows(ActionRetryNow)); got != 2 {
		t.Errorf("refused calls wrote audit rows: %d", got)
	}
}

// TestSetPaused: pausing is stored and audited; resuming makes waiting
// rows due now, audited.
func TestSetPaused(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	waiting := f.add(subA, adminRow{status: StatusRetry, retryIn: time.Hour})
	pending := f.add(subA, adminRow{status: StatusPending, retryIn: time.Minute})
	due := f.add(subA, adminRow{status: StatusPending})
	now := f.clock().UnixMilli()
	changed := watchOnce(t, f.svc)
	if err := f.svc.SetPaused(context.Background(), subA, true, admn); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, changed, "pause")
	if s, _ := f.svc.Subscription(context.Background(), subA); !s.Paused {
		t.Error("not paused")
	}
	if f.retryMs(waiting) == now {
		t.Error("pausing made a row due")
	}
	drainWake(f.svc)
	if err := f.svc.SetPaused(context.Background(), subA, false, admn); err != nil {
		t.Fatal(err)
	}
	wantWake(t, f.svc, "resume")
	if s, _ := f.svc.Subscription(context.Background(), subA); s.Paused {
		t.Error("still paused")
	}
	if f.retryMs(waiting) != now || f.retryMs(pending) != now || f.retryMs(due) != 0 {
		t.Errorf("after resume retry_ms = %d, %d, %d; now %d", f.retryMs(waiting), f.retryMs(pending), f.retryMs(due), now)
	}
	if p, r := f.auditRows(ActionPause), f.auditRows(ActionResume); len(p) != 1 || len(r) != 1 ||
		p[0].Detail != DetailPaused || r[0].Detail != "Delivery resumed; 2 waiting notifications made due now" {
		t.Errorf("audit pause %+v resume %+v", p, r)
	}
	if err := f.svc.SetPaused(context.Background(), subB, true, admn); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown subscription: %v", err)
	}
}

// TestSetPausedUnchanged: a resume of a subscription that is not paused
// (a stale page's button) must not make its retrying and blocked rows due
// now, cutting their back-off, nor be audited as a resume that made them
// due; a second pause changes nothing. Both are audited as what they did:
// nothing.
func TestSetPausedUnchanged(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	retry := f.add(subA, adminRow{status: StatusRetry, retryIn: time.Hour, detail: "x"})
	blocked := f.add(subA, adminRow{status: StatusBlocked, retryIn: time.Minute, detail: DetailAccess})
	before := []int64{f.retryMs(retry), f.retryMs(blocked)}
	if err := f.svc.SetPaused(context.Background(), subA, false, admn); err != nil {
		t.Fatal(err)
	}
	if got := []int64{f.retryMs(retry), f.retryMs(blocked)}; !slices.Equal(got, before) {
		t.Errorf("a resume of a running subscription moved retry_ms %v → %v", before, got)
	}
	if r := f.auditRows(ActionResume); len(r) != 1 || r[0].Detail != DetailNotPaused {
		t.Errorf("resume audit = %+v", r)
	}
	for i := 0; i < 2; i++ {
		if err := f.svc.SetPaused(context.Background(), subA, true, admn); err != nil {
			t.Fatal(err)
		}
	}
	p := f.auditRows(ActionPause) // newest first
	if len(p) != 2 || p[0].Detail != DetailAlreadyPaused || p[1].Detail != DetailPaused {
		t.Errorf("pause audit = %+v", p)
	}
	if s, err := f.svc.Subscription(context.Background(), subA); err != nil || !s.Paused {
		t.Errorf("subscription = %+v, %v; want paused", s, err)
	}
	if err := f.svc.SetPaused(context.Background(), subB, false, admn); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown subscription: %v", err)
	}
}

// TestUnsubscribe deletes the subscription and its notifications only,
// audited with the count.
func TestUnsubscribe(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	f.subscribe(subB)
	f.add(subA, adminRow{status: StatusPending, run: "shared"})
	f.add(subA, adminRow{status: StatusAcknowledged})
	f.add(subB, adminRow{status: StatusPending, run: "shared"})
	changed := watchOnce(t, f.svc)
	n, err := f.svc.Unsubscribe(context.Background(), subA, admn)
	if err != nil || n != 2 {
		t.Fatalf("Unsubscribe = %d, %v", n, err)
	}
	waitSignal(t, changed, "unsubscribe")
	if _, err := f.svc.Subscription(context.Background(), subA); !errors.Is(err, ErrNotFound) {
		t.Errorf("subscription after unsubscribe: %v", err)
	}
	if f.notificationCount(subA) != 0 || f.notificationCount(subB) != 1 {
		t.Errorf("rows left: %d, other %d", f.notificationCount(subA), f.notificationCount(subB))
	}
	if rows := f.auditRows(ActionUnsubscribe); len(rows) != 1 || rows[0].Detail != "Deleted the subscription and 2 notifications" || rows[0].Target != "kudos/digest/42" {
		t.Errorf("audit = %+v", rows)
	}
	if _, err := f.svc.Unsubscribe(context.Background(), subA, admn); !errors.Is(err, ErrNotFound) {
		t.Errorf("again: %v", err)
	}
}

// TestPurgeExpired deletes rows marked expired and open rows past their
// expiry; acknowledged and live rows stay.
func TestPurgeExpired(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	f.add(subA, adminRow{status: StatusExpired, expired: true})
	f.add(subA, adminRow{status: StatusBlocked, expired: true})
	f.add(subA, adminRow{status: StatusAcknowledged, expired: true})
	f.add(subA, adminRow{status: StatusPending})
	n, err := f.svc.PurgeExpired(context.Background(), subA, admn)
	if err != nil || n != 2 {
		t.Fatalf("PurgeExpired = %d, %v", n, err)
	}
	s, err := f.svc.Subscription(context.Background(), subA)
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts[StatusExpired] != 0 || s.Counts[StatusAcknowledged] != 1 || s.Counts[StatusPending] != 1 {
		t.Errorf("counts after purge = %v", s.Counts)
	}
	if rows := f.auditRows(ActionPurgeExpired); len(rows) != 1 || rows[0].Detail != "Purged 2 expired notifications" {
		t.Errorf("audit = %+v", rows)
	}
	if _, err := f.svc.PurgeExpired(context.Background(), subB, admn); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown subscription: %v", err)
	}
}

// TestNotificationsUntil: a page says until when it reads the same without
// a write — the earliest expiry of its subscription's unexpired open rows
// (of any status filter, on any page: one passing it moves to expired) —
// and, read again at that time, it does read otherwise.
func TestNotificationsUntil(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	f.subscribe(subB)
	now := f.clock().UnixMilli()
	day := (24 * time.Hour).Milliseconds()
	setExp := func(id string, exp int64) {
		f.exec(`UPDATE kimi_result_notifications SET expires_ms = ? WHERE id = ?`, exp, id)
	}
	ack := f.add(subA, adminRow{age: time.Minute, status: StatusAcknowledged})
	setExp(ack, now+1000)                                                     // acknowledged: it never turns expired
	f.add(subA, adminRow{age: time.Hour, status: StatusRetry, expired: true}) // already past: no future change
	f.add(subB, adminRow{age: time.Hour, status: StatusPending})              // another subscription's
	until := func(st Status) time.Time {
		t.Helper()
		p, err := f.svc.Notifications(context.Background(), subA, NotificationFilter{Status: st})
		if err != nil {
			t.Fatal(err)
		}
		return p.Until
	}
	for _, st := range []Status{"", StatusAcknowledged, StatusExpired} {
		if got := until(st); !got.IsZero() {
			t.Errorf("%q filter, no open row ahead of its expiry: until %v, want zero", st, got)
		}
	}
	blocked := f.add(subA, adminRow{age: 2 * time.Hour, status: StatusBlocked})
	setExp(blocked, now+3*day)
	pending := f.add(subA, adminRow{age: 3 * time.Hour, status: StatusPending})
	setExp(pending, now+2*day)
	for _, st := range []Status{"", StatusPending, StatusBlocked, StatusAcknowledged, StatusExpired} {
		if got, want := until(st), time.UnixMilli(now+2*day); !got.Equal(want) {
			t.Errorf("%q filter: until %v, want %v (the pending row's expiry)", st, got, want)
		}
	}
	f.mu.Lock()
	f.now = time.UnixMilli(now + 2*day)
	f.mu.Unlock()
	p, err := f.svc.Notifications(context.Background(), subA, NotificationFilter{Status: StatusExpired})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Items, func(n Notification) bool { return n.ID == pending }) {
		t.Errorf("at its until, the expired page lacks the pending row that expired then: %+v", p.Items)
	}
	if got, want := p.Until, time.UnixMilli(now+3*day); !got.Equal(want) {
		t.Errorf("until %v, want %v (the blocked row's expiry)", got, want)
	}
}
