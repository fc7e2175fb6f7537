package results

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrBadCursor reports a NotificationFilter.After that is not a cursor
// this service handed out (the admin answers 400).
var ErrBadCursor = errors.New("results: bad page cursor")

// ErrBadFilter reports a NotificationFilter with an unknown status or a
// limit out of range.
var ErrBadFilter = errors.New("results: bad notification filter")

// Bounds of a notifications page.
const (
	defaultPageLimit = 50
	maxPageLimit     = 200
)

// notificationIDRE is a notification id: 32 lowercase hex.
var notificationIDRE = regexp.MustCompile(`\A[0-9a-f]{32}\z`)

// openStatuses are the states a notification waits in before it is
// acknowledged or expires.
var openStatuses = []Status{StatusPending, StatusDelivering, StatusRetry, StatusBlocked}

// TODO(core): the registry lives in port.go; these stubs stand in until it
// lands there (then delete them here).

// registered reports whether a running instance has a handler for k.
func (s *Service) registered(k SubKey) bool { return false }

// quarantined reports whether module's handler ignored cancellation and
// is still running.
func (s *Service) quarantined(module string) bool { return false }

// dropHandler unregisters a live handler of k (an operator's unsubscribe).
func (s *Service) dropHandler(k SubKey) {}

// Subscriptions returns every subscription with its counts, ordered by
// module, name and guild. Fast with 100k notifications (the admin's p99
// budget is 20 ms): counts come from the covering index.
func (s *Service) Subscriptions(ctx context.Context) ([]Subscription, error) {
	rows, err := s.st.Reader().QueryContext(ctx,
		`SELECT module, name, guild_id, created_ms, paused FROM kimi_result_subscriptions ORDER BY module, name, guild_id`)
	if err != nil {
		return nil, fmt.Errorf("results: list subscriptions: %w", err)
	}
	var subs []Subscription
	index := map[SubKey]int{}
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		index[sub.SubKey] = len(subs)
		subs = append(subs, sub)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("results: list subscriptions: %w", err)
	}
	now := s.now().UnixMilli()
	// One pass over the covering index (module, name, guild_id, status,
	// expires_ms) for every count.
	crows, err := s.st.Reader().QueryContext(ctx,
		`SELECT module, name, guild_id, status, COUNT(*), COALESCE(SUM(expires_ms <= ?), 0)
		   FROM kimi_result_notifications GROUP BY module, name, guild_id, status`, now)
	if err != nil {
		return nil, fmt.Errorf("results: count notifications: %w", err)
	}
	for crows.Next() {
		var k SubKey
		var st Status
		var n, past int
		if err := crows.Scan(&k.Module, &k.Name, &k.GuildID, &st, &n, &past); err != nil {
			crows.Close()
			return nil, fmt.Errorf("results: count notifications: %w", err)
		}
		if i, ok := index[k]; ok {
			addCount(subs[i].Counts, st, n, past)
		}
	}
	if err := closeRows(crows); err != nil {
		return nil, fmt.Errorf("results: count notifications: %w", err)
	}
	for i := range subs {
		if err := s.fillOpen(ctx, &subs[i], now); err != nil {
			return nil, err
		}
	}
	return subs, nil
}

// Subscription returns one subscription (ErrNotFound when none).
func (s *Service) Subscription(ctx context.Context, k SubKey) (Subscription, error) {
	sub, err := scanSubscription(s.st.Reader().QueryRowContext(ctx,
		`SELECT module, name, guild_id, created_ms, paused FROM kimi_result_subscriptions
		  WHERE module = ? AND name = ? AND guild_id = ?`, k.Module, k.Name, int64(k.GuildID)))
	if err != nil {
		return Subscription{}, err
	}
	now := s.now().UnixMilli()
	rows, err := s.st.Reader().QueryContext(ctx,
		`SELECT status, COUNT(*), COALESCE(SUM(expires_ms <= ?), 0) FROM kimi_result_notifications
		  WHERE module = ? AND name = ? AND guild_id = ? GROUP BY status`, now, k.Module, k.Name, int64(k.GuildID))
	if err != nil {
		return Subscription{}, fmt.Errorf("results: count notifications: %w", err)
	}
	for rows.Next() {
		var st Status
		var n, past int
		if err := rows.Scan(&st, &n, &past); err != nil {
			rows.Close()
			return Subscription{}, fmt.Errorf("results: count notifications: %w", err)
		}
		addCount(sub.Counts, st, n, past)
	}
	if err := closeRows(rows); err != nil {
		return Subscription{}, fmt.Errorf("results: count notifications: %w", err)
	}
	if err := s.fillOpen(ctx, &sub, now); err != nil {
		return Subscription{}, err
	}
	return sub, nil
}

type rowScanner interface{ Scan(dest ...any) error }

// scanSubscription reads a subscription row (module, name, guild_id,
// created_ms, paused) and the registry's state of it.
func scanSubscription(r rowScanner) (Subscription, error) {
	var sub Subscription
	var created int64
	var paused int
	if err := r.Scan(&sub.Module, &sub.Name, &sub.GuildID, &created, &paused); errors.Is(err, sql.ErrNoRows) {
		return Subscription{}, ErrNotFound
	} else if err != nil {
		return Subscription{}, fmt.Errorf("results: read subscription: %w", err)
	}
	sub.CreatedAt, sub.Paused, sub.Counts = time.UnixMilli(created), paused != 0, Counts{}
	return sub, nil
}

// addCount adds n rows of status st, past of them past their expiry: an
// open row past expiry counts as expired (the prune has not marked it
// yet); an acknowledged one stays acknowledged until the prune deletes it.
func addCount(c Counts, st Status, n, past int) {
	switch st {
	case StatusAcknowledged, StatusExpired:
		c[st] += n
	default:
		c[st] += n - past
		c[StatusExpired] += past
	}
}

// fillOpen sets the registry's flags, the oldest open notification and
// the last error of sub. Open rows are few next to acknowledged ones: the
// index narrows each read to them.
func (s *Service) fillOpen(ctx context.Context, sub *Subscription, now int64) error {
	sub.Registered, sub.Quarantined = s.registered(sub.SubKey), s.quarantined(sub.Module)
	open := 0
	for _, st := range openStatuses {
		open += sub.Counts[st]
	}
	if open == 0 {
		return nil
	}
	k := sub.SubKey
	var oldest sql.NullInt64
	if err := s.st.Reader().QueryRowContext(ctx,
		`SELECT MIN(published_ms) FROM kimi_result_notifications
		  WHERE module = ? AND name = ? AND guild_id = ? AND status IN ('pending', 'delivering', 'retry', 'blocked') AND expires_ms > ?`,
		k.Module, k.Name, int64(k.GuildID), now).Scan(&oldest); err != nil {
		return fmt.Errorf("results: oldest pending: %w", err)
	}
	if oldest.Valid {
		sub.OldestPending = time.UnixMilli(oldest.Int64)
	}
	if sub.Counts[StatusRetry]+sub.Counts[StatusBlocked] == 0 {
		return nil
	}
	var detail string
	var at int64
	err := s.st.Reader().QueryRowContext(ctx,
		`SELECT detail, detail_ms FROM kimi_result_notifications
		  WHERE module = ? AND name = ? AND guild_id = ? AND status IN ('retry', 'blocked') AND expires_ms > ? AND detail <> ''
		  ORDER BY detail_ms DESC, id DESC LIMIT 1`,
		k.Module, k.Name, int64(k.GuildID), now).Scan(&detail, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("results: last error: %w", err)
	default:
		sub.LastError = detail
		if at > 0 {
			sub.LastErrorAt = time.UnixMilli(at)
		}
	}
	return nil
}

// Notifications returns a page of a subscription's notifications, newest
// publication first (keyset pagination on published time and id). An
// unknown subscription is ErrNotFound, a cursor it did not hand out
// ErrBadCursor, an unknown status or a limit out of range ErrBadFilter.
func (s *Service) Notifications(ctx context.Context, k SubKey, f NotificationFilter) (NotificationPage, error) {
	if f.Status != "" && !f.Status.Valid() {
		return NotificationPage{}, fmt.Errorf("%w: status %q", ErrBadFilter, f.Status)
	}
	if f.Limit < 0 || f.Limit > maxPageLimit {
		return NotificationPage{}, fmt.Errorf("%w: limit %d (1..%d)", ErrBadFilter, f.Limit, maxPageLimit)
	}
	if f.Limit == 0 {
		f.Limit = defaultPageLimit
	}
	q := strings.Builder{}
	q.WriteString(`SELECT id, run_id, status, attempts, retry_ms, lease_until_ms, detail, published_ms, expires_ms, acknowledged_ms
		FROM kimi_result_notifications WHERE module = ? AND name = ? AND guild_id = ?`)
	now := s.now().UnixMilli()
	args := []any{k.Module, k.Name, int64(k.GuildID)}
	switch f.Status {
	case "":
	case StatusExpired:
		q.WriteString(` AND (status = 'expired' OR (status <> 'acknowledged' AND expires_ms <= ?))`)
		args = append(args, now)
	case StatusAcknowledged:
		q.WriteString(` AND status = 'acknowledged'`)
	default:
		q.WriteString(` AND status = ? AND expires_ms > ?`)
		args = append(args, string(f.Status), now)
	}
	if f.After != "" {
		pub, id, err := parseCursor(f.After)
		if err != nil {
			return NotificationPage{}, err
		}
		q.WriteString(` AND (published_ms < ? OR (published_ms = ? AND id < ?))`)
		args = append(args, pub, pub, id)
	}
	q.WriteString(` ORDER BY published_ms DESC, id DESC LIMIT ?`)
	args = append(args, f.Limit+1)

	// The subscription and its page in one read transaction: a page of a
	// subscription deleted meanwhile is ErrNotFound, not an empty page.
	tx, err := s.st.Reader().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return NotificationPage{}, fmt.Errorf("results: notifications: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM kimi_result_subscriptions WHERE module = ? AND name = ? AND guild_id = ?`,
		k.Module, k.Name, int64(k.GuildID)).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return NotificationPage{}, ErrNotFound
	} else if err != nil {
		return NotificationPage{}, fmt.Errorf("results: notifications: %w", err)
	}
	rows, err := tx.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return NotificationPage{}, fmt.Errorf("results: notifications: %w", err)
	}
	var page NotificationPage
	for rows.Next() {
		n := Notification{SubKey: k}
		var retry, lease, pub, exp, ack int64
		if err := rows.Scan(&n.ID, &n.RunID, &n.Status, &n.Attempts, &retry, &lease, &n.Detail, &pub, &exp, &ack); err != nil {
			rows.Close()
			return NotificationPage{}, fmt.Errorf("results: notifications: %w", err)
		}
		if n.Status != StatusAcknowledged && n.Status != StatusExpired && exp <= now {
			n.Status = StatusExpired // as the counts show it, before the prune marks it
		}
		n.RetryAt, n.LeaseUntil, n.PublishedAt, n.ExpiresAt, n.AcknowledgedAt = msTime(retry), msTime(lease), time.UnixMilli(pub), time.UnixMilli(exp), msTime(ack)
		page.Items = append(page.Items, n)
	}
	if err := closeRows(rows); err != nil {
		return NotificationPage{}, fmt.Errorf("results: notifications: %w", err)
	}
	if len(page.Items) > f.Limit {
		page.Items = page.Items[:f.Limit]
		last := page.Items[len(page.Items)-1]
		page.Next = makeCursor(last.PublishedAt.UnixMilli(), last.ID)
	}
	if err := s.fillRuns(ctx, tx, page.Items); err != nil {
		return NotificationPage{}, err
	}
	return page, nil
}

// fillRuns sets the task and revision of each notification from its
// publication (one lookup per distinct run, by primary key).
func (s *Service) fillRuns(ctx context.Context, tx *sql.Tx, items []Notification) error {
	type run struct {
		task string
		rev  int
	}
	runs := map[string]run{}
	for i := range items {
		r, ok := runs[items[i].RunID]
		if !ok {
			if err := tx.QueryRowContext(ctx, `SELECT task_id, revision FROM kimi_result_publications WHERE run_id = ?`,
				items[i].RunID).Scan(&r.task, &r.rev); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("results: notification's run: %w", err)
			}
			runs[items[i].RunID] = r
		}
		items[i].TaskID, items[i].Revision = r.task, r.rev
	}
	return nil
}

// makeCursor is the opaque cursor after (published, id).
func makeCursor(published int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(published, 10) + "." + id))
}

// parseCursor reads makeCursor's form; anything else is ErrBadCursor.
func parseCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(c) > 128 {
		return 0, "", ErrBadCursor
	}
	ms, id, ok := strings.Cut(string(b), ".")
	pub, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || pub < 0 || ms != strconv.FormatInt(pub, 10) || !notificationIDRE.MatchString(id) {
		return 0, "", ErrBadCursor
	}
	return pub, id, nil
}

func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// subscriptionExistsTx returns ErrNotFound unless k is subscribed.
func subscriptionExistsTx(ctx context.Context, tx *sql.Tx, k SubKey) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM kimi_result_subscriptions WHERE module = ? AND name = ? AND guild_id = ?`,
		k.Module, k.Name, int64(k.GuildID)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	} else if err != nil {
		return fmt.Errorf("results: read subscription: %w", err)
	}
	return nil
}

// RetryNow makes the subscription's retry and blocked notifications (ids
// nil: all of them; else those ids) due now, audited; it returns how many.
// Their status and detail stay (the dispatcher settles them anew).
func (s *Service) RetryNow(ctx context.Context, k SubKey, ids []string, a Actor) (int, error) {
	for _, id := range ids {
		if !notificationIDRE.MatchString(id) {
			return 0, fmt.Errorf("results: retry now: notification id %q: %w", id, ErrNotFound)
		}
	}
	if ids != nil && len(ids) == 0 {
		return 0, nil
	}
	now := s.now().UnixMilli()
	q := `UPDATE kimi_result_notifications SET retry_ms = ?
	       WHERE module = ? AND name = ? AND guild_id = ? AND status IN ('retry', 'blocked') AND expires_ms > ?`
	args := []any{now, k.Module, k.Name, int64(k.GuildID), now}
	if ids != nil {
		q += ` AND id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	}
	var n int64
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := subscriptionExistsTx(ctx, tx, k); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("results: retry now: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("results: retry now: %w", err)
		}
		detail := DetailRetryRequested + ": " + plural(int(n), "notification")
		if len(ids) == 1 {
			detail += " (" + ids[0] + ")"
		}
		return auditTx(ctx, tx, a, ActionRetryNow, k, detail)
	})
	if err != nil {
		return 0, err
	}
	s.watch.Notify()
	s.signal()
	return int(n), nil
}

// SetPaused pauses or resumes the subscription's delivery, audited: a
// paused subscription's notifications are not claimed (nor expire
// differently); resuming makes them due at once.
func (s *Service) SetPaused(ctx context.Context, k SubKey, paused bool, a Actor) error {
	now := s.now().UnixMilli()
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := subscriptionExistsTx(ctx, tx, k); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE kimi_result_subscriptions SET paused = ? WHERE module = ? AND name = ? AND guild_id = ?`,
			boolInt(paused), k.Module, k.Name, int64(k.GuildID)); err != nil {
			return fmt.Errorf("results: set paused: %w", err)
		}
		action, detail := ActionPause, DetailPaused
		if !paused {
			res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET retry_ms = ?
			  WHERE module = ? AND name = ? AND guild_id = ? AND status IN ('pending', 'retry', 'blocked') AND retry_ms > ? AND expires_ms > ?`,
				now, k.Module, k.Name, int64(k.GuildID), now, now)
			if err != nil {
				return fmt.Errorf("results: resume: %w", err)
			}
			due, _ := res.RowsAffected()
			action, detail = ActionResume, "Delivery resumed; "+plural(int(due), "waiting notification")+" made due now"
		}
		return auditTx(ctx, tx, a, action, k, detail)
	})
	if err != nil {
		return err
	}
	s.watch.Notify()
	s.signal()
	return nil
}

// Unsubscribe deletes the subscription and every notification of it,
// audited with how many were deleted; a running module's handler for it
// is unregistered (the module subscribes again at its next start).
func (s *Service) Unsubscribe(ctx context.Context, k SubKey, a Actor) (int, error) {
	var n int64
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := subscriptionExistsTx(ctx, tx, k); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_result_notifications WHERE module = ? AND name = ? AND guild_id = ?`,
			k.Module, k.Name, int64(k.GuildID))
		if err != nil {
			return fmt.Errorf("results: unsubscribe: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("results: unsubscribe: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_result_subscriptions WHERE module = ? AND name = ? AND guild_id = ?`,
			k.Module, k.Name, int64(k.GuildID)); err != nil {
			return fmt.Errorf("results: unsubscribe: %w", err)
		}
		return auditTx(ctx, tx, a, ActionUnsubscribe, k, "Deleted the subscription and "+plural(int(n), "notification"))
	})
	if err != nil {
		return 0, err
	}
	s.dropHandler(k)
	s.watch.Notify()
	s.signal()
	return int(n), nil
}

// PurgeExpired deletes the subscription's expired notifications (marked
// expired, or open past their expiry), audited; it returns how many.
func (s *Service) PurgeExpired(ctx context.Context, k SubKey, a Actor) (int, error) {
	now := s.now().UnixMilli()
	var n int64
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := subscriptionExistsTx(ctx, tx, k); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_result_notifications
		  WHERE module = ? AND name = ? AND guild_id = ? AND (status = 'expired' OR (status <> 'acknowledged' AND expires_ms <= ?))`,
			k.Module, k.Name, int64(k.GuildID), now)
		if err != nil {
			return fmt.Errorf("results: purge expired: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("results: purge expired: %w", err)
		}
		return auditTx(ctx, tx, a, ActionPurgeExpired, k, "Purged "+plural(int(n), "expired notification"))
	})
	if err != nil {
		return 0, err
	}
	s.watch.Notify()
	s.signal()
	return int(n), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
