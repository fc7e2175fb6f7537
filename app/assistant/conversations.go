package assistant

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kimiapp/kimi/app/internal/signal"
	"github.com/kimiapp/kimi/app/store"
)

// ErrTurnRunning reports a turn begun on a conversation that already has
// one running: turns on one root run one at a time (the running-turn
// unique index enforces it in SQL).
var ErrTurnRunning = errors.New("assistant: a turn is already running in this conversation")

// MaxExcerpt is the most bytes of a tool call's arguments or result kept.
const MaxExcerpt = 2048

// maxContent is the most bytes of a transcript message kept (the
// migration's CHECK).
const maxContent = 100000

// Turn statuses.
const (
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	StatusCancelled   = "cancelled"
)

// Trigger kinds: a Discord message (mention, reply, text invocation) or
// an /ask interaction.
const (
	KindMessage = "message"
	KindAsk     = "ask"
)

// writer is the store's durable write: one transaction, with the busy and
// disk-full classification of store.Write.
type writer interface {
	Write(ctx context.Context, fn func(tx *sql.Tx) error) error
	Reader() *sql.DB
	Writer() *sql.DB
}

var _ writer = (*store.Store)(nil)

// Conversations is the assistant's conversation storage: roots, the
// delivered-message map, the transcript, turns, tool calls and activated
// tools, in the kimi_assistant_* tables. Safe for concurrent use.
type Conversations struct {
	st      writer
	now     func() time.Time
	changed signal.Watchers // a turn began or ended, a conversation was deleted (Watch)
	// usage is the last usage report (usagereport.go); meter counts
	// usage since the process started (meter.go).
	usage usageCache
	// prepared are the writer's prepared statements (prepared.go).
	prepared preparedSet
	// logPages are the conversation log's last pages (conversations_log.go).
	logPages logPageCache
	meter    Meter
	prune    pruner
}

// NewConversations returns the conversation storage over st; now is the
// clock (nil: time.Now).
func NewConversations(st writer, now func() time.Time) *Conversations {
	if now == nil {
		now = time.Now
	}
	return &Conversations{st: st, now: now}
}

// Place is where a conversation happens: a guild channel or thread
// (ParentID the thread's parent) or a DM (GuildID 0, DMUserID the user).
type Place struct {
	GuildID, ChannelID, ParentID, DMUserID uint64
}

func (p Place) validate() error {
	switch {
	case p.ChannelID == 0:
		return errors.New("no channel")
	case p.GuildID == 0 && p.DMUserID == 0:
		return errors.New("neither a guild nor a DM user")
	case p.GuildID != 0 && p.DMUserID != 0:
		return errors.New("both a guild and a DM user")
	case p.GuildID == 0 && p.ParentID != 0:
		return errors.New("a DM has no parent channel")
	}
	return nil
}

// Trigger is the message (or /ask interaction) a turn answers.
type Trigger struct {
	Place Place
	// Kind is KindMessage or KindAsk; MessageID is the message's id or
	// the interaction's.
	Kind      string
	MessageID uint64
	// ReplyTo is the message it replies to (0: none). A reply to a
	// message Kimi delivered continues that message's conversation.
	ReplyTo uint64
	// AuthorID and AuthorName are the caller; the name is sanitized
	// (SanitizeName) before it is stored.
	AuthorID   uint64
	AuthorName string
	Text       string
	// OwnerOnly makes a new root continue only for its owner (/ask
	// private:true).
	OwnerOnly bool
}

func (t Trigger) validate() error {
	if err := t.Place.validate(); err != nil {
		return err
	}
	switch {
	case t.Kind != KindMessage && t.Kind != KindAsk:
		return fmt.Errorf("unknown trigger kind %q", t.Kind)
	case t.MessageID == 0:
		return errors.New("no trigger message id")
	case t.AuthorID == 0:
		return errors.New("no author id")
	case len(t.Text) > maxContent:
		return fmt.Errorf("text of %d bytes (at most %d)", len(t.Text), maxContent)
	}
	return nil
}

// Conversation is one root.
type Conversation struct {
	ID            int64
	Place         Place
	RootMessageID uint64
	OwnerID       uint64
	OwnerOnly     bool
	// Continued is true when Open found an existing root.
	Continued bool
}

// Open returns the conversation t belongs to: the conversation of the
// message Kimi delivered that t replies to, in the same channel, unless
// that root is owner-only and t's author is not its owner; otherwise a new
// root keyed on t's message, owned by its author (an /ask always starts
// one). Opening the same trigger twice returns the same root.
func (c *Conversations) Open(ctx context.Context, t Trigger) (Conversation, error) {
	if err := t.validate(); err != nil {
		return Conversation{}, fmt.Errorf("assistant: open conversation: %w", err)
	}
	var conv Conversation
	err := c.write(ctx, func(tx txn) error {
		if t.ReplyTo != 0 && t.Kind == KindMessage {
			var err error
			conv, err = scanConversation(tx.QueryRowContext(ctx, `SELECT c.id, c.guild_id, c.channel_id, c.parent_id, c.dm_user_id, c.root_message_id, c.owner_id, c.owner_only
				FROM kimi_assistant_delivered d JOIN kimi_assistant_conversations c ON c.id = d.conversation_id
				WHERE d.message_id = ? AND d.channel_id = ?`, int64(t.ReplyTo), int64(t.Place.ChannelID)))
			switch {
			case err == nil && (!conv.OwnerOnly || conv.OwnerID == t.AuthorID):
				conv.Continued = true
				return nil
			case err != nil && !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		now := c.now().UnixMilli()
		p := t.Place
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_conversations
			(guild_id, channel_id, parent_id, dm_user_id, root_message_id, owner_id, owner_only, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel_id, root_message_id) DO NOTHING`,
			int64(p.GuildID), int64(p.ChannelID), int64(p.ParentID), int64(p.DMUserID), int64(t.MessageID),
			int64(t.AuthorID), t.OwnerOnly, now, now); err != nil {
			return err
		}
		var err error
		conv, err = scanConversation(tx.QueryRowContext(ctx, `SELECT id, guild_id, channel_id, parent_id, dm_user_id, root_message_id, owner_id, owner_only
			FROM kimi_assistant_conversations WHERE channel_id = ? AND root_message_id = ?`, int64(p.ChannelID), int64(t.MessageID)))
		return err
	})
	if err != nil {
		return Conversation{}, fmt.Errorf("assistant: open conversation: %w", err)
	}
	return conv, nil
}

// Continues reports whether a message of userID replying to messageID in
// channelID continues a conversation, as Open would route it: messageID
// is a message Kimi delivered there, and its root is not owner-only or is
// userID's. It only reads.
func (c *Conversations) Continues(ctx context.Context, channelID, messageID, userID uint64) (bool, error) {
	if channelID == 0 || messageID == 0 {
		return false, nil
	}
	var owner int64
	var ownerOnly bool
	err := c.st.Reader().QueryRowContext(ctx, `SELECT c.owner_id, c.owner_only FROM kimi_assistant_delivered d
		JOIN kimi_assistant_conversations c ON c.id = d.conversation_id WHERE d.message_id = ? AND d.channel_id = ?`,
		int64(messageID), int64(channelID)).Scan(&owner, &ownerOnly)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("assistant: route a reply: %w", err)
	}
	return !ownerOnly || uint64(owner) == userID, nil
}

func scanConversation(row *sql.Row) (Conversation, error) {
	var c Conversation
	var g, ch, par, dm, root, owner int64
	if err := row.Scan(&c.ID, &g, &ch, &par, &dm, &root, &owner, &c.OwnerOnly); err != nil {
		return Conversation{}, err
	}
	c.Place = Place{GuildID: uint64(g), ChannelID: uint64(ch), ParentID: uint64(par), DMUserID: uint64(dm)}
	c.RootMessageID, c.OwnerID = uint64(root), uint64(owner)
	return c, nil
}

// TurnID names a turn.
type TurnID int64

// BeginTurn records a running turn of conv answering t and t's message in
// the transcript, in one transaction. A conversation with a running turn
// refuses another with ErrTurnRunning.
func (c *Conversations) BeginTurn(ctx context.Context, conv Conversation, t Trigger, reserved ...string) (TurnID, error) {
	if err := t.validate(); err != nil {
		return 0, fmt.Errorf("assistant: begin turn: %w", err)
	}
	var id TurnID
	err := c.write(ctx, func(tx txn) error {
		now := c.now().UnixMilli()
		err := tx.QueryRowContext(ctx, `INSERT INTO kimi_assistant_turns
			(conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms)
			VALUES (?, ?, ?, ?, ?, ?, 'running', ?) RETURNING id`,
			conv.ID, t.Kind, int64(t.MessageID), int64(t.AuthorID), int64(t.Place.GuildID), int64(t.Place.ChannelID), now).Scan(&id)
		if isUnique(err) {
			return ErrTurnRunning
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_messages
			(conversation_id, turn_id, role, author_id, author_name, discord_message_id, content, created_ms)
			VALUES (?, ?, 'user', ?, ?, ?, ?, ?)`,
			conv.ID, id, int64(t.AuthorID), SanitizeName(t.AuthorName, reserved...), int64(t.MessageID), t.Text, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE kimi_assistant_conversations SET updated_ms = ? WHERE id = ?`, now, conv.ID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("assistant: begin turn: %w", err)
	}
	c.changed.Notify()
	return id, nil
}

func isUnique(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// Usage is one model response's accounting.
type Usage struct {
	// Model is the model that served the response ("" keeps the last).
	Model                                        string
	PromptTokens, CompletionTokens, CachedTokens int64
}

// RecordUsage adds one model response to a turn as it arrives: one more
// iteration, its tokens, and the model that served it; and, in the same
// transaction, to the day's usage roll-up (one more call and its tokens,
// under the model that served it), so a turn that fails later still
// accounts what the provider billed.
func (c *Conversations) RecordUsage(ctx context.Context, turn TurnID, u Usage) error {
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.CachedTokens < 0 {
		return fmt.Errorf("assistant: record usage: negative token count")
	}
	model := clip(u.Model, 200)
	err := c.usageWrite(ctx, func(tx txn, day string) error {
		var guild, user int64
		var served string
		err := tx.QueryRowContext(ctx, `UPDATE kimi_assistant_turns SET iterations = iterations + 1,
			prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, cached_tokens = cached_tokens + ?,
			model_served = CASE WHEN ? = '' THEN model_served ELSE ? END WHERE id = ? RETURNING guild_id, user_id, model_served`,
			u.PromptTokens, u.CompletionTokens, u.CachedTokens, model, model, int64(turn)).Scan(&guild, &user, &served)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		return addUsageTx(ctx, tx, day, guild, user, served, u)
	})
	if err != nil {
		return fmt.Errorf("assistant: record usage of turn %d: %w", turn, err)
	}
	c.meter.response(model, u)
	return nil
}

// ToolCall is one tool call of a turn, in the order the model made them.
type ToolCall struct {
	// Seq is the call's 1-based order in the turn.
	Seq int
	// Tool is the tool's name; Module its module ("" for a core tool
	// such as browse_tools).
	Tool, Module string
	// Outcome is one of the Outcome constants (tools.go).
	Outcome  Outcome
	Duration time.Duration
	// Arguments and Result are stored clipped to MaxExcerpt bytes.
	Arguments, Result string
}

// RecordToolCall records a tool call of a turn.
func (c *Conversations) RecordToolCall(ctx context.Context, turn TurnID, call ToolCall) error {
	switch {
	case call.Seq < 1:
		return fmt.Errorf("assistant: record tool call: sequence %d (from 1)", call.Seq)
	case call.Tool == "" || len(call.Tool) > 64:
		return fmt.Errorf("assistant: record tool call: tool name of %d bytes (1 to 64)", len(call.Tool))
	case len(call.Module) > 64:
		return fmt.Errorf("assistant: record tool call: module name of %d bytes (at most 64)", len(call.Module))
	}
	switch call.Outcome {
	case OutcomeOK, OutcomeUnknown, OutcomeBadArgs, OutcomeInactive, OutcomeFailed, OutcomeTruncated, OutcomeTimeout, OutcomeCancelled:
	default:
		return fmt.Errorf("assistant: record tool call: unknown outcome %q", call.Outcome)
	}
	err := c.usageWrite(ctx, func(tx txn, day string) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_tool_calls
			(turn_id, seq, tool, module, outcome, duration_ms, arguments, result, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			int64(turn), call.Seq, call.Tool, call.Module, call.Outcome, max(call.Duration.Milliseconds(), 0),
			clip(call.Arguments, MaxExcerpt), clip(call.Result, MaxExcerpt), c.now().UnixMilli()); err != nil || call.Outcome != OutcomeFailed {
			return err
		}
		// A failed tool call counts as a tool error in the roll-up.
		var guild, user int64
		if err := tx.QueryRowContext(ctx, `SELECT guild_id, user_id FROM kimi_assistant_turns WHERE id = ?`, int64(turn)).Scan(&guild, &user); err != nil {
			return err
		}
		return addErrorTx(ctx, tx, day, guild, user, UsageToolError)
	})
	if err != nil {
		return fmt.Errorf("assistant: record tool call %d of turn %d: %w", call.Seq, turn, err)
	}
	return nil
}

// Finish is how a turn ended.
type Finish struct {
	// Status is StatusDone, StatusFailed or StatusCancelled.
	Status string
	// ErrorKind names a failure ("" when done): "provider", "deadline", …
	ErrorKind string
	// UsageKind is the roll-up's error kind (one of the Usage* kinds;
	// "": mapped from ErrorKind, none for a turn done or cancelled).
	UsageKind string
	// Reply is the text delivered ("" when nothing was), stored as the
	// assistant's message with BotID as its author.
	Reply string
	BotID uint64
}

// FinishTurn ends a running turn: its status, duration (from its start to
// now) and error kind, and the delivered reply in the transcript; in the
// same transaction it counts the turn in the day's usage roll-up (under
// its last response's model) and a failure in its errors by kind. A turn
// that is no longer running (marked interrupted at start-up) is left as
// it is, and FinishTurn reports store.ErrNotFound.
func (c *Conversations) FinishTurn(ctx context.Context, turn TurnID, f Finish) error {
	switch f.Status {
	case StatusDone, StatusFailed, StatusCancelled:
	default:
		return fmt.Errorf("assistant: finish turn %d: status %q (done, failed or cancelled)", turn, f.Status)
	}
	if len(f.ErrorKind) > 64 {
		return fmt.Errorf("assistant: finish turn %d: error kind of %d bytes (at most 64)", turn, len(f.ErrorKind))
	}
	kind := f.UsageKind
	if kind == "" && f.Status == StatusFailed {
		kind = usageKindOf(f.ErrorKind)
	}
	var model string
	err := c.usageWrite(ctx, func(tx txn, day string) error {
		now := c.now().UnixMilli()
		var conv, guild, user int64
		err := tx.QueryRowContext(ctx, `UPDATE kimi_assistant_turns SET status = ?, error_kind = ?, duration_ms = max(? - started_ms, 0)
			WHERE id = ? AND status = 'running' RETURNING conversation_id, guild_id, user_id, model_served`,
			f.Status, f.ErrorKind, now, int64(turn)).Scan(&conv, &guild, &user, &model)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		// The turn is counted once, at its end, under its last
		// response's model ('' without one).
		if err := addTurnTx(ctx, tx, day, guild, user, model); err != nil {
			return err
		}
		if kind != "" {
			if err := addErrorTx(ctx, tx, day, guild, user, kind); err != nil {
				return err
			}
		}
		if f.Reply == "" {
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO kimi_assistant_messages
			(conversation_id, turn_id, role, author_id, author_name, content, created_ms) VALUES (?, ?, 'assistant', ?, '', ?, ?)`,
			conv, int64(turn), int64(f.BotID), clip(f.Reply, maxContent), now)
		return err
	})
	if err != nil {
		return fmt.Errorf("assistant: finish turn %d: %w", turn, err)
	}
	c.changed.Notify()
	c.meter.turn(model, f.Status)
	return nil
}

// RecordDelivered maps a message Kimi sent in channelID to conv, so a
// reply to it continues conv (after a restart too). Call it as each chunk
// is sent; recording a message twice is harmless.
func (c *Conversations) RecordDelivered(ctx context.Context, conv Conversation, channelID, messageID uint64) error {
	if channelID == 0 || messageID == 0 {
		return fmt.Errorf("assistant: record delivered message: channel %d, message %d (both > 0)", channelID, messageID)
	}
	err := c.write(ctx, func(tx txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_delivered (message_id, conversation_id, channel_id, created_ms)
			VALUES (?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`, int64(messageID), conv.ID, int64(channelID), c.now().UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("assistant: record delivered message %d: %w", messageID, err)
	}
	return nil
}

// SetStatusMessage records the status message turn sent (its one message
// of progress, which it deletes when it ends), so that a crash that leaves
// it standing lets the next start delete it (Interrupted). Only a running
// turn's is recorded; a turn that already ended is store.ErrNotFound.
func (c *Conversations) SetStatusMessage(ctx context.Context, turn TurnID, messageID uint64) error {
	if messageID == 0 {
		return fmt.Errorf("assistant: record the status message of turn %d: no message id", turn)
	}
	err := c.write(ctx, func(tx txn) error {
		return exactlyOne(tx.ExecContext(ctx, `UPDATE kimi_assistant_turns SET status_message_id = ? WHERE id = ? AND status = 'running'`,
			int64(messageID), int64(turn)))
	})
	if err != nil {
		return fmt.Errorf("assistant: record the status message of turn %d: %w", turn, err)
	}
	return nil
}

// Interrupted is a turn a crash left running, as start-up needs it to
// remove the ⏳ reaction from its trigger (Kind KindMessage) and delete
// the status message it left (StatusMessageID, 0 for none), both in
// ChannelID.
type Interrupted struct {
	Turn                        TurnID
	Kind                        string
	ChannelID, TriggerMessageID uint64
	StatusMessageID             uint64
}

// MarkInterrupted marks every running turn interrupted, with its duration
// up to now, and returns them. Run it at start-up, before any turn begins.
func (c *Conversations) MarkInterrupted(ctx context.Context) ([]Interrupted, error) {
	var out []Interrupted
	err := c.write(ctx, func(tx txn) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE kimi_assistant_turns SET status = 'interrupted', error_kind = 'interrupted',
			duration_ms = max(? - started_ms, 0) WHERE status = 'running'
			RETURNING id, trigger_kind, channel_id, trigger_message_id, status_message_id`, c.now().UnixMilli())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var it Interrupted
			var ch, msg, status int64
			if err := rows.Scan(&it.Turn, &it.Kind, &ch, &msg, &status); err != nil {
				return err
			}
			it.ChannelID, it.TriggerMessageID, it.StatusMessageID = uint64(ch), uint64(msg), uint64(status)
			out = append(out, it)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("assistant: mark interrupted turns: %w", err)
	}
	if len(out) > 0 {
		c.changed.Notify()
	}
	return out, nil
}

// ActivateTools records that browse_tools loaded tools in conv; they stay
// activated for the conversation.
func (c *Conversations) ActivateTools(ctx context.Context, conv Conversation, tools ...string) error {
	for _, t := range tools {
		if t == "" || len(t) > 64 {
			return fmt.Errorf("assistant: activate tools: tool name of %d bytes (1 to 64)", len(t))
		}
	}
	err := c.write(ctx, func(tx txn) error {
		now := c.now().UnixMilli()
		for _, t := range tools {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_tools (conversation_id, tool, activated_ms) VALUES (?, ?, ?)
				ON CONFLICT DO NOTHING`, conv.ID, t, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("assistant: activate tools: %w", err)
	}
	return nil
}

// ActivatedTools returns the tools activated in conv, by name.
func (c *Conversations) ActivatedTools(ctx context.Context, conv Conversation) ([]string, error) {
	rows, err := c.st.Reader().QueryContext(ctx, `SELECT tool FROM kimi_assistant_tools WHERE conversation_id = ? ORDER BY tool`, conv.ID)
	if err != nil {
		return nil, fmt.Errorf("assistant: activated tools: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("assistant: activated tools: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("assistant: activated tools: %w", err)
	}
	return out, nil
}

// exactlyOne turns an UPDATE that matched no row into store.ErrNotFound.
func exactlyOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// clip cuts s to at most n bytes at a code point boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
