package kudos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Kudos is one recorded kudos.
type Kudos struct {
	ID         int64
	GuildID    uint64
	GiverID    uint64
	ReceiverID uint64
	Reason     string
	GivenAt    time.Time
}

// BoardEntry is one leaderboard line: a member and the kudos they received.
type BoardEntry struct {
	UserID uint64
	Count  int
}

// ledger holds every query, written only against the storage port, so the
// lifecycle code stays readable and the SQL is tested on real SQLite.
// Conventions worth copying: reads go through Reader(); every write goes
// through WriteTx, which serializes writers and scopes commit/rollback to
// one unit of work; table names always come from Table().
type ledger struct {
	storage  sdk.Storage
	kudos    string // quoted physical names, resolved once
	receipts string
}

func newLedger(s sdk.Storage) *ledger {
	return &ledger{storage: s, kudos: s.Table("kudos"), receipts: s.Table("result_receipts")}
}

// unixSeconds stores times as REAL unix seconds, as the schema says.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func fromUnixSeconds(s float64) time.Time {
	return time.Unix(0, int64(s*1e9))
}

// give records a kudos unless the giver already gave dailyLimit in the
// trailing 24 hours; it returns nil then. The check and the insert share
// one write transaction, so concurrent gives cannot overshoot the limit.
func (l *ledger) give(ctx context.Context, guildID, giverID, receiverID uint64, reason string, now time.Time, dailyLimit int) (*Kudos, error) {
	var given *Kudos
	err := l.storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var recent int
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+l.kudos+
			` WHERE guild_id = ? AND giver_id = ? AND given_at > ?`,
			int64(guildID), int64(giverID), unixSeconds(now.Add(-day))).Scan(&recent)
		if err != nil {
			return err
		}
		if recent >= dailyLimit {
			return nil
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO `+l.kudos+
			` (guild_id, giver_id, receiver_id, reason, given_at) VALUES (?, ?, ?, ?, ?)`,
			int64(guildID), int64(giverID), int64(receiverID), reason, unixSeconds(now))
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		given = &Kudos{ID: id, GuildID: guildID, GiverID: giverID, ReceiverID: receiverID, Reason: reason, GivenAt: now}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kudos: give: %w", err)
	}
	return given, nil
}

// get returns a kudos by id, or nil.
func (l *ledger) get(ctx context.Context, id int64) (*Kudos, error) {
	var (
		k                      Kudos
		guild, giver, receiver int64
		givenAt                float64
	)
	err := l.storage.Reader().QueryRowContext(ctx, `SELECT id, guild_id, giver_id, receiver_id, reason, given_at FROM `+
		l.kudos+` WHERE id = ?`, id).Scan(&k.ID, &guild, &giver, &receiver, &k.Reason, &givenAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kudos: get %d: %w", id, err)
	}
	k.GuildID, k.GiverID, k.ReceiverID = uint64(guild), uint64(giver), uint64(receiver)
	k.GivenAt = fromUnixSeconds(givenAt)
	return &k, nil
}

// top ranks receivers by kudos received after since; ties break by user id.
func (l *ledger) top(ctx context.Context, guildID uint64, since time.Time, limit int) ([]BoardEntry, error) {
	rows, err := l.storage.Reader().QueryContext(ctx, `SELECT receiver_id, COUNT(*) AS n FROM `+l.kudos+
		` WHERE guild_id = ? AND given_at > ? GROUP BY receiver_id ORDER BY n DESC, receiver_id ASC LIMIT ?`,
		int64(guildID), unixSeconds(since), limit)
	if err != nil {
		return nil, fmt.Errorf("kudos: leaderboard: %w", err)
	}
	defer rows.Close()
	var entries []BoardEntry
	for rows.Next() {
		var user int64
		var e BoardEntry
		if err := rows.Scan(&user, &e.Count); err != nil {
			return nil, fmt.Errorf("kudos: leaderboard: %w", err)
		}
		e.UserID = uint64(user)
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("kudos: leaderboard: %w", err)
	}
	return entries, nil
}

// forgetMember erases every kudos a departed member gave or received;
// it returns the rows removed.
func (l *ledger) forgetMember(ctx context.Context, guildID, userID uint64) (int64, error) {
	var removed int64
	err := l.storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM `+l.kudos+
			` WHERE guild_id = ? AND (giver_id = ? OR receiver_id = ?)`, int64(guildID), int64(userID), int64(userID))
		if err != nil {
			return err
		}
		removed, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("kudos: forget member: %w", err)
	}
	return removed, nil
}

// recordResult stores a scheduled-result notification id idempotently,
// prunes receipts that expired at or before now, and returns how many live
// receipts remain. A repeated id (a retry after a lost acknowledgement)
// changes nothing: the id is the idempotency key.
func (l *ledger) recordResult(ctx context.Context, notificationID string, expiresAt, now time.Time) (int, error) {
	var count int
	err := l.storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO `+l.receipts+
			` (notification_id, expires_at) VALUES (?, ?)`, notificationID, unixSeconds(expiresAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+l.receipts+` WHERE expires_at <= ?`, unixSeconds(now)); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+l.receipts).Scan(&count)
	})
	if err != nil {
		return 0, fmt.Errorf("kudos: record result: %w", err)
	}
	return count, nil
}
