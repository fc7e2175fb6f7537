// Package results is the scheduled-results outbox (reference
// kimi-agent-host.md §2.15, §5.2; SDK 2.4): modules subscribe, by a
// declared name and a guild, to the output of scheduled tasks once it is
// confirmed published in Discord; the producer (the scheduled tasks)
// enqueues one notification per matching subscription inside the
// transaction that records its run's last required post as sent; a
// dispatcher hands each notification to the subscriber's handler, at
// least once, with the notification id as the idempotency key.
//
// Delivery follows the original: a claim leases a row (60 s) under a fresh
// token, at most four run at once, a handler gets 30 s and a cancel grace,
// a failure retries after min(3600, 30·2^min(attempts−1, 7)) s, an access
// failure blocks the row for 60 s, and a handler that ignores cancellation
// quarantines its module. Unlike the original it does not poll every 2 s:
// an enqueue wakes the dispatcher at once and one timer covers the next
// retry, lease expiry or expiry; claims and settles are batched in one
// write transaction when several rows are ready, and a step claims up to
// eight times as many rows as there are handler slots: the extra claims
// wait in memory (their leases renewed by later steps, released at
// Close) and start as slots free up, without a transaction.
//
// Files: results.go (this contract), store.go (enqueue, SQL), dispatch.go
// (the dispatcher's state, loop and Close), step.go (one step's write
// transaction: prune, settle, renew, claim), claims.go (the claim and
// settle statements), deliver.go (launching claims, the handler call and
// its checks), port.go (the module port and handler registry),
// files.go (the attachment reader), health.go, admin.go (what /results
// reads and does), access.go (the Discord-side access check).
package results

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/kimiapp/kimi/app/internal/signal"
	"github.com/kimiapp/kimi/app/internal/wake"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Delivery bounds (reference §5.2).
const (
	// Lease is how long a claimed notification is leased.
	Lease = 60 * time.Second
	// MaxInFlight bounds the handlers running at once.
	MaxInFlight = 4
	// HandlerTimeout bounds one handler invocation (sdk.ResultHandlerTimeout).
	HandlerTimeout = sdk.ResultHandlerTimeout
	// CancelGrace is how long a cancelled handler is waited for before its
	// module is quarantined.
	CancelGrace = 5 * time.Second
	// BlockedRetry is when a blocked notification is checked again.
	BlockedRetry = 60 * time.Second
	// MaxRetryDelay caps the retry back-off.
	MaxRetryDelay = time.Hour
	// Retention is how long a notification lives after publication
	// (sdk.ResultRetention); expired rows are kept for the operator until
	// purged, at most another Retention.
	Retention = sdk.ResultRetention
	// DetailMax bounds a notification's detail (characters).
	DetailMax = 300
)

// The original's details (reference §5.2), exact.
const (
	DetailQuarantined       = "Subscriber still running after cancellation"
	DetailUnavailable       = "Subscriber unavailable or permission removed"
	DetailInactive          = "Subscriber inactive in this guild"
	DetailLeaseLost         = "Notification deleted, expired, or lease lost"
	DetailAccess            = "Task owner or destination access unavailable"
	DetailTimeout           = "Subscriber timed out or cancelled"
	DetailIgnoredCancel     = "Subscriber ignored cancellation; processing paused"
	DetailRaisedPrefix      = "Subscriber raised " // + the error's type, e.g. "*errors.errorString"
	DetailEmbedTooLarge     = "Published embed exceeds the 32 KiB snapshot limit"
	MessageFilesClosed      = "Result files are closed or the read budget is used"
	MessageFileUnavailable  = "Published attachment unavailable or larger than the read limit"
	DetailPaused            = "Delivery paused by the operator"
	DetailRetryRequested    = "Retry requested by the operator"
	DetailAlreadyPaused     = "Delivery was already paused; nothing changed"
	DetailNotPaused         = "Delivery was not paused; nothing changed"
	HealthSource            = "scheduled_results" // the health constraint's source
	HealthMetricPrefix      = "results_"          // + status: results_pending, …
	HealthDegradedDetailFmt = "Scheduled results: %d blocked, %d retrying"
)

// Audit actions of /results.
const (
	ActionRetryNow     = "results.retry_now"
	ActionPause        = "results.pause"
	ActionResume       = "results.resume"
	ActionUnsubscribe  = "results.unsubscribe"
	ActionPurgeExpired = "results.purge_expired"
)

// Status is a notification's state.
type Status string

// Notification states. Expired is set by the dispatcher's prune on a row
// past its expiry that was never acknowledged.
const (
	StatusPending      Status = "pending"
	StatusDelivering   Status = "delivering"
	StatusRetry        Status = "retry"
	StatusBlocked      Status = "blocked"
	StatusAcknowledged Status = "acknowledged"
	StatusExpired      Status = "expired"
)

// Statuses lists every status in display order.
var Statuses = []Status{StatusPending, StatusDelivering, StatusRetry, StatusBlocked, StatusAcknowledged, StatusExpired}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// ErrNotFound reports a subscription or notification that does not exist.
var ErrNotFound = errors.New("results: not found")

// ErrClosed is returned by calls on a closed service.
var ErrClosed = errors.New("results: closed")

// Publication is one completed run's confirmed output, as the producer
// hands it to Enqueue.
type Publication struct {
	RunID, TaskID string // 1–64 characters each
	Revision      int
	GuildID       uint64 // > 0
	OwnerID       uint64 // > 0
	// OriginChannelID is where the task was defined (0: none); the access
	// check re-reads it with every message's channel.
	OriginChannelID uint64
	// PublishedAt is when the last required post was recorded sent.
	PublishedAt time.Time
	// Outcome must be sdk.ResultCompleted: any other enqueues nothing.
	Outcome sdk.ResultOutcome
	// Messages are the run's sent non-log posts in order, each with its
	// message id (a message without one enqueues nothing); EmbedJSON over
	// sdk.MaxResultEmbedJSONBytes is stored omitted with
	// DetailEmbedTooLarge as its reason.
	Messages []sdk.ScheduledResultMessage
}

// Producer is the source of publications (the scheduled tasks): what the
// dispatcher asks it before and after every handler call and file read.
type Producer interface {
	// CheckAccess returns nil while the publication may still be handed
	// to subscribers: the task's policy in its guild, the owner's current
	// membership, block status and tier, and the visibility of the origin
	// and every output channel. Any error blocks the notification
	// (DetailAccess).
	CheckAccess(ctx context.Context, p Publication) error
	// ReadFile returns an attachment of the run if it belongs to the run,
	// was sent with a non-log post and is at most limit bytes; otherwise
	// an error (the reader answers MessageFileUnavailable).
	ReadFile(ctx context.Context, runID, attachmentID string, limit int64) ([]byte, error)
}

// Options configures New.
type Options struct {
	Store  *store.Store
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Producer answers access checks and file reads (nil until the
	// scheduled tasks are wired: every notification is then blocked with
	// DetailAccess). SetProducer may set it before Start.
	Producer Producer
	// Bounds; zero values take the constants above. Tests shorten them.
	Lease, HandlerTimeout, CancelGrace, BlockedRetry time.Duration
	MaxInFlight                                      int
}

// Service is the outbox, its dispatcher and the subscriptions' registry.
// Create it with New, Bind each module instance, Start it, Close it before
// the store closes.
type Service struct {
	opts  Options
	st    *store.Store
	log   *slog.Logger
	now   func() time.Time
	watch signal.Watchers // /results' live regions

	wake wake.Signal // an enqueue, a subscription or a completion
	// The dispatcher's and the registry's state live in dispatch.go and
	// port.go.
	state
}

// New returns a stopped service; it runs the migrations' tables as they
// are (the store migrated them).
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("results: a store is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Lease <= 0 {
		opts.Lease = Lease
	}
	if opts.HandlerTimeout <= 0 {
		opts.HandlerTimeout = HandlerTimeout
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = CancelGrace
	}
	if opts.BlockedRetry <= 0 {
		opts.BlockedRetry = BlockedRetry
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = MaxInFlight
	}
	s := &Service{opts: opts, st: opts.Store, log: opts.Logger, now: opts.Now, wake: wake.NewSignal()}
	s.initState()
	return s, nil
}

// signal wakes the dispatcher (never blocks).
func (s *Service) signal() { s.wake.Notify() }

// Watch returns a channel that receives (coalesced) after every change
// /results shows: an enqueue, a claim, a counted attempt, a lease renewal,
// a settle, an expiry, a subscription or an operator action. It closes when ctx ends or the service closes.
func (s *Service) Watch(ctx context.Context) <-chan struct{} { return s.watch.Watch(ctx) }

// Hooks is what a bound module instance gives the service (the host).
type Hooks struct {
	// Declared are the module's declared subscription names.
	Declared []string
	// Running reports whether the instance is still running (its view is
	// open); false blocks with DetailUnavailable.
	Running func() bool
	// GuildActive is the module's predicate for a guild (guild active and
	// the module enabled there); false blocks with DetailInactive.
	GuildActive func(guildID uint64) bool
	// Health reports the module's scheduled_results constraint (state and
	// detail, healthy "" clears it) and its results_<status> metrics.
	Health func(state sdk.HealthState, detail string, metrics map[string]float64)
}

// Bind returns a module instance's port (sdk.ScheduledResults). The host
// binds at start and closes the binding when the instance closes: its
// handlers are unregistered, its subscription rows stay.
func (s *Service) Bind(module string, hooks Hooks) *Binding { return s.bind(module, hooks) }

// SubKey names a subscription.
type SubKey struct {
	Module, Name string
	GuildID      uint64
}

// Counts are a subscription's notifications by status (non-expired rows
// by their status; expired ones under Expired).
type Counts map[Status]int

// Subscription is one subscription as /results shows it.
type Subscription struct {
	SubKey
	CreatedAt time.Time
	Paused    bool
	// Registered says a running instance has a handler for it now.
	Registered bool
	// Quarantined says its module's handler ignored cancellation.
	Quarantined bool
	Counts      Counts
	// OldestPending is the publication time of the oldest notification
	// not yet acknowledged or expired (zero: none).
	OldestPending time.Time
	// LastError is the newest detail of a retry or blocked row, with when
	// it was recorded ("" / zero: none).
	LastError   string
	LastErrorAt time.Time
}

// Notification is one row as /results shows it.
type Notification struct {
	ID            string
	SubKey        SubKey
	RunID, TaskID string
	Revision      int
	Status        Status
	Attempts      int
	Detail        string
	// RetryAt is the next attempt (zero: due now or never).
	RetryAt        time.Time
	LeaseUntil     time.Time
	PublishedAt    time.Time
	ExpiresAt      time.Time
	AcknowledgedAt time.Time
}

// NotificationFilter selects a subscription's notifications: Status ""
// is every status; After is the previous page's Next cursor.
type NotificationFilter struct {
	Status Status
	After  string
	Limit  int // 1..200 (0: 50)
}

// NotificationPage is one page, newest publication first.
type NotificationPage struct {
	Items []Notification
	// Next is the cursor of the following page ("" on the last).
	Next string
	// Until is when the page may first read otherwise without a write:
	// the earliest expiry of the subscription's unexpired open rows (one
	// passing it shows, and filters, as expired). Zero: never.
	Until time.Time
}

// Actor is who did an operator action (for the audit row).
type Actor struct {
	Admin string // the admin's username
	IP    string
}

// auditTx records an operator action inside its transaction.
func auditTx(ctx context.Context, tx *sql.Tx, a Actor, action string, k SubKey, detail string) error {
	return store.AuditTx(ctx, tx, store.AuditEntry{Actor: a.Admin, Action: action, Target: k.String(), Detail: detail, IP: a.IP})
}
