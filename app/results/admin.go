package results

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/internal/stmtcache"
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

// Subscriptions returns every subscription with its counts, ordered by
// module, name and guild. Fast with 100k notifications (the admin's p99
// budget is 20 ms): one statement (subscriptionSQL) whose every part is a
// primary-key read or an index seek.
func (s *Service) Subscriptions(ctx context.Context) ([]Subscription, error) {
	stmt, err := s.prepared(ctx, subscriptionSQL+` ORDER BY s.module, s.name, s.guild_id`)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, s.now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("results: list subscriptions: %w", err)
	}
	var subs []Subscription
	for rows.Next() {
		sub, err := s.scanSubscription(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		subs = append(subs, sub)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("results: list subscriptions: %w", err)
	}
	return subs, nil
}

// Subscription returns one subscription (ErrNotFound when none).
func (s *Service) Subscription(ctx context.Context, k SubKey) (Subscription, error) {
	stmt, err := s.prepared(ctx, subscriptionSQL+` WHERE s.module = ?2 AND s.name = ?3 AND s.guild_id = ?4`)
	if err != nil {
		return Subscription{}, err
	}
	return s.scanSubscription(stmt.QueryRowContext(ctx, s.now().UnixMilli(), k.Module, k.Name, int64(k.GuildID)))
}

// prepared returns q prepared on the service's reader pool, once:
// compiling subscriptionSQL costs several times what running it does.
func (s *Service) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	st, err := stmtcache.OnPool(ctx, s.st.Reader(), q)
	if err != nil {
		return nil, fmt.Errorf("results: prepare: %w", err)
	}
	return st, nil
}

// subscriptionSQL reads subscriptions (s) with, per subscription (?1 is
// now in unix ms):
//   - the count of each stored status, from kimi_result_counts (the
//     dispatcher's deltas and the insert and delete triggers');
//   - per stored open status, how many of its rows are under a live lease
//     (they read as delivering): a range of the partial _leased index;
//   - per stored open status, how many rows are past their expiry (they
//     count as expired until the prune marks them): a range of the _status
//     index (status, expires_ms);
//   - per stored open status, the publication of its oldest unexpired row: every
//     row expires Retention after its publication, so the first entry of
//     the _status index past now is the oldest — a seek;
//   - the newest detail of an unexpired retry or blocked row, from the
//     partial _error index, newest first.
var subscriptionSQL = func() string {
	var b strings.Builder
	b.WriteString(`SELECT s.module, s.name, s.guild_id, s.created_ms, s.paused`)
	key := `module = s.module AND name = s.name AND guild_id = s.guild_id`
	for _, st := range Statuses {
		fmt.Fprintf(&b, `,
		COALESCE((SELECT n FROM kimi_result_counts WHERE %s AND status = '%s'), 0)`, key, st)
	}
	for _, st := range storedOpen {
		fmt.Fprintf(&b, `,
		(SELECT COUNT(*) FROM kimi_result_notifications INDEXED BY kimi_result_notifications_leased WHERE %s AND status = '%s' AND %s)`, key, st, leasedLive)
	}
	for _, st := range storedOpen {
		fmt.Fprintf(&b, `,
		(SELECT COUNT(*) FROM kimi_result_notifications WHERE %s AND status = '%s' AND expires_ms <= ?1)`, key, st)
	}
	for _, st := range storedOpen {
		fmt.Fprintf(&b, `,
		(SELECT published_ms FROM kimi_result_notifications WHERE %s AND status = '%s' AND expires_ms > ?1 ORDER BY expires_ms LIMIT 1)`, key, st)
	}
	fmt.Fprintf(&b, `,
		(SELECT json_array(detail, detail_ms) FROM kimi_result_notifications INDEXED BY kimi_result_notifications_error
		  WHERE %s AND status IN ('retry', 'blocked') AND expires_ms > ?1 AND detail <> '' ORDER BY detail_ms DESC, id DESC LIMIT 1)
		FROM kimi_result_subscriptions AS s`, key)
	return b.String()
}()

// scanSubscription reads a row of subscriptionSQL, with the registry's
// state of it.
func (s *Service) scanSubscription(r interface{ Scan(dest ...any) error }) (Subscription, error) {
	var sub Subscription
	var created int64
	var paused int
	counts := make([]int, len(Statuses))
	leased := make([]int, len(storedOpen))
	past := make([]int, len(storedOpen))
	oldest := make([]sql.NullInt64, len(storedOpen))
	var lastErr sql.NullString
	dest := []any{&sub.Module, &sub.Name, &sub.GuildID, &created, &paused}
	for i := range counts {
		dest = append(dest, &counts[i])
	}
	for i := range leased {
		dest = append(dest, &leased[i])
	}
	for i := range past {
		dest = append(dest, &past[i])
	}
	for i := range oldest {
		dest = append(dest, &oldest[i])
	}
	dest = append(dest, &lastErr)
	if err := r.Scan(dest...); errors.Is(err, sql.ErrNoRows) {
		return Subscription{}, ErrNotFound
	} else if err != nil {
		return Subscription{}, fmt.Errorf("results: read subscription: %w", err)
	}
	sub.CreatedAt, sub.Paused, sub.Counts = time.UnixMilli(created), paused != 0, Counts{}
	for i, st := range Statuses {
		if counts[i] > 0 {
			sub.Counts[st] = counts[i]
		}
	}
	for i, st := range storedOpen {
		// Rows under a live lease read as delivering.
		if n := min(leased[i], sub.Counts[st]); n > 0 {
			sub.Counts[st] -= n
			sub.Counts[StatusDelivering] += n
		}
		// Open rows past their expiry count as expired.
		if n := min(past[i], sub.Counts[st]); n > 0 {
			sub.Counts[st] -= n
			sub.Counts[StatusExpired] += n
		}
		if sub.Counts[st] == 0 {
			delete(sub.Counts, st)
		}
		if oldest[i].Valid && (sub.OldestPending.IsZero() || oldest[i].Int64 < sub.OldestPending.UnixMilli()) {
			sub.OldestPending = time.UnixMilli(oldest[i].Int64)
		}
	}
	if lastErr.Valid {
		var e []any
		if err := json.Unmarshal([]byte(lastErr.String), &e); err == nil && len(e) == 2 {
			sub.LastError, _ = e[0].(string)
			if ms, _ := e[1].(float64); ms > 0 {
				sub.LastErrorAt = time.UnixMilli(int64(ms))
			}
		}
	}
	sub.Registered, sub.Quarantined = s.registered(sub.SubKey), s.isQuarantined(sub.Module)
	return sub, nil
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
	now := s.now().UnixMilli()
	q, byExpiry, bindsStatus := notificationsSQL(f.Status, f.After != "")
	args := []any{now, k.Module, k.Name, int64(k.GuildID)}
	if bindsStatus {
		args = append(args, string(f.Status))
	}
	if f.After != "" {
		at, id, err := parseCursor(f.After)
		if err != nil {
			return NotificationPage{}, err
		}
		args = append(args, at, id)
	}
	args = append(args, f.Limit+1)
	stmt, err := s.prepared(ctx, q)
	if err != nil {
		return NotificationPage{}, err
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return NotificationPage{}, fmt.Errorf("results: notifications: %w", err)
	}
	var page NotificationPage
	for rows.Next() {
		n := Notification{SubKey: k}
		var retry, lease, pub, exp, ack int64
		if err := rows.Scan(&n.ID, &n.RunID, &n.TaskID, &n.Revision, &n.Status, &n.Attempts, &retry, &lease, &n.Detail, &pub, &exp, &ack); err != nil {
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
	if len(page.Items) == 0 {
		// Nothing listed: say so of a subscription that does not exist
		// (rows go with their subscription, so a listed row proves it).
		if _, err := s.Subscription(ctx, k); err != nil {
			return NotificationPage{}, err
		}
	}
	if len(page.Items) > f.Limit {
		page.Items = page.Items[:f.Limit]
		last := page.Items[len(page.Items)-1]
		at := last.PublishedAt
		if byExpiry {
			at = last.ExpiresAt
		}
		page.Next = makeCursor(at.UnixMilli(), last.ID)
	}
	if page.Until, err = s.nextExpiry(ctx, k, now); err != nil {
		return NotificationPage{}, err
	}
	return page, nil
}

// notificationsSQL is Notifications' statement for a status filter ("":
// every status) and whether it has a cursor: ?1 is now, ?2..?4 the
// subscription, ?5 a stored status filtered on, then the cursor's time
// and id, then the limit. byExpiry: the keyset is (expires_ms, id)
// rather than (published_ms, id); bindsStatus: ?5 is bound to status.
func notificationsSQL(status Status, after bool) (q string, byExpiry, bindsStatus bool) {
	var b strings.Builder
	// A row under a live lease reads as delivering.
	b.WriteString(`SELECT n.id, n.run_id, COALESCE(p.task_id, ''), COALESCE(p.revision, 0),
		CASE WHEN ` + leasedLiveOf("n.") + ` THEN 'delivering' ELSE n.status END, n.attempts, n.retry_ms,
		n.lease_until_ms, n.detail, n.published_ms, n.expires_ms, n.acknowledged_ms
		FROM kimi_result_notifications AS n INDEXED BY `)
	// The keyset order is an index's: of every status by publication, of
	// one stored status by expiry (every row expires Retention after its
	// publication: the same order), or of the few live leases (sorted).
	byExpiry = status != "" && status != StatusExpired && status != StatusDelivering
	switch {
	case status == StatusDelivering:
		b.WriteString(`kimi_result_notifications_leased`)
	case byExpiry:
		b.WriteString(`kimi_result_notifications_status`)
	default:
		b.WriteString(`kimi_result_notifications_page`)
	}
	b.WriteString(` LEFT JOIN kimi_result_publications AS p ON p.run_id = n.run_id
		WHERE n.module = ?2 AND n.name = ?3 AND n.guild_id = ?4`)
	switch status {
	case "":
	case StatusExpired:
		b.WriteString(` AND (n.status = 'expired' OR (n.status <> 'acknowledged' AND n.expires_ms <= ?1))`)
	case StatusAcknowledged:
		b.WriteString(` AND n.status = 'acknowledged'`)
	case StatusDelivering:
		b.WriteString(` AND n.status IN ('pending', 'retry', 'blocked') AND ` + leasedLiveOf("n."))
	default:
		b.WriteString(` AND n.status = ?5 AND n.expires_ms > ?1 AND NOT (` + leasedLiveOf("n.") + `)`)
		bindsStatus = true
	}
	order := "published_ms"
	if byExpiry {
		order = "expires_ms"
	}
	if after {
		// A row value: the index seeks to the cursor instead of reading
		// the rows before it.
		fmt.Fprintf(&b, ` AND (n.%[1]s, n.id) < (?, ?)`, order)
	}
	fmt.Fprintf(&b, ` ORDER BY n.%[1]s DESC, n.id DESC LIMIT ?`, order)
	return b.String(), byExpiry, bindsStatus
}

// nextExpirySQL is the earliest expiry past ?4 of each stored open status
// of a subscription: a seek of the _status index (status, expires_ms) each.
var nextExpirySQL = func() string {
	var b strings.Builder
	b.WriteString(`SELECT `)
	for i, st := range storedOpen {
		if i > 0 {
			b.WriteString(`, `)
		}
		fmt.Fprintf(&b, `(SELECT expires_ms FROM kimi_result_notifications WHERE module = ?1 AND name = ?2 AND guild_id = ?3 AND status = '%s' AND expires_ms > ?4 ORDER BY expires_ms LIMIT 1)`, st)
	}
	return b.String()
}()

// nextExpiry is the earliest expiry after nowMs of k's open rows (zero:
// none): until then its pages read the same unless a row is written.
func (s *Service) nextExpiry(ctx context.Context, k SubKey, nowMs int64) (time.Time, error) {
	stmt, err := s.prepared(ctx, nextExpirySQL)
	if err != nil {
		return time.Time{}, err
	}
	exp := make([]sql.NullInt64, len(storedOpen))
	dest := make([]any, len(exp))
	for i := range exp {
		dest[i] = &exp[i]
	}
	if err := stmt.QueryRowContext(ctx, k.Module, k.Name, int64(k.GuildID), nowMs).Scan(dest...); err != nil {
		return time.Time{}, fmt.Errorf("results: notifications: next expiry: %w", err)
	}
	var first int64
	for _, e := range exp {
		if e.Valid && (first == 0 || e.Int64 < first) {
			first = e.Int64
		}
	}
	return msTime(first), nil
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
	q := `UPDATE kimi_result_notifications SET retry_ms = ?1
	       WHERE module = ?2 AND name = ?3 AND guild_id = ?4 AND status IN ('retry', 'blocked') AND expires_ms > ?5 AND lease_until_ms <= ?5`
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
	s.changed(k.Module)
	return int(n), nil
}

// SetPaused pauses or resumes the subscription's delivery, audited: a
// paused subscription's notifications are not claimed (nor expire
// differently); resuming makes them due at once. Asking for the state the
// subscription is already in (a stale page's button) changes nothing — a
// resume of a running subscription does not cut its retries' back-off —
// and is audited as such.
func (s *Service) SetPaused(ctx context.Context, k SubKey, paused bool, a Actor) error {
	now := s.now().UnixMilli()
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		var was int
		err := tx.QueryRowContext(ctx, `SELECT paused FROM kimi_result_subscriptions WHERE module = ? AND name = ? AND guild_id = ?`,
			k.Module, k.Name, int64(k.GuildID)).Scan(&was)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return fmt.Errorf("results: read subscription: %w", err)
		}
		if (was != 0) == paused {
			if paused {
				return auditTx(ctx, tx, a, ActionPause, k, DetailAlreadyPaused)
			}
			return auditTx(ctx, tx, a, ActionResume, k, DetailNotPaused)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE kimi_result_subscriptions SET paused = ? WHERE module = ? AND name = ? AND guild_id = ?`,
			boolInt(paused), k.Module, k.Name, int64(k.GuildID)); err != nil {
			return fmt.Errorf("results: set paused: %w", err)
		}
		action, detail := ActionPause, DetailPaused
		if !paused {
			res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET retry_ms = ?
			  WHERE module = ?2 AND name = ?3 AND guild_id = ?4 AND status IN ('pending', 'retry', 'blocked') AND retry_ms > ?1 AND expires_ms > ?1
			  AND lease_until_ms <= ?1`,
				now, k.Module, k.Name, int64(k.GuildID))
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
	s.changed(k.Module)
	return nil
}

// Unsubscribe deletes the subscription and every notification of it,
// audited with how many were deleted; a running module's handler for it
// is unregistered (the module subscribes again at its next start).
func (s *Service) Unsubscribe(ctx context.Context, k SubKey, a Actor) (int, error) {
	n, err := s.deleteSubscription(ctx, k, func(tx *sql.Tx, deleted int, existed bool) error {
		if !existed {
			return ErrNotFound // rolls the (empty) delete back
		}
		return auditTx(ctx, tx, a, ActionUnsubscribe, k, "Deleted the subscription and "+plural(deleted, "notification"))
	})
	return n, err
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
		if err := deleteSpentPublicationsTx(ctx, tx, k.GuildID, now); err != nil {
			return err
		}
		return auditTx(ctx, tx, a, ActionPurgeExpired, k, "Purged "+plural(int(n), "expired notification"))
	})
	if err != nil {
		return 0, err
	}
	s.changed(k.Module)
	return int(n), nil
}

// deleteSpentPublicationsTx deletes the guild's publications past their
// expiry that have no notification left, as the dispatcher's prune does:
// a purge or an unsubscribe may delete the last notifications of such a
// publication, and the prune runs again only at some later expiry (with
// none to come, never), which would keep the run's messages for good.
func deleteSpentPublicationsTx(ctx context.Context, tx *sql.Tx, guildID uint64, nowMs int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_result_publications WHERE guild_id = ? AND expires_ms <= ?
	  AND NOT EXISTS (SELECT 1 FROM kimi_result_notifications n WHERE n.run_id = kimi_result_publications.run_id)`,
		int64(guildID), nowMs); err != nil {
		return fmt.Errorf("results: delete spent publications: %w", err)
	}
	return nil
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
