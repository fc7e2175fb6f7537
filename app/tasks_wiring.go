package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The scheduled tasks' wiring (reference §5.1): the Poster over the bot's
// SendTaskMessage, the Authorizer re-checked at every delivery, the
// results Producer (access checks and file reads of a run's
// publication), and newTasks, which serve calls.

// taskSender is the bot's send of a task's message (*discord.Bot).
type taskSender interface {
	SendTaskMessage(ctx context.Context, guildID, channelID uint64, m discord.TaskMessage) (uint64, string, error)
}

var _ taskSender = (*discord.Bot)(nil)

// botReadiness is the bot's connection state (*discord.Bot).
type botReadiness interface {
	Status() discord.Status
	Watch(ctx context.Context) <-chan struct{}
}

var _ botReadiness = (*discord.Bot)(nil)

// taskReadyWait bounds how long a delivery waits for the bot to be
// connected with the task's guild available.
const taskReadyWait = 30 * time.Second

// waitGuildReady waits (up to taskReadyWait or ctx) until the bot is
// connected and guildID is available to it (its GUILD_CREATE came): the
// runner resumes deliveries at start, before the bot connected, and a
// check or send then would fail the row (and put the task in
// needs_attention) for a connection a moment away. Past the wait the
// check or send runs anyway and fails with its reason.
func waitGuildReady(ctx context.Context, b botReadiness, guildID uint64) {
	if b == nil {
		return
	}
	ready := func() bool {
		st := b.Status()
		if st.State != discord.StateConnected {
			return false
		}
		id := strconv.FormatUint(guildID, 10)
		return slices.ContainsFunc(st.Guilds, func(g discord.GuildStatus) bool { return g.ID == id && !g.Unavailable })
	}
	if ready() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, taskReadyWait)
	defer cancel()
	changed := b.Watch(ctx)
	for !ready() {
		select {
		case _, ok := <-changed:
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// taskPoster is the tasks.Poster of the bot.
type taskPoster struct {
	d     taskSender
	ready botReadiness // nil: no wait
}

var _ tasks.Poster = taskPoster{}

// Post sends chunk c and classifies its error as a *tasks.PostError.
func (p taskPoster) Post(ctx context.Context, guildID, channelID uint64, c tasks.PostChunk) (uint64, string, error) {
	m := discord.TaskMessage{Content: c.Content, AllowedMentions: discord.TaskMentions{
		Parse: slices.Clone(c.AllowedMentions.Parse), Users: c.AllowedMentions.Users, Roles: c.AllowedMentions.Roles}}
	if m.AllowedMentions.Parse == nil {
		m.AllowedMentions.Parse = []string{}
	}
	if e := c.Embed; e != nil {
		m.Embed = &discord.TaskEmbed{Title: e.Title, Description: e.Description, URL: e.URL, Color: e.Color}
		for _, f := range e.Fields {
			m.Embed.Fields = append(m.Embed.Fields, discord.TaskEmbedField{Name: f.Name, Value: f.Value, Inline: f.Inline})
		}
	}
	for _, f := range c.Files {
		m.Files = append(m.Files, discord.TaskFile{Name: f.Name, Data: f.Data})
	}
	waitGuildReady(ctx, p.ready, guildID)
	id, embed, err := p.d.SendTaskMessage(ctx, guildID, channelID, m)
	if err != nil {
		return 0, "", postError(err)
	}
	return id, embed, nil
}

// postError maps a send's error to the deliverer's classification:
//   - a 429 Kimi's transport gave up on (maxAttempts sends, each a 429:
//     discordgo's RateLimitError) is Status 429 with Discord's wait;
//   - an uncertain send (discord.IsUncertain: a 5xx or a broken
//     connection after the request was written, an unreadable answer) is
//     Started with the 5xx (0: no answer): never re-posted;
//   - Discord's 4xx (a RESTError) is that status, not started: failed;
//   - anything else failed before a request reached Discord (no session,
//     an inactive guild, a channel of another guild, a refused dial, an
//     ended ctx): Status 0, not started. The deliverer fails such a row
//     (it does not retry it by itself), which is right: nothing reached
//     Discord, so the operator may retry it by hand without a duplicate,
//     and a cause that lasts (the channel gone, the guild inactive) is
//     not retried for ever.
func postError(err error) *tasks.PostError {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		pe := &tasks.PostError{Status: http.StatusTooManyRequests, Err: err}
		if rl.RateLimit != nil && rl.TooManyRequests != nil {
			pe.RetryAfter = rl.RetryAfter
		}
		return pe
	}
	if discord.IsUncertain(err) {
		pe := &tasks.PostError{Started: true, Err: err}
		var u *discord.UncertainError
		var rest *discordgo.RESTError
		switch {
		case errors.As(err, &u):
			pe.Status = u.Status
		case errors.As(err, &rest) && rest.Response != nil:
			pe.Status = rest.Response.StatusCode
		}
		return pe
	}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) && rest.Response != nil {
		return &tasks.PostError{Status: rest.Response.StatusCode, Err: err}
	}
	return &tasks.PostError{Err: err}
}

// memberTiers resolves a member's trust tier (*discord.Bot).
type memberTiers interface {
	Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error)
}

// taskAuthorizer is the tasks.Authorizer: the guild's scheduled_tasks
// policy enabled, the owner's current tier at least its min_tier, and
// both the owner and the bot able to post in the channel.
type taskAuthorizer struct {
	policies tasks.Policies
	tiers    memberTiers
	checker  tasks.Checker
	ready    botReadiness // nil: no wait
}

var _ tasks.Authorizer = taskAuthorizer{}

// Authorize returns nil while owner may have the task post in channel
// what needs names; a refusal is a sentence for the operator.
func (a taskAuthorizer) Authorize(ctx context.Context, guildID, ownerID, channelID uint64, needs tasks.Needs) error {
	policy := a.policies.TaskPolicy(guildID)
	if !policy.Enabled {
		return fmt.Errorf("scheduled tasks are not enabled in guild %d (its server setup's scheduled_tasks)", guildID)
	}
	waitGuildReady(ctx, a.ready, guildID)
	minTier := policy.MinTier.Or(sdk.TierStaff)
	tier, err := a.tiers.Tier(ctx, guildID, ownerID)
	if err != nil {
		return tasks.Unavailable(fmt.Errorf("the owner %d's trust tier could not be read: %w", ownerID, err))
	}
	if !tier.AtLeast(minTier) {
		return fmt.Errorf("the owner %d is %s, below %s", ownerID, tier, minTier)
	}
	for _, who := range []struct {
		id   uint64
		name string
	}{{tasks.BotUser, "Kimi"}, {ownerID, fmt.Sprintf("the owner %d", ownerID)}} {
		ok, err := a.checker.CanPost(ctx, guildID, who.id, channelID, needs)
		if err != nil {
			return tasks.Unavailable(fmt.Errorf("whether %s can post in channel %d could not be checked: %w", who.name, channelID, err))
		}
		if !ok {
			return fmt.Errorf("%s cannot post in channel %d (this message needs: %s)", who.name, channelID, needs.Permissions())
		}
	}
	return nil
}

// taskProducer is the scheduled results' Producer of the tasks.
type taskProducer struct {
	svc    *tasks.Service
	st     *store.Store
	access results.DiscordAccess
	// policies gives the guild's scheduled_tasks policy.
	policies tasks.Policies
}

var _ results.Producer = taskProducer{}

// CheckAccess returns nil while p's task still exists, its guild's
// scheduled tasks are enabled and the Discord side (the guild active, the
// owner's tier at least the policy's min_tier, owner and bot able to view
// every channel) allows it.
func (p taskProducer) CheckAccess(ctx context.Context, pub results.Publication) error {
	if _, err := p.svc.Get(ctx, pub.TaskID); err != nil {
		if errors.Is(err, tasks.ErrNotFound) {
			return fmt.Errorf("%w: task %s was deleted", results.ErrAccessDenied, pub.TaskID)
		}
		return fmt.Errorf("app: tasks: read task %s: %w", pub.TaskID, err)
	}
	policy := p.policies.TaskPolicy(pub.GuildID)
	if !policy.Enabled {
		return fmt.Errorf("%w: scheduled tasks are not enabled in guild %d", results.ErrAccessDenied, pub.GuildID)
	}
	return p.access.Check(ctx, pub, policy.MinTier.Or(sdk.TierStaff))
}

// ReadFile returns the bytes of attachment attachmentID of run runID: the
// attachment id is the file's name in the run's revision (names are
// unique in a revision, and a post row's file_ids lists them), and it is
// read only when one of the run's sent post rows (not its log row)
// carried it. Larger than limit: an error.
func (p taskProducer) ReadFile(ctx context.Context, runID, attachmentID string, limit int64) ([]byte, error) {
	db := p.st.Reader()
	var taskID string
	var rev int
	if err := db.QueryRowContext(ctx, `SELECT task_id, revision FROM kimi_task_runs WHERE id = ?`, runID).Scan(&taskID, &rev); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("app: tasks: run %s does not exist", runID)
		}
		return nil, fmt.Errorf("app: tasks: read run %s: %w", runID, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT file_ids FROM kimi_task_posts WHERE run_id = ? AND kind = 'post' AND status = 'sent'`, runID)
	if err != nil {
		return nil, fmt.Errorf("app: tasks: read the posts of run %s: %w", runID, err)
	}
	carried := false
	for rows.Next() && !carried {
		var js string
		if err := rows.Scan(&js); err != nil {
			rows.Close()
			return nil, fmt.Errorf("app: tasks: read the posts of run %s: %w", runID, err)
		}
		var names []string
		if json.Unmarshal([]byte(js), &names) == nil && slices.Contains(names, attachmentID) {
			carried = true
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("app: tasks: read the posts of run %s: %w", runID, err)
	}
	if !carried {
		return nil, fmt.Errorf("app: tasks: no sent post of run %s carried file %q", runID, attachmentID)
	}
	var size int64
	if err := db.QueryRowContext(ctx, `SELECT size FROM kimi_task_files WHERE task_id = ? AND revision = ? AND name = ?`, taskID, rev, attachmentID).Scan(&size); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("app: tasks: file %q of run %s is gone", attachmentID, runID)
		}
		return nil, fmt.Errorf("app: tasks: read file %q of run %s: %w", attachmentID, runID, err)
	}
	if size > limit {
		return nil, fmt.Errorf("app: tasks: file %q of run %s is %d bytes, over the limit of %d", attachmentID, runID, size, limit)
	}
	var data []byte
	if err := db.QueryRowContext(ctx, `SELECT bytes FROM kimi_task_files WHERE task_id = ? AND revision = ? AND name = ?`, taskID, rev, attachmentID).Scan(&data); err != nil {
		return nil, fmt.Errorf("app: tasks: read file %q of run %s: %w", attachmentID, runID, err)
	}
	return data, nil
}

// taskBot is what the scheduled tasks need of the bot (*discord.Bot).
type taskBot interface {
	taskSender
	memberTiers
	botReadiness
	results.ChannelViews
	TaskChecker() *discord.TaskChecker
}

var _ taskBot = (*discord.Bot)(nil)

// taskParts are the scheduled tasks as serve runs them.
type taskParts struct {
	service  *tasks.Service
	runner   *tasks.Runner
	producer results.Producer
	admin    *tasks.Admin
}

// newTasks builds the scheduled tasks: the service (publishing into res),
// the deliverer over the bot, the runner on the host's durable scheduler
// and the results producer. serve sets the producer before res starts,
// starts the runner after the bot and the modules, and closes it before
// the scheduler.
func newTasks(st *store.Store, res *results.Service, policies interface {
	tasks.Policies
	results.GuildActivity
}, bot taskBot, jobs tasks.Jobs, logger *slog.Logger) (*taskParts, error) {
	if jobs == nil || jobs == tasks.Jobs((*scheduler.Scheduler)(nil)) {
		return nil, errors.New("app: tasks: the module host has no durable scheduler")
	}
	svc, err := tasks.New(tasks.Options{Store: st, Results: res, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	checker := bot.TaskChecker()
	deliverer, err := tasks.NewDeliverer(svc, tasks.DeliverOptions{Poster: taskPoster{d: bot, ready: bot},
		Authorize: taskAuthorizer{policies: policies, tiers: bot, checker: checker, ready: bot}, Policies: policies})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	runner, err := tasks.NewRunner(tasks.RunnerOptions{Service: svc, Deliverer: deliverer, Jobs: jobs, Checker: checker, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	return &taskParts{
		service: svc, runner: runner,
		producer: taskProducer{svc: svc, st: st, policies: policies,
			access: results.DiscordAccess{Guilds: policies, Tiers: bot, Channels: bot}},
		admin: &tasks.Admin{Service: svc, Runner: runner, Policies: policies, Checker: checker},
	}, nil
}
