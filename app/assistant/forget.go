package assistant

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// ForgetNamespace is the custom-id namespace of /forget's buttons
// (m:assistant:forget:…), a core one the bot routes to Forget.
const ForgetNamespace = "assistant"

// ActionForget is the audit action of a member's /forget, audited as that
// member ("discord:<id>").
const ActionForget = "assistant.forget"

// ForgetConfirmWindow is how long /forget's confirmation button works;
// a later click deletes nothing.
const ForgetConfirmWindow = 10 * time.Minute

// Texts of /forget (ephemeral).
const (
	forgetNothing   = "You have no conversations or messages with the assistant in this server: there is nothing to delete."
	forgetRunning   = "The assistant is still working on something of yours here. Wait for it (or /stop it), then /forget again."
	forgetCancelled = "Cancelled: nothing was deleted."
	forgetExpired   = "This confirmation has expired: nothing was deleted. Run /forget again."
	forgetNotYours  = "This confirmation is someone else's: run /forget for your own."
	forgetKept      = "Your token counts stay in the usage totals, which hold no content."
)

const (
	forgetKey     = "forget"
	forgetConfirm = "yes"
	forgetCancel  = "no"
)

// Forget is /forget: a member deletes their own conversations with the
// assistant in a guild (every row of them), their turns in others'
// conversations there with those turns' messages and tool calls, and any
// other message they wrote there, after an ephemeral confirmation. The
// usage roll-up keeps their token counts (it holds no content). It
// answers the command (HandleCommand) and its buttons (HandleComponent).
type Forget struct {
	st  writer
	log *slog.Logger
	now func() time.Time
}

// NewForget returns /forget over st; now is the clock (nil: time.Now).
func NewForget(st writer, logger *slog.Logger, now func() time.Time) *Forget {
	if logger == nil {
		logger = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Forget{st: st, log: logger, now: now}
}

// ForgetCounts is what /forget would delete (or deleted) of a member in a
// guild.
type ForgetCounts struct {
	// Conversations are the member's own.
	Conversations int
	// Messages are every message deleted: their conversations', their
	// turns' in others' conversations and their own elsewhere.
	Messages int
	// ToolCalls are the tool-call rows of the deleted turns.
	ToolCalls int
	// Running is the member's turns still running there (nothing is
	// deleted while one runs).
	Running int
}

func (c ForgetCounts) empty() bool {
	return c.Conversations == 0 && c.Messages == 0 && c.ToolCalls == 0
}

// The member's rows in a guild (arguments: guild, user).
const (
	forgetConvsSQL = `SELECT id FROM kimi_assistant_conversations WHERE guild_id = ?1 AND owner_id = ?2`
	forgetTurnsSQL = `SELECT id FROM kimi_assistant_turns WHERE (guild_id = ?1 AND user_id = ?2) OR conversation_id IN (` + forgetConvsSQL + `)`
	forgetCountSQL = `SELECT
		(SELECT count(*) FROM kimi_assistant_conversations WHERE guild_id = ?1 AND owner_id = ?2),
		(SELECT count(*) FROM kimi_assistant_messages WHERE turn_id IN (` + forgetTurnsSQL + `)
			OR conversation_id IN (` + forgetConvsSQL + `)
			OR (author_id = ?2 AND conversation_id IN (SELECT id FROM kimi_assistant_conversations WHERE guild_id = ?1))),
		(SELECT count(*) FROM kimi_assistant_tool_calls WHERE turn_id IN (` + forgetTurnsSQL + `)),
		(SELECT count(*) FROM kimi_assistant_turns WHERE status = 'running' AND id IN (` + forgetTurnsSQL + `))`
)

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func countForget(ctx context.Context, q rowQuerier, guildID, userID uint64) (ForgetCounts, error) {
	var c ForgetCounts
	if err := q.QueryRowContext(ctx, forgetCountSQL, int64(guildID), int64(userID)).
		Scan(&c.Conversations, &c.Messages, &c.ToolCalls, &c.Running); err != nil {
		return ForgetCounts{}, fmt.Errorf("assistant: forget: count: %w", err)
	}
	return c, nil
}

// Count reports what ForgetMember would delete of userID in guildID.
func (f *Forget) Count(ctx context.Context, guildID, userID uint64) (ForgetCounts, error) {
	return countForget(ctx, f.st.Reader(), guildID, userID)
}

// errForgetRunning refuses a /forget while one of the member's turns runs.
var errForgetRunning = errors.New("assistant: forget: a turn is running")

// ForgetMember deletes userID's rows in guildID in one write transaction
// with an ActionForget audit row (as "discord:<id>"), and returns what it
// deleted; nothing while one of their turns runs.
func (f *Forget) ForgetMember(ctx context.Context, guildID, userID uint64) (ForgetCounts, error) {
	var c ForgetCounts
	err := f.st.Write(ctx, func(tx *sql.Tx) error {
		var err error
		if c, err = countForget(ctx, tx, guildID, userID); err != nil {
			return err
		}
		if c.Running > 0 {
			return errForgetRunning
		}
		g, u := int64(guildID), int64(userID)
		for _, q := range []string{
			// Their conversations, every row with them (ON DELETE CASCADE).
			`DELETE FROM kimi_assistant_conversations WHERE guild_id = ?1 AND owner_id = ?2`,
			// Their turns in others' conversations, with the turns'
			// messages and tool calls.
			`DELETE FROM kimi_assistant_turns WHERE guild_id = ?1 AND user_id = ?2`,
			`DELETE FROM kimi_assistant_messages WHERE author_id = ?2
				AND conversation_id IN (SELECT id FROM kimi_assistant_conversations WHERE guild_id = ?1)`,
		} {
			if _, err := tx.ExecContext(ctx, q, g, u); err != nil {
				return fmt.Errorf("assistant: forget: %w", err)
			}
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: f.now(), Actor: "discord:" + strconv.FormatUint(userID, 10),
			Action: ActionForget, Target: "guild:" + strconv.FormatUint(guildID, 10),
			Detail: fmt.Sprintf("a member deleted their assistant data here: %d conversation(s), %d message(s), %d tool call(s); usage totals kept",
				c.Conversations, c.Messages, c.ToolCalls)})
	})
	if err != nil {
		return ForgetCounts{}, err
	}
	return c, nil
}

// HandleCommand answers /forget with what it would delete and the
// confirmation buttons (ephemeral), or says there is nothing to delete.
func (f *Forget) HandleCommand(ctx context.Context, _ sdk.TrustTier, in sdk.Interaction) error {
	c, err := f.Count(ctx, in.GuildID(), in.UserID())
	if err != nil {
		return err
	}
	switch {
	case c.Running > 0:
		return in.Respond(ctx, sdk.Response{Content: forgetRunning, Ephemeral: true})
	case c.empty():
		return in.Respond(ctx, sdk.Response{Content: forgetNothing, Ephemeral: true})
	}
	user := strconv.FormatUint(in.UserID(), 10)
	expires := strconv.FormatInt(f.now().Add(ForgetConfirmWindow).Unix(), 10)
	return in.Respond(ctx, sdk.Response{Ephemeral: true, Content: fmt.Sprintf(
		"This deletes, in this server, %s, %s and %s of yours with the assistant. It cannot be undone. %s",
		plural(c.Conversations, "conversation"), plural(c.Messages, "message"), plural(c.ToolCalls, "tool call"), forgetKept),
		Components: []sdk.Component{
			sdk.ButtonSpec{Key: forgetKey, Label: "Delete my data", Style: sdk.ButtonDanger, Parts: []string{forgetConfirm, user, expires}},
			sdk.ButtonSpec{Key: forgetKey, Label: "Cancel", Style: sdk.ButtonSecondary, Parts: []string{forgetCancel, user}},
		}})
}

// HandleComponent answers /forget's buttons: Cancel, or Delete (only the
// member who ran it, within ForgetConfirmWindow), replacing the
// confirmation with the outcome.
func (f *Forget) HandleComponent(ctx context.Context, kind sdk.ComponentKind, _ sdk.TrustTier, in sdk.Interaction) error {
	id, ok := sdk.ParseCustomID(in.CustomID())
	if !ok || kind != sdk.ComponentButton || id.Key != forgetKey || len(id.Parts) < 2 {
		return host.ErrNoHandler
	}
	if id.Parts[1] != strconv.FormatUint(in.UserID(), 10) {
		return in.Respond(ctx, sdk.Response{Content: forgetNotYours, Ephemeral: true})
	}
	switch {
	case id.Parts[0] == forgetCancel:
		return in.EditOriginal(ctx, sdk.Response{Content: forgetCancelled})
	case id.Parts[0] != forgetConfirm || len(id.Parts) != 3:
		return host.ErrNoHandler
	}
	expires, err := strconv.ParseInt(id.Parts[2], 10, 64)
	if err != nil || !f.now().Before(time.Unix(expires, 0)) {
		return in.EditOriginal(ctx, sdk.Response{Content: forgetExpired})
	}
	c, err := f.ForgetMember(ctx, in.GuildID(), in.UserID())
	switch {
	case errors.Is(err, errForgetRunning):
		return in.EditOriginal(ctx, sdk.Response{Content: forgetRunning})
	case err != nil:
		return err
	}
	f.log.Info("a member deleted their data", "guild_id", in.GuildID(), "user_id", in.UserID(),
		"conversations", c.Conversations, "messages", c.Messages, "tool_calls", c.ToolCalls)
	return in.EditOriginal(ctx, sdk.Response{Content: fmt.Sprintf("Deleted %s, %s and %s of yours in this server. %s",
		plural(c.Conversations, "conversation"), plural(c.Messages, "message"), plural(c.ToolCalls, "tool call"), forgetKept)})
}
