package results

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// storedOpen are the open statuses a row stores; a row under a live lease
// reads as StatusDelivering (derived, never stored: migration 00018).
var storedOpen = []Status{StatusPending, StatusRetry, StatusBlocked}

// leasedLive is the SQL condition of a row under a live lease at ?1 (now,
// unix ms), the one that makes it read as delivering. A row past its
// expiry reads as expired even under a lease.
const leasedLive = `lease_token <> '' AND lease_until_ms > ?1 AND expires_ms > ?1`

// leasedLiveOf is leasedLive with its columns qualified by a table's
// alias ("n.").
func leasedLiveOf(alias string) string {
	return alias + strings.ReplaceAll(leasedLive, " AND ", " AND "+alias)
}

// countKey is a row of kimi_result_counts.
type countKey struct {
	key    SubKey
	status Status
}

// countDeltas are a transaction's changes to kimi_result_counts: the
// dispatcher's status changes (settles, expiry, quarantine), written once
// at the end of its step by write. The inserts and deletes of rows are
// counted by migration 00008's triggers.
type countDeltas map[countKey]int

// move records n rows of k going from one status to another.
func (d countDeltas) move(k SubKey, from, to Status, n int) {
	if from == to || n == 0 {
		return
	}
	d[countKey{k, from}] -= n
	d[countKey{k, to}] += n
}

// scanMoves reads the (module, name, guild_id) rows an UPDATE … RETURNING
// moved from one status to another, closes them and returns how many.
func (d countDeltas) scanMoves(rows *sql.Rows, from, to Status) (int64, error) {
	defer rows.Close()
	var n int64
	for rows.Next() {
		var k SubKey
		var guild int64
		if err := rows.Scan(&k.Module, &k.Name, &guild); err != nil {
			return n, err
		}
		k.GuildID = uint64(guild)
		d.move(k, from, to, 1)
		n++
	}
	return n, rows.Err()
}

// write applies the deltas in two statements whatever their number: the
// rows a positive delta needs are made (at 0), then every delta is added.
func (d countDeltas) write(ctx context.Context, tx querier) error {
	var rows [][5]any
	// In key order: the same deltas make the same statement argument.
	for _, ck := range slices.SortedFunc(maps.Keys(d), func(a, b countKey) int {
		return cmp.Or(strings.Compare(a.key.Module, b.key.Module), strings.Compare(a.key.Name, b.key.Name),
			cmp.Compare(a.key.GuildID, b.key.GuildID), strings.Compare(string(a.status), string(b.status)))
	}) {
		if n := d[ck]; n != 0 {
			rows = append(rows, [5]any{ck.key.Module, ck.key.Name, int64(ck.key.GuildID), string(ck.status), n})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("count deltas: %w", err)
	}
	const deltas = `(SELECT value->>0 AS module, value->>1 AS name, value->>2 AS guild_id, value->>3 AS status, value->>4 AS n FROM json_each(?1))`
	if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_result_counts (module, name, guild_id, status, n)
		SELECT module, name, guild_id, status, 0 FROM `+deltas+` WHERE n > 0 ON CONFLICT DO NOTHING`, string(b)); err != nil {
		return fmt.Errorf("count deltas: %w", err)
	}
	// Never below 0: a count wronged by hand (SQL run on the file) must
	// not stop every step of the dispatcher; it is wrong only until the
	// rows it counts are gone.
	if _, err := tx.ExecContext(ctx, `UPDATE kimi_result_counts AS c SET n = max(0, c.n + j.n) FROM `+deltas+` AS j
		WHERE c.module = j.module AND c.name = j.name AND c.guild_id = j.guild_id AND c.status = j.status`, string(b)); err != nil {
		return fmt.Errorf("count deltas: %w", err)
	}
	return nil
}
