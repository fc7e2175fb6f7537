package tasks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/internal/signal"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/store"
)

// Audit actions of the definitions' changes (target: the task id).
const (
	ActionCreate = "tasks.create"
	ActionUpdate = "tasks.update"
	ActionPause  = "tasks.pause"
	ActionResume = "tasks.resume"
	ActionDelete = "tasks.delete"
)

// Page bounds of List.
const (
	DefaultPage = 50
	MaxPage     = 200
)

// Options configures New.
type Options struct {
	Store *store.Store
	// Results is the results outbox (Delete revokes the task's
	// publications); nil in tests that need none.
	Results *results.Service
	Logger  *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Service stores the tasks' definitions, revisions and runs.
type Service struct {
	st      *store.Store
	results *results.Service
	log     *slog.Logger
	now     func() time.Time
	// watch signals the /tasks pages after every change (Watch).
	watch signal.Watchers
	// changed, set by NewRunner, is called after the commit of every
	// change of a task's definition or state (its job is rescheduled).
	changed func(id string)
}

// Watch returns a channel signalled after every change of a task, a run or
// a post (coalesced); it closes when ctx ends.
func (s *Service) Watch(ctx context.Context) <-chan struct{} { return s.watch.Watch(ctx) }

// notify signals the watchers (call it after a commit).
func (s *Service) notify() { s.watch.Notify() }

// committed is called after the commit of a change of task id's
// definition or state: the watchers are signalled and the runner (when
// there is one) reschedules the task's job.
func (s *Service) committed(id string) {
	s.notify()
	if s.changed != nil {
		s.changed(id)
	}
}

// New returns the tasks service.
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("tasks: a store is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{st: opts.Store, results: opts.Results, log: opts.Logger, now: opts.Now}, nil
}

// prepare validates def and returns it ready to store (the schedule
// anchored at now and written back as its fields) with its schedule's
// next occurrence after now. A *DefinitionError says what is wrong.
func (s *Service) prepare(ctx context.Context, policy guildcfg.TaskPolicy, chk Checker, def Definition, now time.Time) (Definition, time.Time, error) {
	def = def.clone().withPolicyZone(policy)
	fe := def.Validate(ctx, policy, chk)
	if fe != nil {
		return Definition{}, time.Time{}, &DefinitionError{Fields: fe}
	}
	sched, _ := def.ParsedSchedule() // valid: Validate parsed it
	sched = sched.Anchored(now)
	next, ok := sched.Next(now)
	if !ok {
		field := FieldKind
		if sched.Kind == KindOnce {
			field = FieldAt
		}
		return Definition{}, time.Time{}, &DefinitionError{Fields: FieldErrors{field: "the schedule has no occurrence in the future"}}
	}
	def.Schedule = sched.Fields()
	return def, next, nil
}

// Create validates def and stores it as a new active task (revision 1),
// with its next occurrence and an audit row by actor (an admin's name).
// Scheduled tasks must be enabled in policy (ErrDisabled); a schedule
// without a time zone takes the policy's; a bad definition returns a
// *DefinitionError and saves nothing.
func (s *Service) Create(ctx context.Context, actor string, policy guildcfg.TaskPolicy, chk Checker, def Definition) (Task, error) {
	if !policy.Enabled {
		return Task{}, ErrDisabled
	}
	now := s.now()
	def, next, err := s.prepare(ctx, policy, chk, def, now)
	if err != nil {
		return Task{}, err
	}
	id, err := newID()
	if err != nil {
		return Task{}, err
	}
	ms := now.UnixMilli()
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_tasks (id, guild_id, name, owner_id, state, revision, last_due_ms, next_due_ms, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, 'active', 1, ?, ?, ?, ?)`, id, int64(def.GuildID), def.Name, int64(def.OwnerID), ms, next.UnixMilli(), ms, ms); err != nil {
			return fmt.Errorf("tasks: insert %s: %w", id, err)
		}
		if err := insertRevision(ctx, tx, id, 1, def, actor, now); err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: actor, Action: ActionCreate, Target: id,
			Detail: fmt.Sprintf("%q in guild %d, revision 1", def.Name, def.GuildID)})
	})
	if err != nil {
		return Task{}, err
	}
	s.committed(id)
	return s.Get(ctx, id)
}

// Update validates def and stores it as the task's next revision; runs
// already made keep the revision they were made from. The guild cannot
// change. The schedule applies from now: occurrences between the last
// handled one and now are not run. The files are def.Files (the edit form
// passes the previous revision's, from Revision, to keep them). As
// Create, it needs the guild's scheduled tasks enabled (ErrDisabled):
// pause and delete still work while they are off.
func (s *Service) Update(ctx context.Context, actor, id string, policy guildcfg.TaskPolicy, chk Checker, def Definition) (Task, error) {
	cur, err := s.Get(ctx, id)
	if err != nil {
		return Task{}, err
	}
	if !policy.Enabled {
		return Task{}, ErrDisabled
	}
	if def.GuildID != 0 && def.GuildID != cur.GuildID {
		return Task{}, &DefinitionError{Fields: FieldErrors{FieldDestinations: "a task cannot move to another server"}}
	}
	def.GuildID = cur.GuildID
	now := s.now()
	def, next, err := s.prepare(ctx, policy, chk, def, now)
	if err != nil {
		return Task{}, err
	}
	ms := now.UnixMilli()
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		var rev int
		err := tx.QueryRowContext(ctx, `UPDATE kimi_tasks SET revision = revision + 1, name = ?, owner_id = ?, last_due_ms = ?, next_due_ms = ?, updated_ms = ?
			WHERE id = ? RETURNING revision`, def.Name, int64(def.OwnerID), ms, next.UnixMilli(), ms, id).Scan(&rev)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("tasks: update %s: %w", id, err)
		}
		if err := insertRevision(ctx, tx, id, rev, def, actor, now); err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: actor, Action: ActionUpdate, Target: id,
			Detail: fmt.Sprintf("%q, revision %d", def.Name, rev)})
	})
	if err != nil {
		return Task{}, err
	}
	s.committed(id)
	return s.Get(ctx, id)
}

// Get returns the task with its current definition (files' metadata only).
func (s *Service) Get(ctx context.Context, id string) (Task, error) {
	return readTask(ctx, s.st.Reader(), id)
}

// Revision returns revision rev of task id's definition with its files'
// bytes.
func (s *Service) Revision(ctx context.Context, id string, rev int) (Definition, error) {
	var js string
	err := s.st.Reader().QueryRowContext(ctx, `SELECT definition FROM kimi_task_revisions WHERE task_id = ? AND revision = ?`, id, rev).Scan(&js)
	if errors.Is(err, sql.ErrNoRows) {
		return Definition{}, ErrNotFound
	}
	if err != nil {
		return Definition{}, fmt.Errorf("tasks: read revision %d of %s: %w", rev, id, err)
	}
	def, err := decodeDefinition(id, js)
	if err != nil {
		return Definition{}, err
	}
	if def.Files, err = readFiles(ctx, s.st.Reader(), id, rev); err != nil {
		return Definition{}, err
	}
	return def, nil
}

// ListOptions selects a page of tasks, newest first.
type ListOptions struct {
	// GuildID is the guild (0: all guilds).
	GuildID uint64
	// After is the previous page's Next ("": the first page).
	After string
	// Limit is the page size (0: DefaultPage; at most MaxPage).
	Limit int
}

// Page is one page of List.
type Page struct {
	Tasks []Task
	// Next is the cursor of the next page ("": this is the last).
	Next string
}

// List returns a page of tasks, newest first, by keyset (a task created
// while paging neither repeats nor shifts a row).
func (s *Service) List(ctx context.Context, o ListOptions) (Page, error) {
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultPage
	}
	limit = min(limit, MaxPage)
	q := `SELECT ` + taskColumns + taskFrom + ` WHERE 1 = 1`
	var args []any
	if o.GuildID != 0 {
		q += ` AND t.guild_id = ?`
		args = append(args, int64(o.GuildID))
	}
	if o.After != "" {
		msStr, id, ok := strings.Cut(o.After, ".")
		ms, err := strconv.ParseInt(msStr, 10, 64)
		if !ok || err != nil || id == "" {
			return Page{}, fmt.Errorf("tasks: list: bad cursor %q", o.After)
		}
		q += ` AND (t.created_ms < ? OR (t.created_ms = ? AND t.id < ?))`
		args = append(args, ms, ms, id)
	}
	q += ` ORDER BY t.created_ms DESC, t.id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.st.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return Page{}, fmt.Errorf("tasks: list: %w", err)
	}
	defer rows.Close()
	var p Page
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return Page{}, fmt.Errorf("tasks: list: %w", err)
		}
		p.Tasks = append(p.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return Page{}, fmt.Errorf("tasks: list: %w", err)
	}
	if len(p.Tasks) > limit {
		p.Tasks = p.Tasks[:limit]
		last := p.Tasks[limit-1]
		p.Next = strconv.FormatInt(last.CreatedAt.UnixMilli(), 10) + "." + last.ID
	}
	return p, nil
}

// SetPaused pauses (an active or needs-attention task) or resumes (a
// paused one) task id, with an audit row; a task already in the asked
// state is returned unchanged, without one. A resumed task does not catch
// up the paused time: its next occurrence is the first after now.
func (s *Service) SetPaused(ctx context.Context, actor, id string, paused bool) (Task, error) {
	cur, err := s.Get(ctx, id)
	if err != nil {
		return Task{}, err
	}
	if (paused && cur.State == StatePaused) || (!paused && cur.State != StatePaused) {
		return cur, nil
	}
	now := s.now()
	ms := now.UnixMilli()
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		var res sql.Result
		var err error
		action := ActionPause
		if paused {
			res, err = tx.ExecContext(ctx, `UPDATE kimi_tasks SET state = 'paused', updated_ms = ? WHERE id = ? AND state <> 'paused'`, ms, id)
		} else {
			action = ActionResume
			sched, fe := ParseSchedule(cur.Definition.Schedule)
			if fe != nil {
				return fmt.Errorf("tasks: resume %s: stored schedule: %w", id, fe)
			}
			var next int64
			if t, ok := sched.Next(now); ok {
				next = t.UnixMilli()
			}
			res, err = tx.ExecContext(ctx, `UPDATE kimi_tasks SET state = 'active', last_due_ms = ?, next_due_ms = ?, updated_ms = ? WHERE id = ? AND state = 'paused'`,
				ms, next, ms, id)
		}
		if err != nil {
			return fmt.Errorf("tasks: %s %s: %w", action, id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // changed meanwhile: nothing to record
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: actor, Action: action, Target: id, Detail: fmt.Sprintf("%q", cur.Name)})
	})
	if err != nil {
		return Task{}, err
	}
	s.committed(id)
	return s.Get(ctx, id)
}

// Delete deletes task id with its revisions, files, runs and posts, and
// revokes its publications in the results outbox in the same transaction
// (no subscriber reads them after), with an audit row.
func (s *Service) Delete(ctx context.Context, actor, id string) error {
	now := s.now()
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		var name string
		err := tx.QueryRowContext(ctx, `DELETE FROM kimi_tasks WHERE id = ? RETURNING name`, id).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("tasks: delete %s: %w", id, err)
		}
		if s.results != nil {
			if err := s.results.RevokeTask(ctx, tx, id); err != nil {
				return fmt.Errorf("tasks: delete %s: %w", id, err)
			}
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: actor, Action: ActionDelete, Target: id, Detail: fmt.Sprintf("%q", name)})
	})
	if err != nil {
		return err
	}
	s.committed(id)
	return nil
}

// DueTasks returns up to limit active tasks whose next occurrence is at
// or before now, the earliest first (the runner's poll).
func (s *Service) DueTasks(ctx context.Context, now time.Time, limit int) ([]Task, error) {
	if limit <= 0 {
		limit = DefaultPage
	}
	rows, err := s.st.Reader().QueryContext(ctx, `SELECT `+taskColumns+taskFrom+`
		WHERE t.state = 'active' AND t.next_due_ms > 0 AND t.next_due_ms <= ? ORDER BY t.next_due_ms, t.id LIMIT ?`, now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("tasks: due tasks: %w", err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("tasks: due tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: due tasks: %w", err)
	}
	return out, nil
}

// Advanced is what Advance did.
type Advanced struct {
	Plan Plan
	// RunID is the pending run made for Plan.Run ("": none).
	RunID string
	// SkippedRunID is the row recording Plan's skipped occurrences ("":
	// none).
	SkippedRunID string
}

// Advance plans task id at now (Schedule.Plan from its last handled
// occurrence) and records the plan in one transaction: a pending run of
// the current revision for the occurrence to run, a skipped row for the
// skipped ones, and the task's last and next occurrence. A task that is
// not active is left as it is (a zero Advanced).
func (s *Service) Advance(ctx context.Context, id string, now time.Time) (Advanced, error) {
	var out Advanced
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		out = Advanced{}
		t, err := readTask(ctx, tx, id)
		if err != nil {
			return err
		}
		if t.State != StateActive {
			return nil
		}
		sched, fe := ParseSchedule(t.Definition.Schedule)
		if fe != nil {
			return fmt.Errorf("tasks: advance %s: stored schedule: %w", id, fe)
		}
		p := sched.Plan(t.LastDue, now)
		out.Plan = p
		if out.SkippedRunID, err = s.recordSkipped(ctx, tx, t, p, now); err != nil {
			return err
		}
		if !p.Run.IsZero() {
			if out.RunID, err = newID(); err != nil {
				return err
			}
			detail := ""
			if p.Late {
				detail = "catch-up run: more than " + LateTolerance.String() + " late"
			}
			if err := insertRun(ctx, tx, Run{ID: out.RunID, TaskID: id, Revision: t.Revision, Due: p.Run, Status: RunPending, Detail: detail, CreatedAt: now}); err != nil {
				return err
			}
		}
		return setDue(ctx, tx, id, p)
	})
	if err == nil {
		s.notify()
	}
	return out, err
}

// RecordSkipped records plan's skipped occurrences of task id as one
// skipped run row with their count (nothing when there are none) and
// returns its id. It does not move the task's occurrences: Advance does
// both in one transaction; this is for a plan the caller handles itself.
func (s *Service) RecordSkipped(ctx context.Context, id string, plan Plan) (string, error) {
	var runID string
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		t, err := readTask(ctx, tx, id)
		if err != nil {
			return err
		}
		runID, err = s.recordSkipped(ctx, tx, t, plan, s.now())
		return err
	})
	if err == nil {
		s.notify()
	}
	return runID, err
}

func (s *Service) recordSkipped(ctx context.Context, tx *sql.Tx, t Task, p Plan, now time.Time) (string, error) {
	if p.SkippedCount == 0 || len(p.Skipped) == 0 {
		return "", nil
	}
	id, err := newID()
	if err != nil {
		return "", err
	}
	first, last := p.Skipped[0], p.Skipped[len(p.Skipped)-1]
	detail := fmt.Sprintf("%d occurrences skipped, the first due %s", p.SkippedCount, first.UTC().Format(time.RFC3339))
	if p.SkippedCount == 1 {
		detail = "1 occurrence skipped, due " + first.UTC().Format(time.RFC3339)
	} else if int64(len(p.Skipped)) == p.SkippedCount {
		detail += ", the last " + last.UTC().Format(time.RFC3339)
	}
	err = insertRun(ctx, tx, Run{ID: id, TaskID: t.ID, Revision: t.Revision, Due: first, Status: RunSkipped, Detail: detail,
		SkippedCount: p.SkippedCount, CreatedAt: now, FinishedAt: now})
	return id, err
}

func setDue(ctx context.Context, tx *sql.Tx, id string, p Plan) error {
	var next int64
	if p.HasNext {
		next = p.Next.UnixMilli()
	}
	if _, err := tx.ExecContext(ctx, `UPDATE kimi_tasks SET last_due_ms = ?, next_due_ms = ? WHERE id = ?`, p.LastDue.UnixMilli(), next, id); err != nil {
		return fmt.Errorf("tasks: record due of %s: %w", id, err)
	}
	return nil
}

// Run returns run runID (ErrNotFound when there is none).
func (s *Service) Run(ctx context.Context, runID string) (Run, error) {
	return readRun(ctx, s.st.Reader(), runID)
}

// LastRuns returns the newest run of each of the tasks ids that has one,
// by task id, in one query (the /tasks list's last-run column).
func (s *Service) LastRuns(ctx context.Context, ids []string) (map[string]Run, error) {
	out := make(map[string]Run, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.st.Reader().QueryContext(ctx, `SELECT `+runColumns+` FROM (SELECT *, row_number() OVER (PARTITION BY task_id ORDER BY due_ms DESC, id DESC) AS n
		FROM kimi_task_runs WHERE task_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)) WHERE n = 1`, args...)
	if err != nil {
		return nil, fmt.Errorf("tasks: last runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("tasks: last runs: %w", err)
		}
		out[r.TaskID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: last runs: %w", err)
	}
	return out, nil
}

// Runs returns up to limit runs of task id, newest first.
func (s *Service) Runs(ctx context.Context, id string, limit int) ([]Run, error) {
	if limit <= 0 {
		limit = DefaultPage
	}
	rows, err := s.st.Reader().QueryContext(ctx, `SELECT `+runColumns+` FROM kimi_task_runs WHERE task_id = ? ORDER BY due_ms DESC, id DESC LIMIT ?`, id, min(limit, MaxPage))
	if err != nil {
		return nil, fmt.Errorf("tasks: runs of %s: %w", id, err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("tasks: runs of %s: %w", id, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: runs of %s: %w", id, err)
	}
	return out, nil
}
