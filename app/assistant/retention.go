package assistant

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Retention's job on the durable scheduler.
const (
	// RetentionModule is the scheduler module the retention job runs under
	// (a core job, like the scheduled tasks' "kimi:tasks").
	RetentionModule = "kimi:assistant"
	// RetentionJobKey is the retention job's key.
	RetentionJobKey = "retention"
	// RetentionInterval is how long after a run the next one is due.
	RetentionInterval = 24 * time.Hour

	retentionHandler = "retention"
	retentionBatch   = 200
)

// Retention deletes the assistant's transcripts past the retention
// setting: a core job on the durable scheduler that runs once when it is
// first scheduled (or at start when overdue) and then every
// RetentionInterval, rescheduling itself after each run.
//
// A conversation whose last activity (updated_ms) is more than
// settings.LoadAssistantRetention days old loses its messages, its
// delivered-message references and its tool calls' argument and result
// excerpts; the conversation, its turns and tool-call rows (which hold no
// content) and the usage roll-up stay. 0 days keeps everything.
type Retention struct {
	st   writer
	jobs *scheduler.Scheduler
	log  *slog.Logger
	now  func() time.Time

	mu sync.Mutex
	b  *scheduler.Binding
	// onRun, when set (tests), is called after each run with its result.
	onRun func(RetentionResult, error)
}

// RetentionOptions configures NewRetention.
type RetentionOptions struct {
	Store  writer
	Jobs   *scheduler.Scheduler
	Logger *slog.Logger
	// Now is the clock (nil: time.Now); the scheduler's own clock decides
	// when the job runs.
	Now func() time.Time
}

// RetentionResult is what one purge deleted.
type RetentionResult struct {
	// Conversations had some transcript past the retention.
	Conversations int
	Messages      int
	Delivered     int
	// Excerpts are the tool calls whose excerpts were blanked.
	Excerpts int
}

// RetentionPlan is what the admin shows: the setting, when the job runs
// next and what that run will delete (as the data stands now).
type RetentionPlan struct {
	Days int
	// NextRun is the job's next due moment (zero: not scheduled, e.g. the
	// job has not started).
	NextRun time.Time
	// Cutoff is the last activity before which the next run deletes a
	// transcript: Days before the next run, or before now when it is due
	// (zero when Days is 0).
	Cutoff time.Time
	// Pending is how many conversations hold a transcript older than Cutoff.
	Pending int
}

// NewRetention returns the retention job over o.Store and o.Jobs; Start
// schedules it.
func NewRetention(o RetentionOptions) (*Retention, error) {
	if o.Store == nil || o.Jobs == nil {
		return nil, errors.New("assistant: retention: a store and the scheduler are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Retention{st: o.Store, jobs: o.Jobs, log: o.Logger, now: o.Now}, nil
}

// Start binds the job's handler and, when no run is scheduled, schedules
// one now; an overdue run left by the last process runs at once.
func (r *Retention) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.b != nil {
		r.mu.Unlock()
		return errors.New("assistant: retention: already started")
	}
	b := r.jobs.Bind(RetentionModule, scheduler.Hooks{Health: r.health})
	r.b = b
	r.mu.Unlock()
	if err := b.Register(retentionHandler, r.run); err != nil {
		return fmt.Errorf("assistant: retention: %w", err)
	}
	jobs, err := b.List(ctx)
	if err != nil {
		return fmt.Errorf("assistant: retention: %w", err)
	}
	scheduled := false
	for _, j := range jobs {
		scheduled = scheduled || (j.Key == RetentionJobKey && j.Handler == retentionHandler)
	}
	if !scheduled {
		if err := b.RunAt(ctx, RetentionJobKey, r.now(), retentionHandler, nil); err != nil {
			return fmt.Errorf("assistant: retention: %w", err)
		}
	}
	b.Activate()
	return nil
}

// Close drops the job's handler; the scheduled run stays for the next start.
func (r *Retention) Close(context.Context) error {
	r.mu.Lock()
	b := r.b
	r.mu.Unlock()
	if b != nil {
		b.Close()
	}
	return nil
}

// health logs what the scheduler reports on the job's module.
func (r *Retention) health(source string, state sdk.HealthState, detail string) {
	if state == sdk.HealthHealthy {
		return
	}
	r.log.Warn("retention job health", "source", source, "state", string(state), "detail", detail)
}

// run is the job: purge under the current setting, then schedule the next
// run RetentionInterval on.
func (r *Retention) run(ctx context.Context, _ sdk.JobRun) error {
	res, err := r.purgeNow(ctx)
	if err == nil {
		r.mu.Lock()
		b := r.b
		r.mu.Unlock()
		if b != nil {
			err = b.RunAt(ctx, RetentionJobKey, r.now().Add(RetentionInterval), retentionHandler, nil)
		}
	}
	if r.onRun != nil {
		r.onRun(res, err)
	}
	if err != nil {
		return fmt.Errorf("assistant: retention: %w", err)
	}
	return nil
}

func (r *Retention) purgeNow(ctx context.Context) (RetentionResult, error) {
	days, err := settings.LoadAssistantRetention(ctx, r.st)
	if err != nil {
		return RetentionResult{}, err
	}
	res, err := PurgeTranscripts(ctx, r.st, r.now(), days)
	if res.Conversations > 0 {
		r.log.Info("deleted transcripts past the retention", "conversations", res.Conversations,
			"messages", res.Messages, "excerpts", res.Excerpts, "retention_days", days)
	}
	return res, err
}

// Plan reports the setting, the next run and what it would delete now.
func (r *Retention) Plan(ctx context.Context) (RetentionPlan, error) {
	days, err := settings.LoadAssistantRetention(ctx, r.st)
	if err != nil {
		return RetentionPlan{}, err
	}
	p := RetentionPlan{Days: days}
	jobs, err := r.jobs.Jobs(ctx, RetentionModule)
	if err != nil {
		return RetentionPlan{}, fmt.Errorf("assistant: retention plan: %w", err)
	}
	for _, j := range jobs {
		if j.Key == RetentionJobKey {
			p.NextRun = j.NextRunAt
		}
	}
	if days == 0 {
		return p, nil
	}
	at := r.now()
	if p.NextRun.After(at) {
		at = p.NextRun
	}
	p.Cutoff = retentionCutoff(at, days)
	if err := r.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_assistant_conversations c WHERE `+expiredSQL,
		p.Cutoff.UnixMilli()).Scan(&p.Pending); err != nil {
		return RetentionPlan{}, fmt.Errorf("assistant: retention plan: %w", err)
	}
	return p, nil
}

func retentionCutoff(now time.Time, days int) time.Time {
	return now.Add(-time.Duration(days) * 24 * time.Hour)
}

// expiredSQL selects (as c) the conversations last active before the
// cutoff (the one argument) that still hold a transcript and run no turn.
const expiredSQL = `c.updated_ms < ?
	AND NOT EXISTS (SELECT 1 FROM kimi_assistant_turns t WHERE t.conversation_id = c.id AND t.status = 'running')
	AND (EXISTS (SELECT 1 FROM kimi_assistant_messages m WHERE m.conversation_id = c.id)
		OR EXISTS (SELECT 1 FROM kimi_assistant_delivered d WHERE d.conversation_id = c.id)
		OR EXISTS (SELECT 1 FROM kimi_assistant_tool_calls x JOIN kimi_assistant_turns t ON t.id = x.turn_id
			WHERE t.conversation_id = c.id AND (x.arguments != '' OR x.result != '')))`

// PurgeTranscripts deletes the transcripts of the conversations last
// active more than days before now (days 0: nothing), a batch of
// conversations per write transaction.
func PurgeTranscripts(ctx context.Context, st writer, now time.Time, days int) (RetentionResult, error) {
	var total RetentionResult
	if days <= 0 {
		return total, nil
	}
	cutoff := retentionCutoff(now, days).UnixMilli()
	for {
		var batch RetentionResult
		err := st.Write(ctx, func(tx *sql.Tx) error {
			batch = RetentionResult{}
			ids, err := queryIDs(ctx, tx, `SELECT c.id FROM kimi_assistant_conversations c WHERE `+expiredSQL+`
				ORDER BY c.updated_ms LIMIT ?`, cutoff, retentionBatch)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if err := deleteTranscriptTx(ctx, tx, id, &batch); err != nil {
					return err
				}
			}
			batch.Conversations = len(ids)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("assistant: purge transcripts: %w", err)
		}
		total.Conversations += batch.Conversations
		total.Messages += batch.Messages
		total.Delivered += batch.Delivered
		total.Excerpts += batch.Excerpts
		if batch.Conversations < retentionBatch {
			return total, nil
		}
	}
}

// deleteTranscriptTx deletes conversation id's messages and delivered
// references and blanks its tool calls' excerpts, adding the counts to res.
func deleteTranscriptTx(ctx context.Context, tx *sql.Tx, id int64, res *RetentionResult) error {
	for _, s := range []struct {
		q string
		n *int
	}{
		{`DELETE FROM kimi_assistant_messages WHERE conversation_id = ?`, &res.Messages},
		{`DELETE FROM kimi_assistant_delivered WHERE conversation_id = ?`, &res.Delivered},
		{`UPDATE kimi_assistant_tool_calls SET arguments = '', result = ''
			WHERE turn_id IN (SELECT id FROM kimi_assistant_turns WHERE conversation_id = ?) AND (arguments != '' OR result != '')`, &res.Excerpts},
	} {
		r, err := tx.ExecContext(ctx, s.q, id)
		if err != nil {
			return fmt.Errorf("conversation %d: %w", id, err)
		}
		n, _ := r.RowsAffected()
		*s.n += int(n)
	}
	return nil
}

// queryIDs returns the first column of every row of q.
func queryIDs(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
