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

// Texts of /forget (ephemeral); the DM ones where the text says where.
const (
	forgetNothing   = "You have no conversations or messages with the assistant in this server: there is nothing to delete."
	forgetNothingDM = "You have no conversations or messages with the assistant in our direct messages: there is nothing to delete."
	forgetRunning   = "The assistant is still working on something of yours here. Wait for it (or /stop it), then /forget again."
	forgetCancelled = "Cancelled: nothing was deleted."
	forgetExpired   = "This confirmation has expired: nothing was deleted. Run /forget again."
	forgetNotYours  = "This confirmation is someone else's: run /forget for your own."
	forgetKept      = "Your token counts stay in the usage totals, which hold no content."
)

// forgetWhere is where /forget's texts say it deletes: this server, or
// the DMs (guild 0).
func forgetWhere(guildID uint64) string {
	if guildID == 0 {
		return "in our direct messages"
	}
	return "in this server"
}

const (
	forgetKey     = "forget"
	forgetConfirm = "yes"
	forgetCancel  = "no"
)

// Forget is /forget: a member deletes their own conversations with the
// assistant in a guild (every row of them), their turns in others'
// conversations there with those turns' messages and tool calls, and any
// other message they wrote there, after an ephemeral confirmation; in a
// DM with the bot, their DM conversations (guild 0, dm_user_id theirs)
// with every row of them, never a guild's. The
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

// forgetScope is the SQL of a member's rows in one place (arguments:
// guild, user): their conversations, their turns (also in others'
// conversations) and their other messages.
type forgetScope struct {
	convs, turns, others string
	count                string
}

func newForgetScope(convs, ownTurns, others string) forgetScope {
	turns := `SELECT id FROM kimi_assistant_turns WHERE ` + ownTurns + ` OR conversation_id IN (` + convs + `)`
	return forgetScope{convs: convs, turns: ownTurns, others: others, count: `SELECT
		(SELECT count(*) FROM (` + convs + `)),
		(SELECT count(*) FROM kimi_assistant_messages WHERE turn_id IN (` + turns + `)
			OR conversation_id IN (` + convs + `) OR ` + others + `),
		(SELECT count(*) FROM kimi_assistant_tool_calls WHERE turn_id IN (` + turns + `)),
		(SELECT count(*) FROM kimi_assistant_turns WHERE status = 'running' AND id IN (` + turns + `))`}
}

var (
	// forgetGuild is a member's rows in a guild: the conversations they
	// own there, their turns there, any message they wrote there. A DM
	// row (guild 0) never matches.
	forgetGuild = newForgetScope(`SELECT id FROM kimi_assistant_conversations WHERE guild_id = ?1 AND owner_id = ?2`,
		`(guild_id = ?1 AND user_id = ?2)`,
		`(author_id = ?2 AND conversation_id IN (SELECT id FROM kimi_assistant_conversations WHERE guild_id = ?1))`)
	// forgetDM is a user's rows in their DMs with the bot (guild 0): the
	// conversations whose DM user they are, every row of them; nobody
	// else takes part there, and no guild row matches.
	forgetDM = newForgetScope(`SELECT id FROM kimi_assistant_conversations WHERE guild_id = ?1 AND dm_user_id = ?2`,
		`(guild_id = ?1 AND user_id = ?2 AND conversation_id IN (SELECT id FROM kimi_assistant_conversations WHERE guild_id = ?1 AND dm_user_id = ?2))`,
		`(author_id = ?2 AND conversation_id IN (SELECT id FROM kimi_assistant_conversations WHERE guild_id = ?1 AND dm_user_id = ?2))`)
)

// scopeOf is the scope of guildID (0: the DMs).
func scopeOf(guildID uint64) forgetScope {
	if guildID == 0 {
		return forgetDM
	}
	return forgetGuild
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func countForget(ctx context.Context, q rowQuerier, guildID, userID uint64) (ForgetCounts, error) {
	var c ForgetCounts
	if err := q.QueryRowContext(ctx, scopeOf(guildID).count, int64(guildID), int64(userID)).
		Scan(&c.Conversations, &c.Messages, &c.ToolCalls, &c.Running); err != nil {
		return ForgetCounts{}, fmt.Errorf("assistant: forget: count: %w", err)
	}
	return c, nil
}

// Count reports what ForgetMember would delete of userID in guildID (0:
// their DMs).
func (f *Forget) Count(ctx context.Context, guildID, userID uint64) (ForgetCounts, error) {
	return countForget(ctx, f.st.Reader(), guildID, userID)
}

// errForgetRunning refuses a /forget while one of the member's turns runs.
var errForgetRunning = errors.New("assistant: forget: a turn is running")

// ForgetMember deletes userID's rows in guildID (0: their DM
// conversations with the bot, guild_id 0 and dm_user_id userID) in one
// write transaction with an ActionForget audit row (as "discord:<id>", on
// "guild:<id>", or on the user themself for DMs), and returns what it
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
		g, u, sc := int64(guildID), int64(userID), scopeOf(guildID)
		for _, q := range []string{
			// Their conversations, every row with them (ON DELETE CASCADE).
			`DELETE FROM kimi_assistant_conversations WHERE id IN (` + sc.convs + `)`,
			// Their turns in others' conversations, with the turns'
			// messages and tool calls.
			`DELETE FROM kimi_assistant_turns WHERE ` + sc.turns,
			`DELETE FROM kimi_assistant_messages WHERE ` + sc.others,
		} {
			if _, err := tx.ExecContext(ctx, q, g, u); err != nil {
				return fmt.Errorf("assistant: forget: %w", err)
			}
		}
		actor := "discord:" + strconv.FormatUint(userID, 10)
		target, detail := "guild:"+strconv.FormatUint(guildID, 10), "a member deleted their assistant data here"
		if guildID == 0 {
			target, detail = actor, "a user deleted their assistant data in their direct messages with the bot"
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: f.now(), Actor: actor, Action: ActionForget, Target: target,
			Detail: fmt.Sprintf("%s: %d conversation(s), %d message(s), %d tool call(s); usage totals kept",
				detail, c.Conversations, c.Messages, c.ToolCalls)})
	})
	if err != nil {
		return ForgetCounts{}, err
	}
	return c, nil
}

// HandlesDirectMessages reports that /forget and its buttons also work in
// a DM with the bot, over the user's DM conversations.
func (f *Forget) HandlesDirectMessages() bool { return true }

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
	case c.empty() && in.GuildID() == 0:
		return in.Respond(ctx, sdk.Response{Content: forgetNothingDM, Ephemeral: true})
	case c.empty():
		return in.Respond(ctx, sdk.Response{Content: forgetNothing, Ephemeral: true})
	}
	user := strconv.FormatUint(in.UserID(), 10)
	expires := strconv.FormatInt(f.now().Add(ForgetConfirmWindow).Unix(), 10)
	return in.Respond(ctx, sdk.Response{Ephemeral: true, Content: fmt.Sprintf(
		"This deletes, %s, %s, %s and %s of yours with the assistant. It cannot be undone. %s", forgetWhere(in.GuildID()),
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
	return in.EditOriginal(ctx, sdk.Response{Content: fmt.Sprintf("Deleted %s, %s and %s of yours %s. %s",
		plural(c.Conversations, "conversation"), plural(c.Messages, "message"), plural(c.ToolCalls, "tool call"),
		forgetWhere(in.GuildID()), forgetKept)})
}
