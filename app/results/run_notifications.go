package results

import (
	"context"
	"fmt"
	"time"
)

// RunNotification is one subscription's notification of a run, as a
// task's history shows it (/tasks/{id}).
type RunNotification struct {
	ID       string
	SubKey   SubKey
	Status   Status
	Attempts int
	// Detail is the last error or reason ("" none).
	Detail string
	// RetryAt is the next attempt (zero: due now or never).
	RetryAt        time.Time
	PublishedAt    time.Time
	AcknowledgedAt time.Time
}

// RunNotifications returns the notifications of run runID, one per
// subscription, ordered by module, name and guild; none (no error) when the
// run was never published or its publication is gone. An open row past its
// expiry reads as expired, as the counts of /results show it. Read-only: a
// seek on the (run_id, module, name, guild_id) unique index.
func (s *Service) RunNotifications(ctx context.Context, runID string) ([]RunNotification, error) {
	stmt, err := s.prepared(ctx, `SELECT id, module, name, guild_id, status, attempts, detail, retry_ms, published_ms, expires_ms, acknowledged_ms
		FROM kimi_result_notifications WHERE run_id = ? ORDER BY module, name, guild_id`)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("results: run notifications: %w", err)
	}
	now := s.now().UnixMilli()
	var out []RunNotification
	for rows.Next() {
		var n RunNotification
		var retry, pub, exp, ack int64
		if err := rows.Scan(&n.ID, &n.SubKey.Module, &n.SubKey.Name, &n.SubKey.GuildID, &n.Status, &n.Attempts, &n.Detail, &retry, &pub, &exp, &ack); err != nil {
			rows.Close()
			return nil, fmt.Errorf("results: run notifications: %w", err)
		}
		if n.Status != StatusAcknowledged && n.Status != StatusExpired && exp <= now {
			n.Status = StatusExpired
		}
		n.RetryAt, n.PublishedAt, n.AcknowledgedAt = msTime(retry), time.UnixMilli(pub), msTime(ack)
		out = append(out, n)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("results: run notifications: %w", err)
	}
	return out, nil
}
