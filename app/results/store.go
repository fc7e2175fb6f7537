package results

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kimiapp/kimi/app/internal/stmtcache"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// storedMessage is one published message as kimi_result_publications
// keeps it (JSON with stable names, independent of the SDK's Go names).
type storedMessage struct {
	GuildID         uint64             `json:"guild_id,string"`
	ChannelID       uint64             `json:"channel_id,string"`
	MessageID       uint64             `json:"message_id,string"`
	ParentChannelID uint64             `json:"parent_channel_id,string,omitempty"`
	Content         string             `json:"content"`
	Attachments     []storedAttachment `json:"attachments,omitempty"`
	EmbedJSON       string             `json:"embed_json,omitempty"`
	EmbedReason     string             `json:"embed_unavailable_reason,omitempty"`
}

type storedAttachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	SizeBytes   int64  `json:"size_bytes"`
	Description string `json:"description,omitempty"`
}

// encodeMessages keeps the messages that have a message id, in order,
// with an embed over sdk.MaxResultEmbedJSONBytes omitted (with the
// reason); it returns the JSON and how many messages it kept.
func encodeMessages(msgs []sdk.ScheduledResultMessage) (string, int, error) {
	out := make([]storedMessage, 0, len(msgs))
	for _, m := range msgs {
		if m.Message.MessageID == 0 {
			continue
		}
		sm := storedMessage{
			GuildID: m.Message.GuildID, ChannelID: m.Message.ChannelID, MessageID: m.Message.MessageID,
			ParentChannelID: m.Message.ParentChannelID, Content: m.Content,
			EmbedJSON: m.EmbedJSON, EmbedReason: m.EmbedUnavailableReason,
		}
		if len(sm.EmbedJSON) > sdk.MaxResultEmbedJSONBytes {
			sm.EmbedJSON, sm.EmbedReason = "", DetailEmbedTooLarge
		}
		for _, a := range m.Attachments {
			sm.Attachments = append(sm.Attachments, storedAttachment{ID: a.ID, Filename: a.Filename, SizeBytes: a.SizeBytes, Description: a.Description})
		}
		out = append(out, sm)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", 0, fmt.Errorf("results: encode messages: %w", err)
	}
	return string(b), len(out), nil
}

// decodeMessages is encodeMessages' inverse.
func decodeMessages(s string) ([]sdk.ScheduledResultMessage, error) {
	var in []storedMessage
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, fmt.Errorf("results: decode messages: %w", err)
	}
	out := make([]sdk.ScheduledResultMessage, 0, len(in))
	for _, m := range in {
		rm := sdk.ScheduledResultMessage{
			Message: sdk.MessageRef{GuildID: m.GuildID, ChannelID: m.ChannelID, MessageID: m.MessageID, ParentChannelID: m.ParentChannelID},
			Content: m.Content, EmbedJSON: m.EmbedJSON, EmbedUnavailableReason: m.EmbedReason,
		}
		for _, a := range m.Attachments {
			rm.Attachments = append(rm.Attachments, sdk.ScheduledResultAttachment{ID: a.ID, Filename: a.Filename, SizeBytes: a.SizeBytes, Description: a.Description})
		}
		out = append(out, rm)
	}
	return out, nil
}

// validatePublication checks what Enqueue stores.
func validatePublication(p Publication) error {
	if n := utf8.RuneCountInString(p.RunID); n < 1 || n > 64 {
		return errors.New("results: enqueue: run id must be 1-64 characters")
	}
	if n := utf8.RuneCountInString(p.TaskID); n < 1 || n > 64 {
		return errors.New("results: enqueue: task id must be 1-64 characters")
	}
	if p.Revision < 0 {
		return errors.New("results: enqueue: revision must not be negative")
	}
	if p.GuildID == 0 || p.GuildID > 1<<63-1 {
		return errors.New("results: enqueue: guild id must be a positive Discord id")
	}
	if p.OwnerID == 0 || p.OwnerID > 1<<63-1 {
		return errors.New("results: enqueue: owner id must be a positive Discord id")
	}
	if p.OriginChannelID > 1<<63-1 {
		return errors.New("results: enqueue: origin channel id out of range")
	}
	if p.PublishedAt.IsZero() {
		return errors.New("results: enqueue: published time is required")
	}
	return nil
}

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
	if s.isClosed() {
		return 0, ErrClosed
	}
	if tx == nil {
		return 0, errors.New("results: enqueue: a transaction is required")
	}
	if err := validatePublication(p); err != nil {
		return 0, err
	}
	if p.Outcome != sdk.ResultCompleted {
		return 0, nil
	}
	msgs, kept, err := encodeMessages(p.Messages)
	if err != nil {
		return 0, err
	}
	if kept == 0 {
		return 0, nil
	}
	guild := int64(p.GuildID)
	var subs int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kimi_result_subscriptions WHERE guild_id = ?`, guild).Scan(&subs); err != nil {
		return 0, fmt.Errorf("results: enqueue: count subscriptions: %w", err)
	}
	if subs == 0 {
		return 0, nil
	}
	pub := p.PublishedAt.UnixMilli()
	exp := p.PublishedAt.Add(Retention).UnixMilli()
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO kimi_result_publications
		(run_id, task_id, revision, guild_id, owner_id, origin_channel, published_ms, expires_ms, messages)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.RunID, p.TaskID, p.Revision, guild, int64(p.OwnerID), int64(p.OriginChannelID), pub, exp, msgs); err != nil {
		return 0, fmt.Errorf("results: enqueue: insert publication: %w", err)
	}
	// One row per subscription of the guild; the id is 16 random bytes in
	// hex, and the UNIQUE (run, subscription) makes a repeat a no-op.
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO kimi_result_notifications
		(id, run_id, module, name, guild_id, published_ms, expires_ms)
		SELECT lower(hex(randomblob(16))), ?, module, name, guild_id, ?, ?
		FROM kimi_result_subscriptions WHERE guild_id = ?`, p.RunID, pub, exp, guild)
	if err != nil {
		return 0, fmt.Errorf("results: enqueue: insert notifications: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("results: enqueue: %w", err)
	}
	if n > 0 {
		mods, err := subscriberModules(ctx, tx, guild)
		if err != nil {
			return 0, err
		}
		s.mu.Lock()
		s.pruneHint = min(s.pruneHint, exp)
		s.mu.Unlock()
		s.changedInTx(mods...) // announced after the producer's commit
	}
	return int(n), nil
}

// RevokeTask deletes every publication of a task (and so its
// notifications) inside the producer's transaction: task deletion revokes
// future reads; what a handler already received cannot be recalled.
func (s *Service) RevokeTask(ctx context.Context, tx *sql.Tx, taskID string) error {
	return s.revoke(ctx, tx, "task_id", taskID)
}

// RevokeRun deletes one run's publication and notifications (retention).
func (s *Service) RevokeRun(ctx context.Context, tx *sql.Tx, runID string) error {
	return s.revoke(ctx, tx, "run_id", runID)
}

func (s *Service) revoke(ctx context.Context, tx *sql.Tx, col, v string) error {
	if s.isClosed() {
		return ErrClosed
	}
	if tx == nil {
		return errors.New("results: revoke: a transaction is required")
	}
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT n.module FROM kimi_result_notifications n
		JOIN kimi_result_publications p ON p.run_id = n.run_id WHERE p.`+col+` = ?`, v)
	if err != nil {
		return fmt.Errorf("results: revoke: %w", err)
	}
	mods, err := scanStrings(rows)
	if err != nil {
		return fmt.Errorf("results: revoke: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_result_publications WHERE `+col+` = ?`, v); err != nil {
		return fmt.Errorf("results: revoke: %w", err)
	}
	s.changedInTx(mods...) // announced after the producer's commit
	return nil
}

// subscriberModules lists the modules subscribed in a guild.
func subscriberModules(ctx context.Context, tx *sql.Tx, guild int64) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT module FROM kimi_result_subscriptions WHERE guild_id = ?`, guild)
	if err != nil {
		return nil, fmt.Errorf("results: enqueue: subscribers: %w", err)
	}
	mods, err := scanStrings(rows)
	if err != nil {
		return nil, fmt.Errorf("results: enqueue: subscribers: %w", err)
	}
	return mods, nil
}

func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// newToken returns 16 random bytes in hex (a lease token).
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// retryDelay is the back-off after a failed attempt (attempts counts the
// attempt that failed): min(MaxRetryDelay, 30 s·2^min(attempts−1, 7)).
func retryDelay(attempts int) time.Duration {
	e := min(max(attempts-1, 0), 7)
	return min(MaxRetryDelay, 30*time.Second<<e)
}

// clipRunes cuts s to n characters.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// moduleCounts returns a module's notifications by status (the health
// constraint's figures), from the read pool: the sums of
// kimi_result_counts (the dispatcher's deltas and migration 00008's
// insert and delete triggers) over the module's subscriptions, less the
// rows under a live lease, which read as delivering (the partial _leased
// index) — a read of a few rows instead of every notification. A row past
// expiry still counts under its status until the dispatcher's prune,
// which runs at that expiry, marks it expired.
func (s *Service) moduleCounts(ctx context.Context, module string) (Counts, error) {
	rows, err := s.readStmt(ctx, moduleCountsSQL).QueryContext(ctx, s.now().UnixMilli(), module)
	if err != nil {
		return nil, fmt.Errorf("results: count %s: %w", module, err)
	}
	defer rows.Close()
	c := Counts{}
	for rows.Next() {
		var st string
		var n, leased int
		if err := rows.Scan(&st, &n, &leased); err != nil {
			return nil, fmt.Errorf("results: count %s: %w", module, err)
		}
		c[Status(st)] += n - leased
		c[StatusDelivering] += leased
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("results: count %s: %w", module, err)
	}
	for st, n := range c {
		if n == 0 {
			delete(c, st)
		}
	}
	return c, nil
}

// moduleCountsSQL is moduleCounts' statement: ?1 now, ?2 the module.
const moduleCountsSQL = `SELECT status, sum(n), 0 FROM kimi_result_counts WHERE module = ?2 GROUP BY status
	UNION ALL SELECT status, 0, count(*) FROM kimi_result_notifications INDEXED BY kimi_result_notifications_leased
	WHERE module = ?2 AND ` + leasedLive + ` GROUP BY status`

// String is the key as an audit target: "module/name/guild".
func (k SubKey) String() string {
	return k.Module + "/" + k.Name + "/" + strconv.FormatUint(k.GuildID, 10)
}

// ParseSubKey parses String's form: a valid module name, a valid
// subscription name and a guild id > 0.
func ParseSubKey(s string) (SubKey, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return SubKey{}, fmt.Errorf("results: subscription key %q: want module/name/guild", s)
	}
	g, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil || g == 0 {
		return SubKey{}, fmt.Errorf("results: subscription key %q: bad guild id", s)
	}
	if hostkit.ValidateModuleName(parts[0]) != nil || !hostkit.ValidScheduledResultName(parts[1]) {
		return SubKey{}, fmt.Errorf("results: subscription key %q: bad module or subscription name", s)
	}
	return SubKey{Module: parts[0], Name: parts[1], GuildID: g}, nil
}

// querier is a write transaction: the step's stx (prepared statements)
// or a plain *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ querier = (*sql.Tx)(nil)
	_ querier = stx{}
)

// stx is a step's transaction whose statements reuse the dispatcher's
// prepared statements (app/internal/stmtcache; only the loop goroutine,
// and Close after it stopped, uses them).
type stx = stmtcache.Tx

// preparedRead is a read-pool statement or, when it could not be
// prepared, the query run directly.
type preparedRead struct {
	st *sql.Stmt
	db *sql.DB
	q  string
}

// QueryRowContext runs the statement.
func (p preparedRead) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	if p.st != nil {
		return p.st.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, p.q, args...)
}

// QueryContext runs the statement.
func (p preparedRead) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	if p.st != nil {
		return p.st.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, p.q, args...)
}

// readStmt returns q prepared on the read pool (once per service).
func (s *Service) readStmt(ctx context.Context, q string) preparedRead {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if p := s.readStmts[q]; p != nil {
		return preparedRead{st: p}
	}
	p, err := s.st.Reader().PrepareContext(ctx, q)
	if err != nil {
		return preparedRead{db: s.st.Reader(), q: q}
	}
	if s.readStmts == nil {
		s.readStmts = map[string]*sql.Stmt{}
	}
	s.readStmts[q] = p
	return preparedRead{st: p}
}
