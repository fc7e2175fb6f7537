package results

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Enqueue records p and one pending notification per subscription of
// p.GuildID, inside the producer's write transaction tx (the one that
// records the run's last required post as sent), and wakes the
// dispatcher: its claim needs the one writer, so it sees the rows once tx
// commits (and nothing if it rolls back). Only a completed run with at
// least one sent message (with a message id) enqueues; INSERT OR IGNORE
// makes a repeated Enqueue of the same run a no-op. Notifications expire
// Retention after p.PublishedAt. It returns how many notifications it
// added.
func (s *Service) Enqueue(ctx context.Context, tx *sql.Tx, p Publication) (int, error) {
	return 0, errNotImplemented
}

// RevokeTask deletes every publication of a task (and so its
// notifications) inside the producer's transaction: task deletion revokes
// future reads; what a handler already received cannot be recalled.
func (s *Service) RevokeTask(ctx context.Context, tx *sql.Tx, taskID string) error {
	return errNotImplemented
}

// RevokeRun deletes one run's publication and notifications (retention).
func (s *Service) RevokeRun(ctx context.Context, tx *sql.Tx, runID string) error {
	return errNotImplemented
}

// String is the key as an audit target: "module/name/guild".
func (k SubKey) String() string {
	return k.Module + "/" + k.Name + "/" + strconv.FormatUint(k.GuildID, 10)
}

// ParseSubKey parses String's form.
func ParseSubKey(s string) (SubKey, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return SubKey{}, fmt.Errorf("results: subscription key %q: want module/name/guild", s)
	}
	g, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil || g == 0 {
		return SubKey{}, fmt.Errorf("results: subscription key %q: bad guild id", s)
	}
	return SubKey{Module: parts[0], Name: parts[1], GuildID: g}, nil
}
