package tasks

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// This file is the SQL of the tasks (migration 00009): rows to types and
// back, every write inside the caller's transaction.

// State is a task's state.
type State string

// The task states.
const (
	StateActive State = "active"
	StatePaused State = "paused"
	// StateNeedsAttention is a task whose delivery ended uncertain: it
	// does not run until an operator checked Discord.
	StateNeedsAttention State = "needs_attention"
)

// RunStatus is a run's status.
type RunStatus string

// The run statuses.
const (
	RunPending    RunStatus = "pending"
	RunRunning    RunStatus = "running"
	RunDelivering RunStatus = "delivering"
	RunCompleted  RunStatus = "completed"
	RunFailed     RunStatus = "failed"
	// RunSkipped is a row recording skipped occurrences (SkippedCount of
	// them, the first at Due).
	RunSkipped   RunStatus = "skipped"
	RunUncertain RunStatus = "uncertain"
	RunPreview   RunStatus = "preview"
)

// ErrNotFound reports a task or run that does not exist.
var ErrNotFound = errors.New("tasks: not found")

// Task is a task's row with its current revision's definition (files'
// metadata only; Service.Revision reads their bytes).
type Task struct {
	ID       string
	GuildID  uint64
	Name     string
	OwnerID  uint64
	State    State
	Revision int
	// LastDue is the last occurrence the runner handled (the creation,
	// edit or resume time before the first); NextDue the next occurrence
	// (zero: the schedule has none left).
	LastDue, NextDue     time.Time
	CreatedAt, UpdatedAt time.Time
	Definition           Definition
}

// Run is a run's row.
type Run struct {
	ID           string
	TaskID       string
	Revision     int
	Due          time.Time
	Status       RunStatus
	Detail       string
	SkippedCount int64
	CreatedAt    time.Time
	// StartedAt and FinishedAt are zero until then.
	StartedAt, FinishedAt time.Time
}

const taskColumns = `t.id, t.guild_id, t.name, t.owner_id, t.state, t.revision, t.last_due_ms, t.next_due_ms, t.created_ms, t.updated_ms, r.definition`

const taskFrom = ` FROM kimi_tasks t JOIN kimi_task_revisions r ON r.task_id = t.id AND r.revision = t.revision`

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func timeMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func scanTask(sc interface{ Scan(...any) error }) (Task, error) {
	var (
		t                                  Task
		guild, owner, last, next, cre, upd int64
		state, def                         string
	)
	if err := sc.Scan(&t.ID, &guild, &t.Name, &owner, &state, &t.Revision, &last, &next, &cre, &upd, &def); err != nil {
		return Task{}, err
	}
	d, err := decodeDefinition(t.ID, def)
	if err != nil {
		return Task{}, err
	}
	t.Definition = d
	t.GuildID, t.OwnerID, t.State = uint64(guild), uint64(owner), State(state)
	t.LastDue, t.NextDue, t.CreatedAt, t.UpdatedAt = msTime(last), msTime(next), msTime(cre), msTime(upd)
	return t, nil
}

func decodeDefinition(id, js string) (Definition, error) {
	var d Definition
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		return Definition{}, fmt.Errorf("tasks: stored definition of %s: %w", id, err)
	}
	return d, nil
}

func readTask(ctx context.Context, q querier, id string) (Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, `SELECT `+taskColumns+taskFrom+` WHERE t.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, ErrNotFound
	}
	if err != nil {
		return Task{}, fmt.Errorf("tasks: read %s: %w", id, err)
	}
	return t, nil
}

// insertRevision stores def (with its files) as revision rev of task id.
func insertRevision(ctx context.Context, tx *sql.Tx, id string, rev int, def Definition, actor string, at time.Time) error {
	def.Attachments = make([]AttachmentMeta, len(def.Files))
	for i, f := range def.Files {
		def.Attachments[i] = AttachmentMeta{Name: f.Name, Size: int64(len(f.Data))}
	}
	if len(def.Attachments) == 0 {
		def.Attachments = nil
	}
	js, err := json.Marshal(def)
	if err != nil {
		return fmt.Errorf("tasks: encode definition of %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_task_revisions (task_id, revision, definition, actor, created_ms) VALUES (?, ?, ?, ?, ?)`,
		id, rev, string(js), actor, at.UnixMilli()); err != nil {
		return fmt.Errorf("tasks: insert revision %d of %s: %w", rev, id, err)
	}
	for i, f := range def.Files {
		data := f.Data
		if data == nil {
			data = []byte{}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_task_files (task_id, revision, seq, name, bytes, size) VALUES (?, ?, ?, ?, ?, ?)`,
			id, rev, i+1, f.Name, data, len(data)); err != nil {
			return fmt.Errorf("tasks: insert file %d of revision %d of %s: %w", i+1, rev, id, err)
		}
	}
	return nil
}

// readFiles returns revision rev's files of task id, in order.
func readFiles(ctx context.Context, q querier, id string, rev int) ([]Attachment, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, bytes FROM kimi_task_files WHERE task_id = ? AND revision = ? ORDER BY seq`, id, rev)
	if err != nil {
		return nil, fmt.Errorf("tasks: read files of %s revision %d: %w", id, rev, err)
	}
	defer rows.Close()
	var out []Attachment
	for rows.Next() {
		var a Attachment
		if err := rows.Scan(&a.Name, &a.Data); err != nil {
			return nil, fmt.Errorf("tasks: read files of %s revision %d: %w", id, rev, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: read files of %s revision %d: %w", id, rev, err)
	}
	return out, nil
}

// insertRun stores a run row.
func insertRun(ctx context.Context, tx *sql.Tx, r Run) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO kimi_task_runs (id, task_id, revision, due_ms, status, detail, skipped_count, created_ms, started_ms, finished_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.TaskID, r.Revision, r.Due.UnixMilli(), string(r.Status), r.Detail, r.SkippedCount, r.CreatedAt.UnixMilli(), timeMs(r.StartedAt), timeMs(r.FinishedAt))
	if err != nil {
		return fmt.Errorf("tasks: insert %s run of %s: %w", r.Status, r.TaskID, err)
	}
	return nil
}

const runColumns = `id, task_id, revision, due_ms, status, detail, skipped_count, created_ms, started_ms, finished_ms`

// readRun reads run id through q (ErrNotFound when there is none).
func readRun(ctx context.Context, q querier, id string) (Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runColumns+` FROM kimi_task_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, ErrNotFound
	}
	if err != nil {
		return Run{}, fmt.Errorf("tasks: read run %s: %w", id, err)
	}
	return r, nil
}

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var (
		r                       Run
		due, cre, start, finish int64
		status                  string
	)
	if err := sc.Scan(&r.ID, &r.TaskID, &r.Revision, &due, &status, &r.Detail, &r.SkippedCount, &cre, &start, &finish); err != nil {
		return Run{}, err
	}
	r.Status = RunStatus(status)
	r.Due, r.CreatedAt, r.StartedAt, r.FinishedAt = time.UnixMilli(due).UTC(), msTime(cre), msTime(start), msTime(finish)
	return r, nil
}

// newID returns a random 16-byte id in hex.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("tasks: random id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
