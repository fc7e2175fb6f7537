package assistant

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// The conversation log: what the admin's /assistant/conversations pages
// read (a page of conversations with their summary, one conversation's
// turns and tool calls) and its delete. The summary columns are kept by
// migration 00014's triggers, so a page never reads all turns.

// LogPageSize is the conversations a log page holds.
const LogPageSize = 25

// maxLogTurns bounds the turns one conversation's page shows (its latest).
const maxLogTurns = 500

// AuditActionConversationDelete is the audit action of a conversation
// deleted from the admin; the target is "conversation <id>" and the detail
// its place and owner, never its text.
const AuditActionConversationDelete = "assistant.conversation.delete"

// Watch signals after a turn begins or ends and after a conversation is
// deleted, until ctx ends: the live conversation list follows it.
func (c *Conversations) Watch(ctx context.Context) <-chan struct{} { return c.changed.Watch(ctx) }

// LogFilter narrows the log; zero fields do not filter.
type LogFilter struct {
	GuildID, ChannelID, UserID uint64
	// Status is the latest turn's status (one of the Status constants).
	Status string
	// ToolErrors keeps the conversations with a tool call that failed
	// (an outcome other than ok and truncated).
	ToolErrors bool
}

// LogCursor is a position in the log (newest first by last activity,
// then id): the page after it starts below it. The zero cursor is the
// first page.
type LogCursor struct {
	UpdatedMS, ID int64
}

// String is the cursor as a query value ("" for the first page).
func (k LogCursor) String() string {
	if k.ID == 0 {
		return ""
	}
	return strconv.FormatInt(k.UpdatedMS, 10) + "-" + strconv.FormatInt(k.ID, 10)
}

// ParseLogCursor reads a cursor written by String ("" is the first page).
func ParseLogCursor(s string) (LogCursor, error) {
	if s == "" {
		return LogCursor{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	u, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || u < 0 || id <= 0 {
		return LogCursor{}, fmt.Errorf("assistant: cursor %q is not <ms>-<id>", s)
	}
	return LogCursor{UpdatedMS: u, ID: id}, nil
}

// LogRow is one conversation's summary: no message text.
type LogRow struct {
	ID               int64
	Place            Place
	OwnerID          uint64
	OwnerOnly        bool
	Created, Updated time.Time
	Turns            int
	// LastStatus is the latest turn's status ("" before any turn).
	LastStatus            string
	Tokens                int64
	ToolCalls, ToolErrors int
	// Tools are the distinct tools called, by name.
	Tools []string
}

// Cursor is the position just after r.
func (r LogRow) Cursor() LogCursor { return LogCursor{UpdatedMS: r.Updated.UnixMilli(), ID: r.ID} }

const logRowColumns = `id, guild_id, channel_id, parent_id, dm_user_id, owner_id, owner_only, created_ms, updated_ms,
	turns, last_status, tokens, tool_calls, tool_errors, tools`

func scanLogRow(sc interface{ Scan(...any) error }, extra ...any) (LogRow, error) {
	var r LogRow
	var g, ch, par, dm, owner, created, updated int64
	var tools string
	if err := sc.Scan(append([]any{&r.ID, &g, &ch, &par, &dm, &owner, &r.OwnerOnly, &created, &updated,
		&r.Turns, &r.LastStatus, &r.Tokens, &r.ToolCalls, &r.ToolErrors, &tools}, extra...)...); err != nil {
		return LogRow{}, err
	}
	r.Place = Place{GuildID: uint64(g), ChannelID: uint64(ch), ParentID: uint64(par), DMUserID: uint64(dm)}
	r.OwnerID = uint64(owner)
	r.Created, r.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	if tools != "" {
		r.Tools = strings.Split(tools, ",")
	}
	return r, nil
}

// LogPage is a page of the log; More says a page after Next exists.
type LogPage struct {
	Rows []LogRow
	Next LogCursor
	More bool
}

// List returns the page of at most LogPageSize conversations after
// cursor, newest activity first, narrowed by f. Each filter has an index
// (migration 00014), and the page's figures are summary columns. A page
// is kept until a conversation changes; the caller must not modify the
// page's rows.
func (c *Conversations) List(ctx context.Context, f LogFilter, after LogCursor) (LogPage, error) {
	var where []string
	var args []any
	if f.GuildID != 0 {
		where, args = append(where, "guild_id = ?"), append(args, int64(f.GuildID))
	}
	if f.ChannelID != 0 {
		where, args = append(where, "channel_id = ?"), append(args, int64(f.ChannelID))
	}
	if f.UserID != 0 {
		where, args = append(where, "owner_id = ?"), append(args, int64(f.UserID))
	}
	if f.Status != "" {
		where, args = append(where, "last_status = ?"), append(args, f.Status)
	}
	if f.ToolErrors {
		where = append(where, "tool_errors > 0")
	}
	if after.ID != 0 {
		where, args = append(where, "(updated_ms, id) < (?, ?)"), append(args, after.UpdatedMS, after.ID)
	}
	q := `SELECT ` + logRowColumns + ` FROM kimi_assistant_conversations`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY updated_ms DESC, id DESC LIMIT ` + strconv.Itoa(LogPageSize+1)
	db := c.st.Reader()
	var version int64
	if err := db.QueryRowContext(ctx, `SELECT version FROM kimi_assistant_log_version WHERE id = 1`).Scan(&version); err != nil {
		return LogPage{}, fmt.Errorf("assistant: list conversations: version: %w", err)
	}
	key := fmt.Sprint(q, args)
	if p, ok := c.logPages.get(version, key); ok {
		return p, nil
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return LogPage{}, fmt.Errorf("assistant: list conversations: %w", err)
	}
	defer rows.Close()
	var p LogPage
	for rows.Next() {
		r, err := scanLogRow(rows)
		if err != nil {
			return LogPage{}, fmt.Errorf("assistant: list conversations: %w", err)
		}
		p.Rows = append(p.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return LogPage{}, fmt.Errorf("assistant: list conversations: %w", err)
	}
	if len(p.Rows) > LogPageSize {
		p.Rows, p.More = p.Rows[:LogPageSize], true
		p.Next = p.Rows[LogPageSize-1].Cursor()
	}
	c.logPages.put(version, key, p)
	return p, nil
}

// logPagesCached bounds the log pages kept for one log version.
const logPagesCached = 64

// logPageCache keeps the log pages read at one log version (migration
// 00016's kimi_assistant_log_version, which goes up with every change of
// a conversation's row): a page is read again only after a change.
type logPageCache struct {
	mu      sync.Mutex
	version int64
	pages   map[string]LogPage
}

func (l *logPageCache) get(version int64, key string) (LogPage, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pages == nil || l.version != version {
		return LogPage{}, false
	}
	p, ok := l.pages[key]
	return p, ok
}

func (l *logPageCache) put(version int64, key string, p LogPage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pages == nil || l.version != version || len(l.pages) >= logPagesCached {
		if version < l.version {
			return // read before a newer page was kept
		}
		l.version, l.pages = version, map[string]LogPage{}
	}
	l.pages[key] = p
}

// LogMessage is a transcript message of a turn. Content is "" unless the
// detail was read with its content.
type LogMessage struct {
	Role       string
	AuthorID   uint64
	AuthorName string
	Content    string
	At         time.Time
}

// LogTurn is one turn with its tool calls, as the conversation's page
// shows it.
type LogTurn struct {
	ID                                           TurnID
	Kind                                         string
	UserID                                       uint64
	Status, ErrorKind, Model                     string
	Started                                      time.Time
	Duration                                     time.Duration
	Iterations                                   int
	PromptTokens, CompletionTokens, CachedTokens int64
	Messages                                     []LogMessage
	// Calls are its tool calls in order; their Arguments and Result are
	// "" unless the detail was read with its content.
	Calls []ToolCall
}

// LogConversation is one conversation: its summary and its turns (the
// latest 500, oldest first).
type LogConversation struct {
	LogRow
	RootMessageID uint64
	Turns         []LogTurn
	// Truncated says older turns than these exist.
	Truncated bool
}

// Detail reads conversation id with its turns, messages and tool calls.
// Without withContent the message text and the tool calls' excerpts are
// not read at all (Show transcripts off). An unknown id is
// store.ErrNotFound.
func (c *Conversations) Detail(ctx context.Context, id int64, withContent bool) (LogConversation, error) {
	db := c.st.Reader()
	var out LogConversation
	var root int64
	var err error
	out.LogRow, err = scanLogRow(db.QueryRowContext(ctx, `SELECT `+logRowColumns+`, root_message_id FROM kimi_assistant_conversations WHERE id = ?`, id), &root)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return LogConversation{}, store.ErrNotFound
	case err != nil:
		return LogConversation{}, fmt.Errorf("assistant: read conversation %d: %w", id, err)
	}
	out.RootMessageID = uint64(root)
	if err := c.readTurns(ctx, db, &out, withContent); err != nil {
		return LogConversation{}, fmt.Errorf("assistant: read conversation %d: %w", id, err)
	}
	return out, nil
}

func (c *Conversations) readTurns(ctx context.Context, db *sql.DB, out *LogConversation, withContent bool) error {
	rows, err := db.QueryContext(ctx, `SELECT id, trigger_kind, user_id, status, error_kind, model_served, started_ms, duration_ms,
		iterations, prompt_tokens, completion_tokens, cached_tokens FROM kimi_assistant_turns WHERE conversation_id = ?
		ORDER BY id DESC LIMIT ?`, out.ID, maxLogTurns+1)
	if err != nil {
		return err
	}
	defer rows.Close()
	index := map[TurnID]int{}
	for rows.Next() {
		var t LogTurn
		var user, started, dur int64
		if err := rows.Scan(&t.ID, &t.Kind, &user, &t.Status, &t.ErrorKind, &t.Model, &started, &dur,
			&t.Iterations, &t.PromptTokens, &t.CompletionTokens, &t.CachedTokens); err != nil {
			return err
		}
		t.UserID, t.Started, t.Duration = uint64(user), time.UnixMilli(started).UTC(), time.Duration(dur)*time.Millisecond
		out.Turns = append(out.Turns, t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(out.Turns) > maxLogTurns {
		out.Turns, out.Truncated = out.Turns[:maxLogTurns], true
	}
	// Oldest first.
	for i, j := 0, len(out.Turns)-1; i < j; i, j = i+1, j-1 {
		out.Turns[i], out.Turns[j] = out.Turns[j], out.Turns[i]
	}
	if len(out.Turns) == 0 {
		return nil
	}
	for i, t := range out.Turns {
		index[t.ID] = i
	}
	first := int64(out.Turns[0].ID)
	content, excerpts := `''`, `'', ''`
	if withContent {
		content, excerpts = `content`, `arguments, result`
	}
	mrows, err := db.QueryContext(ctx, `SELECT turn_id, role, author_id, author_name, `+content+`, created_ms FROM kimi_assistant_messages
		WHERE conversation_id = ? AND turn_id >= ? ORDER BY id`, out.ID, first)
	if err != nil {
		return err
	}
	defer mrows.Close()
	for mrows.Next() {
		var turn TurnID
		var m LogMessage
		var author, at int64
		if err := mrows.Scan(&turn, &m.Role, &author, &m.AuthorName, &m.Content, &at); err != nil {
			return err
		}
		m.AuthorID, m.At = uint64(author), time.UnixMilli(at).UTC()
		if i, ok := index[turn]; ok {
			out.Turns[i].Messages = append(out.Turns[i].Messages, m)
		}
	}
	if err := mrows.Err(); err != nil {
		return err
	}
	crows, err := db.QueryContext(ctx, `SELECT c.turn_id, c.seq, c.tool, c.module, c.outcome, c.duration_ms, `+excerpts+`
		FROM kimi_assistant_tool_calls c JOIN kimi_assistant_turns t ON t.id = c.turn_id
		WHERE t.conversation_id = ? AND t.id >= ? ORDER BY c.turn_id, c.seq`, out.ID, first)
	if err != nil {
		return err
	}
	defer crows.Close()
	for crows.Next() {
		var turn TurnID
		var call ToolCall
		var dur int64
		if err := crows.Scan(&turn, &call.Seq, &call.Tool, &call.Module, &call.Outcome, &dur, &call.Arguments, &call.Result); err != nil {
			return err
		}
		call.Duration = time.Duration(dur) * time.Millisecond
		if i, ok := index[turn]; ok {
			out.Turns[i].Calls = append(out.Turns[i].Calls, call)
		}
	}
	return crows.Err()
}

// Delete deletes conversation id and all its rows (turns, transcript,
// tool calls, delivered messages, activated tools: the schema cascades),
// with an audit row in the same transaction. The usage roll-up is not
// touched. An unknown id is store.ErrNotFound.
func (c *Conversations) Delete(ctx context.Context, id int64, who store.AuditEntry) error {
	err := c.st.Write(ctx, func(tx *sql.Tx) error {
		var g, ch, owner int64
		err := tx.QueryRowContext(ctx, `DELETE FROM kimi_assistant_conversations WHERE id = ? RETURNING guild_id, channel_id, owner_id`, id).
			Scan(&g, &ch, &owner)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		who.Action = AuditActionConversationDelete
		who.Target = "conversation " + strconv.FormatInt(id, 10)
		who.Detail = fmt.Sprintf("guild %d, channel %d, owner %d", g, ch, owner)
		return store.AuditTx(ctx, tx, who)
	})
	if err != nil {
		return fmt.Errorf("assistant: delete conversation %d: %w", id, err)
	}
	c.changed.Notify()
	return nil
}
