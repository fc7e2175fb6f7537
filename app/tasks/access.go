package tasks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/app/internal/stmtcache"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Who may have a task post, and who may still see what it published: the
// rule the tasks own (reference §5.1, §5.2), over the small ports they
// need of Discord (Members, Checker, Readiness; app/discord's adapter
// implements them).

// Members resolves a member's current trust tier (*discord.Bot).
type Members interface {
	Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error)
}

// Readiness waits, for a bounded time or until ctx ends, until Discord can
// answer for guildID (the bot connected and the guild available): a
// delivery resumed at start, before the bot connected, then neither fails
// its row for a connection a moment away nor waits for ever.
type Readiness interface {
	WaitGuild(ctx context.Context, guildID uint64)
}

// AccessOptions configures NewAccess.
type AccessOptions struct {
	// Store holds the tasks' tables (the producer's task and file reads;
	// Authorize does not need it). The access rule needs no Service, so
	// it is built before the results outbox, whose producer it is, and
	// the Service, which publishes into that outbox.
	Store *store.Store
	// Policies gives the guild's scheduled_tasks policy.
	Policies Policies
	// Members and Checker answer for the owner's tier and whether the
	// owner and the bot can post (Authorize).
	Members Members
	Checker Checker
	// Ready (nil: no wait) is waited for before Authorize asks Discord.
	Ready Readiness
	// Results is the Discord side of a publication's access check
	// (CheckAccess).
	Results results.DiscordAccess
}

// Access is the tasks' access rule: the Authorizer re-checked at every
// delivery, and the scheduled results' Producer of the tasks (a
// publication's access check and its files).
type Access struct {
	st       *store.Store
	policies Policies
	members  Members
	checker  Checker
	ready    Readiness
	results  results.DiscordAccess
}

var (
	_ Authorizer       = (*Access)(nil)
	_ results.Producer = (*Access)(nil)
)

// NewAccess returns the tasks' access rule over o.
func NewAccess(o AccessOptions) *Access {
	return &Access{st: o.Store, policies: o.Policies, members: o.Members, checker: o.Checker, ready: o.Ready, results: o.Results}
}

// Authorize returns nil while owner may have the task post in channel
// what needs names: the guild's scheduled_tasks policy enabled, the
// owner's current tier at least its min_tier (staff by default), and
// both the owner and the bot able to post in the channel. A refusal is a
// sentence for the operator; a failure to find out is Unavailable.
func (a *Access) Authorize(ctx context.Context, guildID, ownerID, channelID uint64, needs Needs) error {
	policy := a.policies.TaskPolicy(guildID)
	if !policy.Enabled {
		return fmt.Errorf("scheduled tasks are not enabled in guild %d (its server setup's scheduled_tasks)", guildID)
	}
	if a.ready != nil {
		a.ready.WaitGuild(ctx, guildID)
	}
	minTier := policy.MinTier.Or(sdk.TierStaff)
	tier, err := a.members.Tier(ctx, guildID, ownerID)
	if err != nil {
		return Unavailable(fmt.Errorf("the owner %d's trust tier could not be read: %w", ownerID, err))
	}
	if !tier.AtLeast(minTier) {
		return fmt.Errorf("the owner %d is %s, below %s", ownerID, tier, minTier)
	}
	for _, who := range []struct {
		id   uint64
		name string
	}{{BotUser, "Kimi"}, {ownerID, fmt.Sprintf("the owner %d", ownerID)}} {
		ok, err := a.checker.CanPost(ctx, guildID, who.id, channelID, needs)
		if err != nil {
			return Unavailable(fmt.Errorf("whether %s can post in channel %d could not be checked: %w", who.name, channelID, err))
		}
		if !ok {
			return errors.New(refusal(ctx, a.checker, guildID, who.id, channelID, needs, who.name, "this message needs"))
		}
	}
	return nil
}

// CheckAccess returns nil while pub's task still exists, its guild's
// scheduled tasks are enabled and the Discord side (the guild active, the
// owner's tier at least the policy's min_tier, owner and bot able to view
// every channel) allows it.
func (a *Access) CheckAccess(ctx context.Context, pub results.Publication) error {
	// Prepared once on the read pool: parsing it took more CPU than the
	// rest of a delivery.
	stmt, err := stmtcache.OnPool(ctx, a.st.Reader(), `SELECT 1`+taskFrom+` WHERE t.id = ?`)
	if err != nil {
		return fmt.Errorf("tasks: read task %s: %w", pub.TaskID, err)
	}
	var one int
	if err := stmt.QueryRowContext(ctx, pub.TaskID).Scan(&one); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: task %s was deleted", results.ErrAccessDenied, pub.TaskID)
		}
		return fmt.Errorf("tasks: read task %s: %w", pub.TaskID, err)
	}
	policy := a.policies.TaskPolicy(pub.GuildID)
	if !policy.Enabled {
		return fmt.Errorf("%w: scheduled tasks are not enabled in guild %d", results.ErrAccessDenied, pub.GuildID)
	}
	return a.results.Check(ctx, pub, policy.MinTier.Or(sdk.TierStaff))
}

// ReadFile returns the bytes of attachment attachmentID of run runID: the
// attachment id is the file's name in the run's revision (names are
// unique in a revision, and a post row's file_ids lists them), and it is
// read only when one of the run's sent post rows (not its log row)
// carried it. Larger than limit: an error.
func (a *Access) ReadFile(ctx context.Context, runID, attachmentID string, limit int64) ([]byte, error) {
	db := a.st.Reader()
	var taskID string
	var rev int
	if err := db.QueryRowContext(ctx, `SELECT task_id, revision FROM kimi_task_runs WHERE id = ?`, runID).Scan(&taskID, &rev); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("tasks: run %s does not exist", runID)
		}
		return nil, fmt.Errorf("tasks: read run %s: %w", runID, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT file_ids FROM kimi_task_posts WHERE run_id = ? AND kind = 'post' AND status = 'sent'`, runID)
	if err != nil {
		return nil, fmt.Errorf("tasks: read the posts of run %s: %w", runID, err)
	}
	carried := false
	for rows.Next() && !carried {
		var js string
		if err := rows.Scan(&js); err != nil {
			rows.Close()
			return nil, fmt.Errorf("tasks: read the posts of run %s: %w", runID, err)
		}
		var names []string
		if json.Unmarshal([]byte(js), &names) == nil && slices.Contains(names, attachmentID) {
			carried = true
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("tasks: read the posts of run %s: %w", runID, err)
	}
	if !carried {
		return nil, fmt.Errorf("tasks: no sent post of run %s carried file %q", runID, attachmentID)
	}
	var size int64
	if err := db.QueryRowContext(ctx, `SELECT size FROM kimi_task_files WHERE task_id = ? AND revision = ? AND name = ?`, taskID, rev, attachmentID).Scan(&size); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("tasks: file %q of run %s is gone", attachmentID, runID)
		}
		return nil, fmt.Errorf("tasks: read file %q of run %s: %w", attachmentID, runID, err)
	}
	if size > limit {
		return nil, fmt.Errorf("tasks: file %q of run %s is %d bytes, over the limit of %d", attachmentID, runID, size, limit)
	}
	var data []byte
	if err := db.QueryRowContext(ctx, `SELECT bytes FROM kimi_task_files WHERE task_id = ? AND revision = ? AND name = ?`, taskID, rev, attachmentID).Scan(&data); err != nil {
		return nil, fmt.Errorf("tasks: read file %q of run %s: %w", attachmentID, runID, err)
	}
	return data, nil
}
