package sdktest

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// FakeScheduledResultFiles is the invocation-scoped attachment reader a
// FakeScheduledResults hands a handler, with the host's limits: each read
// within 1 byte..8 MiB (hostkit.ValidateResultReadLimit), a 16 MiB budget per
// invocation charged again by repeated reads, only the result's own
// attachments, and nothing once closed (when the handler returns) or once
// the subscription is no longer available.
type FakeScheduledResultFiles struct {
	mu        sync.Mutex
	files     map[string][]byte
	available func() bool
	open      bool
	remaining int64
}

var _ sdk.ScheduledResultFiles = (*FakeScheduledResultFiles)(nil)

// NewFakeScheduledResultFiles returns an open reader over files; available,
// when non-nil, is re-checked on every read (the host re-checks access).
func NewFakeScheduledResultFiles(files map[string][]byte, available func() bool) *FakeScheduledResultFiles {
	if available == nil {
		available = func() bool { return true }
	}
	return &FakeScheduledResultFiles{files: files, available: available, open: true, remaining: sdk.MaxResultTotalFileBytes}
}

// Read returns an attachment's bytes. An invalid limit fails with "attachment
// read limit must be between 1 byte and 8 MiB"; anything else that stops
// the read (closed, unavailable, budget used, unknown id, larger than the
// limit or the remaining budget) fails with "Result file unavailable or
// read limit exceeded". Both are *sdk.ScheduledResultAccessError.
func (r *FakeScheduledResultFiles) Read(ctx context.Context, attachmentID string, maxBytes int64) ([]byte, error) {
	if err := hostkit.ValidateResultReadLimit(maxBytes); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	data, ok := r.files[attachmentID]
	if !r.open || !r.available() || r.remaining <= 0 || !ok || int64(len(data)) > min(maxBytes, r.remaining) {
		return nil, hostkit.NewScheduledResultAccessError("Result file unavailable or read limit exceeded")
	}
	r.remaining -= int64(len(data))
	return bytes.Clone(data), nil
}

// Close ends the invocation; later reads fail.
func (r *FakeScheduledResultFiles) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open = false
}

// Remaining returns the unused read budget in bytes.
func (r *FakeScheduledResultFiles) Remaining() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.remaining
}

// ResultSubscription identifies a scheduled-result subscription.
type ResultSubscription struct {
	Name    string
	GuildID uint64
}

// FakeScheduledResults is an sdk.ScheduledResults driven explicitly by the
// test with Deliver: a handler that returns nil acknowledges the
// notification id, and later deliveries of an acknowledged id are skipped;
// a handler error propagates and the same result can be delivered again.
// Undeclared names are refused, and so is delivery to a guild without a
// subscription or that is inactive. Supply the original result again to
// model a restart or a duplicate attempt. There is no background runner,
// Discord or persistence.
type FakeScheduledResults struct {
	declared []string
	active   func(uint64) bool

	mu           sync.Mutex
	handlers     map[ResultSubscription]*sdk.ScheduledResultHandler
	acknowledged map[string]bool
	attempts     []string
}

var _ sdk.ScheduledResults = (*FakeScheduledResults)(nil)

// NewFakeScheduledResults returns a port allowing the declared names, with
// guilds active per isGuildActive (nil: every guild is active).
func NewFakeScheduledResults(declared []string, isGuildActive func(guildID uint64) bool) *FakeScheduledResults {
	if isGuildActive == nil {
		isGuildActive = func(uint64) bool { return true }
	}
	return &FakeScheduledResults{
		declared:     slices.Clone(declared),
		active:       isGuildActive,
		handlers:     map[ResultSubscription]*sdk.ScheduledResultHandler{},
		acknowledged: map[string]bool{},
	}
}

func (f *FakeScheduledResults) validate(name string, guildID uint64) error {
	if err := hostkit.ValidateResultSubscription(name, guildID); err != nil {
		return err
	}
	if !slices.Contains(f.declared, name) {
		return hostkit.NewScheduledResultAccessError("Undeclared scheduled-result subscription")
	}
	return nil
}

// Subscribe registers (or replaces) the handler for a declared name in a
// guild.
func (f *FakeScheduledResults) Subscribe(ctx context.Context, name string, guildID uint64, handler sdk.ScheduledResultHandler) error {
	if err := f.validate(name, guildID); err != nil {
		return err
	}
	if handler == nil {
		return &sdk.ModuleContractError{Message: "scheduled-result handler for " + hostkit.Repr(name) + " is nil"}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[ResultSubscription{name, guildID}] = &handler
	return nil
}

// Unsubscribe forgets the subscription.
func (f *FakeScheduledResults) Unsubscribe(ctx context.Context, name string, guildID uint64) error {
	if err := f.validate(name, guildID); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.handlers, ResultSubscription{name, guildID})
	return nil
}

// DeliverOptions qualify one Deliver.
type DeliverOptions struct {
	// Files are attachment bytes by id; only ids among the result's
	// messages' attachments are readable.
	Files map[string][]byte
	// Preview models a task preview, which never notifies subscribers.
	Preview bool
}

// Deliver invokes the subscriber of result's subscription and guild once.
// A preview or an already acknowledged id returns nil without a call. A
// missing subscriber or an inactive guild fails with "Subscriber
// unavailable in this guild" (*sdk.ScheduledResultAccessError). The
// handler's error is returned unchanged (a panic becomes an error) and
// leaves the id unacknowledged; nil acknowledges it. The reader is closed
// when the handler returns.
func (f *FakeScheduledResults) Deliver(ctx context.Context, result sdk.ScheduledResult, opts DeliverOptions) error {
	if opts.Preview {
		return nil
	}
	key := ResultSubscription{result.Subscription, result.GuildID}
	f.mu.Lock()
	if f.acknowledged[result.NotificationID] {
		f.mu.Unlock()
		return nil
	}
	handler := f.handlers[key]
	f.mu.Unlock()
	if handler == nil || !f.active(result.GuildID) {
		return hostkit.NewScheduledResultAccessError("Subscriber unavailable in this guild")
	}
	visible := map[string][]byte{}
	for _, id := range result.AttachmentIDs() {
		if data, ok := opts.Files[id]; ok {
			visible[id] = data
		}
	}
	reader := NewFakeScheduledResultFiles(visible, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.active(result.GuildID) && slices.Contains(f.declared, result.Subscription) && f.handlers[key] == handler
	})
	defer reader.Close()
	f.mu.Lock()
	f.attempts = append(f.attempts, result.NotificationID)
	f.mu.Unlock()
	// Each invocation gets its own copy: a handler cannot alter a retry.
	if err := recovering(func() error { return (*handler)(ctx, result.Clone(), reader) }); err != nil {
		return err
	}
	f.mu.Lock()
	f.acknowledged[result.NotificationID] = true
	f.mu.Unlock()
	return nil
}

// Subscriptions returns the live subscriptions, sorted by name and guild.
func (f *FakeScheduledResults) Subscriptions() []ResultSubscription {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Collect(maps.Keys(f.handlers))
	slices.SortFunc(out, func(a, b ResultSubscription) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.GuildID, b.GuildID))
	})
	return out
}

// Acknowledged reports whether a notification id was acknowledged.
func (f *FakeScheduledResults) Acknowledged(notificationID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acknowledged[notificationID]
}

// AcknowledgedIDs returns the acknowledged ids, sorted.
func (f *FakeScheduledResults) AcknowledgedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.acknowledged))
}

// ForgetAcknowledgements clears every acknowledgement, modelling a host
// that lost its ACKs (after a crash) and delivers again.
func (f *FakeScheduledResults) ForgetAcknowledgements() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.acknowledged)
}

// Attempts returns the notification id of every handler invocation, oldest
// first.
func (f *FakeScheduledResults) Attempts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.attempts)
}
