package results

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Binding is a module instance's sdk.ScheduledResults: Subscribe writes
// the subscription row (kept across restarts) and registers the handler;
// Unsubscribe deletes the row and its notifications. Close unregisters
// the instance's handlers; later calls fail with the closed error.
type Binding struct {
	s      *Service
	module string
	hooks  Hooks
	closed bool // guarded by s.mu
}

var _ sdk.ScheduledResults = (*Binding)(nil)

// registration is one registered handler: the binding that subscribed it.
type registration struct {
	b *Binding
	h sdk.ScheduledResultHandler
}

func (s *Service) bind(module string, hooks Hooks) *Binding {
	b := &Binding{s: s, module: module, hooks: hooks}
	s.mu.Lock()
	s.latest[module] = b
	s.mu.Unlock()
	return b
}

// closed reports whether the binding was closed; s.mu held.
func (b *Binding) closedLocked() bool { return b.closed }

// running reports whether the instance still runs.
func (b *Binding) running() bool { return b.hooks.Running == nil || b.hooks.Running() }

// guildActive is the module's predicate for a guild.
func (b *Binding) guildActive(guildID uint64) bool {
	return b.hooks.GuildActive == nil || b.hooks.GuildActive(guildID)
}

func (b *Binding) declared(name string) bool { return slices.Contains(b.hooks.Declared, name) }

// admit validates a (name, guild) and the binding's state.
func (b *Binding) admit(name string, guildID uint64) (SubKey, error) {
	if err := hostkit.ValidateResultSubscription(name, guildID); err != nil {
		return SubKey{}, err
	}
	if b.s.isClosed() {
		return SubKey{}, ErrClosed
	}
	b.s.mu.Lock()
	closed := b.closedLocked()
	b.s.mu.Unlock()
	if closed || !b.declared(name) {
		return SubKey{}, hostkit.NewResultSubscriptionClosed()
	}
	if guildID > 1<<63-1 {
		// SQLite integers are signed; no Discord snowflake reaches this.
		return SubKey{}, &sdk.ModuleContractError{Message: "scheduled-result guild ID is out of range"}
	}
	return SubKey{Module: b.module, Name: name, GuildID: guildID}, nil
}

// Subscribe validates (hostkit.ValidateResultSubscription, then the
// declaration: "Scheduled-result subscription is closed or undeclared"),
// writes the subscription if new (no history is replayed: only later
// publications notify it) and registers handler for this instance,
// replacing a previous handler of the same subscription. Rows of the
// subscription blocked because no handler was registered become due now.
func (b *Binding) Subscribe(ctx context.Context, name string, guildID uint64, handler sdk.ScheduledResultHandler) error {
	k, err := b.admit(name, guildID)
	if err != nil {
		return err
	}
	if handler == nil {
		return &sdk.ModuleContractError{Message: "scheduled-result handler for " + hostkit.Repr(name) + " is nil"}
	}
	nowMs := b.s.now().UnixMilli()
	err = b.s.st.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES (?, ?, ?, ?)`,
			k.Module, k.Name, int64(k.GuildID), nowMs); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET retry_ms = ?
			WHERE module = ? AND name = ? AND guild_id = ? AND status = 'blocked' AND detail = ? AND retry_ms > ?6 AND lease_until_ms <= ?6`,
			nowMs, k.Module, k.Name, int64(k.GuildID), DetailUnavailable, nowMs)
		return err
	})
	if err != nil {
		return fmt.Errorf("results: subscribe %s: %w", k, err)
	}
	b.s.mu.Lock()
	if b.closedLocked() {
		b.s.mu.Unlock()
		return hostkit.NewResultSubscriptionClosed()
	}
	b.s.handlers[k] = &registration{b: b, h: handler}
	b.s.latest[b.module] = b
	b.s.mu.Unlock()
	b.s.reportHealth(ctx, b.module)
	b.s.changed()
	return nil
}

// Unsubscribe validates as Subscribe, deletes the subscription and its
// notifications and unregisters the handler.
func (b *Binding) Unsubscribe(ctx context.Context, name string, guildID uint64) error {
	k, err := b.admit(name, guildID)
	if err != nil {
		return err
	}
	if _, err := b.s.deleteSubscription(ctx, k, nil); err != nil {
		return err
	}
	b.s.reportHealth(ctx, b.module)
	return nil
}

// deleteSubscription deletes k and its notifications (by cascade), runs
// extra in the same transaction (the admin's audit; existed says the
// subscription was there) and unregisters k's handler; it returns how many
// notifications went.
func (s *Service) deleteSubscription(ctx context.Context, k SubKey, extra func(tx *sql.Tx, deleted int, existed bool) error) (int, error) {
	var deleted int
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kimi_result_notifications WHERE module = ? AND name = ? AND guild_id = ?`,
			k.Module, k.Name, int64(k.GuildID)).Scan(&deleted); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_result_subscriptions WHERE module = ? AND name = ? AND guild_id = ?`,
			k.Module, k.Name, int64(k.GuildID))
		if err != nil {
			return err
		}
		existed, err := res.RowsAffected()
		if err != nil {
			return err
		}
		// The run of an expired publication whose last notifications went
		// with the subscription is not kept for nobody.
		if err := deleteSpentPublicationsTx(ctx, tx, k.GuildID, s.now().UnixMilli()); err != nil {
			return err
		}
		if extra != nil {
			return extra(tx, deleted, existed > 0)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("results: unsubscribe %s: %w", k, err)
	}
	s.unregister(k)
	s.changed(k.Module)
	return deleted, nil
}

// unregister forgets k's handler (whichever instance registered it).
func (s *Service) unregister(k SubKey) {
	s.mu.Lock()
	delete(s.handlers, k)
	s.mu.Unlock()
}

// registered reports whether a running instance has a handler for k.
func (s *Service) registered(k SubKey) bool {
	s.mu.Lock()
	r := s.handlers[k]
	s.mu.Unlock()
	return r != nil && r.b.running()
}

// handler returns k's registration, nil when none.
func (s *Service) handler(k SubKey) *registration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handlers[k]
}

// Close unregisters the instance's handlers (its rows stay, blocked until
// the module returns, unsubscribes or they expire).
func (b *Binding) Close() {
	b.s.mu.Lock()
	b.closed = true
	for k, r := range b.s.handlers {
		if r.b == b {
			delete(b.s.handlers, k)
		}
	}
	b.s.mu.Unlock()
	b.s.watch.Notify()
}
