package results

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

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

// settle writes one outcome, guarded by the claim's token, a live lease
// and the row's expiry, and adds its status change to d; false: the lease
// was lost (nothing written).
func (s *Service) settle(ctx context.Context, tx querier, o outcome, now time.Time, d countDeltas) (bool, error) {
	if o.status == "" {
		return false, nil
	}
	nowMs := now.UnixMilli()
	var (
		res sql.Result
		err error
	)
	// The status is the one the claim read: nothing changes a live-leased
	// row's status but its settle.
	guard := `WHERE id = ? AND lease_token = ? AND lease_until_ms > ? AND expires_ms > ?`
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
	if n > 0 {
		d.move(o.c.key, o.c.prev, o.status, 1)
	}
	return n > 0, nil
}

// leaseRows is the rows of a batch statement: a JSON array of [id,
// token, inc] (one statement for the batch: each statement costs about
// as much as the row it writes).
const leaseRows = `(SELECT value->>0 AS id, value->>1 AS token, value->>2 AS inc FROM json_each(?1))`

// ackQuery acknowledges a batch, each row under settle's guard (looked
// up by id per batch row: TestClaimAndSettlePlans).
const ackQuery = `UPDATE kimi_result_notifications AS n SET status = 'acknowledged', acknowledged_ms = ?2,
	retry_ms = 0, lease_token = '', lease_until_ms = 0, detail = '', detail_ms = ?2, attempts = n.attempts + j.inc
	FROM ` + leaseRows + ` AS j
	WHERE n.id = j.id AND n.lease_token = j.token AND n.lease_until_ms > ?2 AND n.expires_ms > ?2
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
func (s *Service) settleAll(ctx context.Context, tx querier, outs []outcome, now time.Time, d countDeltas) ([]bool, error) {
	ok := make([]bool, len(outs))
	var acks []*claim
	var ackInc []int
	batched := map[string]bool{} // the ids in the batch
	for i, o := range outs {
		// The batch's RETURNING names rows by id: a row acknowledged
		// twice in a step (a claim whose lease ran out while its handler
		// ran, and the claim that took the row again) is settled on its
		// own the second time, its token deciding.
		if o.status == StatusAcknowledged && !batched[o.c.id] {
			batched[o.c.id] = true
			acks, ackInc = append(acks, o.c), append(ackInc, o.inc)
			continue
		}
		var err error
		if ok[i], err = s.settle(ctx, tx, o, now, d); err != nil {
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
		if o.status == StatusAcknowledged && slices.Contains(acks, o.c) {
			if ok[i] = slices.Contains(ids, o.c.id); ok[i] {
				d.move(o.c.key, o.c.prev, StatusAcknowledged, 1)
			}
		}
	}
	return ok, nil
}

// dueWhere selects the claimable rows of an unpaused subscription: open,
// due and not under a live lease (a lease that ran out belongs to a
// crashed or stuck delivery: claimable again).
const dueWhere = `n.status IN ('pending', 'retry', 'blocked') AND n.expires_ms > ?1 AND n.retry_ms <= ?1
	AND n.lease_until_ms <= ?1 AND EXISTS (SELECT 1 FROM kimi_result_subscriptions s
	WHERE s.module = n.module AND s.name = n.name AND s.guild_id = n.guild_id AND s.paused = 0)`

// claimQuery selects up to ?2 (the claim's limit, written in) due rows in claim order: each status's
// rows come in that order from the due index, so only the first ?2 of
// each are read past the leased ones (at most the claims in flight), and
// the three are merged.
var claimQuery = func() string {
	var parts []string
	for _, st := range storedOpen {
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
// (DetailQuarantined) without delivering them, one statement per status
// they leave (for d).
func (s *Service) blockQuarantined(ctx context.Context, tx querier, module string, nowMs int64, d countDeltas) (int64, error) {
	var total int64
	for _, st := range storedOpen {
		rows, err := tx.QueryContext(ctx, `UPDATE kimi_result_notifications AS n SET status = 'blocked', attempts = attempts + 1,
			retry_ms = ?2, lease_token = '', lease_until_ms = 0, detail = ?3, detail_ms = ?1
			WHERE n.module = ?4 AND n.status = ?5 AND `+dueWhere+` RETURNING module, name, guild_id`,
			nowMs, nowMs+s.opts.BlockedRetry.Milliseconds(), DetailQuarantined, module, string(st))
		if err != nil {
			return 0, fmt.Errorf("block quarantined %s: %w", module, err)
		}
		n, err := d.scanMoves(rows, st, StatusBlocked)
		if err != nil {
			return 0, fmt.Errorf("block quarantined %s: %w", module, err)
		}
		total += n
	}
	return total, nil
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
	// The lease columns and attempts only: no indexed column but the
	// leased partial index's changes.
	if _, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications AS n SET attempts = n.attempts + j.inc,
		lease_token = j.token, lease_until_ms = ?2 FROM `+leaseRows+` AS j WHERE n.id = j.id`, arg, nowMs+s.opts.Lease.Milliseconds()); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return out, nil
}
