package tasks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/kimiapp/kimi/app/internal/chunk"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// This file is the delivery worker (reference §5.1 "Delivery worker"): a
// run's output becomes kimi_task_posts rows (PrepareRun), and Deliver
// posts them strictly in order, one at a time, each claimed with a token
// guard. The transaction that records the last required (non-log) post as
// sent completes the run and enqueues its publication in the results
// outbox ("confirmed publication").

// Delivery bounds.
const (
	// MaxDeliveries is how many runs a Deliverer delivers at once.
	MaxDeliveries = 2
	// MaxPostAttempts bounds the sends of one row: a 429 at fewer
	// attempts puts it back to pending.
	MaxPostAttempts = 10
	// DefaultRetryDelay is the wait before re-sending a rate-limited row
	// whose error names no Retry-After.
	DefaultRetryDelay = time.Second
	maxDetail         = 4000
)

// Poster sends one chunk to a Discord channel and returns the message id
// and the published embed as JSON ("" for none). Its errors are
// classified by *PostError; an error that is not one counts as failing
// after the send started (uncertain).
type Poster interface {
	Post(ctx context.Context, guildID, channelID uint64, chunk PostChunk) (messageID uint64, publishedEmbedJSON string, err error)
}

// PostError is a Poster's classified failure.
type PostError struct {
	// Status is Discord's HTTP status (0: no answer).
	Status int
	// Started reports whether the request was (at least partly) sent:
	// Discord may have processed it.
	Started bool
	// RetryAfter is Discord's wait for a 429 (0: DefaultRetryDelay).
	RetryAfter time.Duration
	Err        error
}

// Error describes the failure.
func (e *PostError) Error() string {
	msg := fmt.Sprintf("tasks: post: HTTP %d", e.Status)
	if e.Status == 0 {
		msg = "tasks: post: no answer"
	}
	if e.Started {
		msg += " after the request was sent"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *PostError) Unwrap() error { return e.Err }

// PostStatus is a post row's status.
type PostStatus string

// The post row statuses.
const (
	PostPending   PostStatus = "pending"
	PostSending   PostStatus = "sending"
	PostSent      PostStatus = "sent"
	PostFailed    PostStatus = "failed"
	PostUncertain PostStatus = "uncertain"
)

// outcome is what a Post error means for its row.
type outcome int

const (
	outcomeRetry outcome = iota
	outcomeFailed
	outcomeUncertain
)

// classify maps a Post error at the row's attempts (this send counted):
// 429 under MaxPostAttempts retries; an error after the send started with
// no answer or a 5xx, or an unknown error, is uncertain; any other is
// failed.
func classify(err error, attempts int) (outcome, time.Duration) {
	var pe *PostError
	if !errors.As(err, &pe) {
		return outcomeUncertain, 0
	}
	switch {
	case pe.Status == http.StatusTooManyRequests && attempts < MaxPostAttempts:
		return outcomeRetry, pe.RetryAfter
	case pe.Started && (pe.Status == 0 || pe.Status >= 500):
		return outcomeUncertain, 0
	default:
		return outcomeFailed, 0
	}
}

// DeliverOptions configures NewDeliverer.
type DeliverOptions struct {
	Poster Poster
	// MaxConcurrent is how many runs deliver at once (0: MaxDeliveries).
	MaxConcurrent int
	// RetryDelay is the wait before re-sending a rate-limited row without
	// a Retry-After (0: DefaultRetryDelay).
	RetryDelay time.Duration
	// Authorize (nil: none) re-checks the owner's authority before each
	// row of a non-preview run is claimed; its error fails the row (its
	// text the row's detail), the run, and puts the task in
	// needs_attention.
	Authorize Authorizer
	// Policies (nil: none) gives the guild's scheduled_tasks policy at
	// each post row of a non-preview run: a channel that is no longer in
	// a non-empty destinations list is refused as the Authorizer's
	// refusals are (log rows are not held to the list, as Validate does
	// not hold the log channel to it).
	Policies Policies
}

// Deliverer is the delivery worker: a pure worker over the store.
type Deliverer struct {
	s      *Service
	poster Poster
	sem    chan struct{}
	delay  time.Duration
	auth   Authorizer
	pols   Policies
	// waiting is a test hook called before a Deliver waits for a slot.
	waiting func()
}

// NewDeliverer returns the delivery worker of s.
func NewDeliverer(s *Service, opts DeliverOptions) (*Deliverer, error) {
	if s == nil || opts.Poster == nil {
		return nil, errors.New("tasks: a service and a poster are required")
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = MaxDeliveries
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = DefaultRetryDelay
	}
	return &Deliverer{s: s, poster: opts.Poster, sem: make(chan struct{}, opts.MaxConcurrent), delay: opts.RetryDelay, auth: opts.Authorize, pols: opts.Policies}, nil
}

// errAlreadyPrepared is PrepareRun's refusal of a run prepared (or ended)
// before: whoever prepared it delivers it.
var errAlreadyPrepared = errors.New("its posts are already prepared")

// storedFiles is a post row's file_ids: the revision's file names.
type storedFiles []string

// PrepareRun chunks every post of out (Chunk) into run runID's post rows,
// in order, and adds a log row when the run's definition names a log
// channel (not for a preview); the run becomes delivering (a preview
// stays preview). One transaction. out is validated against the run's
// revision; a post's files must be that revision's files (by name). A run
// that is not pending, running or preview, or that has rows already, is
// refused.
//
// The log row is written up front as the run's success ("completed");
// when the run ends failed or uncertain its pending log row is rewritten
// to say so, and Deliver posts it once the run has ended (never before the
// run's confirmation).
func (s *Service) PrepareRun(ctx context.Context, runID string, out Output) error {
	return s.prepareRun(ctx, runID, out, 0)
}

// prepareRun is PrepareRun; previewChannel > 0 is a preview run's one
// channel, which out is validated against instead of the definition's
// destinations.
func (s *Service) prepareRun(ctx context.Context, runID string, out Output, previewChannel uint64) error {
	now := s.now()
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		run, err := readRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		switch run.Status {
		case RunPending, RunRunning, RunPreview:
		default:
			return fmt.Errorf("tasks: prepare run %s: the run is %s: %w", runID, run.Status, errAlreadyPrepared)
		}
		var rows int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kimi_task_posts WHERE run_id = ?`, runID).Scan(&rows); err != nil {
			return fmt.Errorf("tasks: prepare run %s: %w", runID, err)
		}
		if rows > 0 {
			return fmt.Errorf("tasks: prepare run %s: %w", runID, errAlreadyPrepared)
		}
		var js, name string
		if err := tx.QueryRowContext(ctx, `SELECT r.definition, t.name FROM kimi_task_revisions r JOIN kimi_tasks t ON t.id = r.task_id
			WHERE r.task_id = ? AND r.revision = ?`, run.TaskID, run.Revision).Scan(&js, &name); err != nil {
			return fmt.Errorf("tasks: prepare run %s: read revision: %w", runID, err)
		}
		def, err := decodeDefinition(run.TaskID, js)
		if err != nil {
			return err
		}
		allowed := Allowed{Destinations: def.Destinations, Users: def.MentionUsers, Roles: def.MentionRoles}
		if previewChannel != 0 {
			if run.Status != RunPreview {
				return fmt.Errorf("tasks: prepare run %s: only a preview posts to a preview channel", runID)
			}
			allowed.Destinations = []uint64{previewChannel}
		}
		if err := out.Validate(allowed); err != nil {
			return fmt.Errorf("tasks: prepare run %s: %w", runID, err)
		}
		known := map[string]bool{}
		for _, a := range def.Attachments {
			known[a.Name] = true
		}
		seq := 0
		insert := func(c PostChunk, kind string) error {
			seq++
			names := storedFiles{}
			for _, f := range c.Files {
				if !known[f.Name] {
					return fmt.Errorf("tasks: prepare run %s: file %q is not one of revision %d's", runID, f.Name, run.Revision)
				}
				names = append(names, f.Name)
			}
			embed := ""
			if c.Embed != nil {
				b, err := json.Marshal(c.Embed)
				if err != nil {
					return fmt.Errorf("tasks: prepare run %s: encode embed: %w", runID, err)
				}
				embed = string(b)
			}
			files, err := json.Marshal(names)
			if err != nil {
				return fmt.Errorf("tasks: prepare run %s: encode files: %w", runID, err)
			}
			mentions, err := json.Marshal(c.AllowedMentions)
			if err != nil {
				return fmt.Errorf("tasks: prepare run %s: encode mentions: %w", runID, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_task_posts (run_id, seq, chunk_index, chunk_total, channel_id, kind, content, embed, file_ids, mentions, status, updated_ms)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)`,
				runID, seq, c.Index+1, c.Total, int64(c.ChannelID), kind, c.Content, embed, string(files), string(mentions), now.UnixMilli()); err != nil {
				return fmt.Errorf("tasks: prepare run %s: insert post %d: %w", runID, seq, err)
			}
			return nil
		}
		for _, p := range out.Posts {
			for _, c := range Chunk(p) {
				if err := insert(c, "post"); err != nil {
					return err
				}
			}
		}
		if def.LogChannelID != 0 && run.Status != RunPreview {
			line := LogLine(name, "completed", fmt.Sprintf("%d posts", len(out.Posts)))
			lc := PostChunk{ChannelID: def.LogChannelID, Total: 1, Content: line, AllowedMentions: AllowedMentions{Parse: []string{}}}
			if err := insert(lc, "log"); err != nil {
				return err
			}
		}
		status := RunDelivering
		if run.Status == RunPreview {
			status = RunPreview
		}
		if _, err := tx.ExecContext(ctx, `UPDATE kimi_task_runs SET status = ?, started_ms = CASE WHEN started_ms = 0 THEN ? ELSE started_ms END WHERE id = ?`,
			string(status), now.UnixMilli(), runID); err != nil {
			return fmt.Errorf("tasks: prepare run %s: %w", runID, err)
		}
		return nil
	})
	if err == nil {
		s.notify()
	}
	return err
}

// postRow is a kimi_task_posts row as Deliver reads it.
type postRow struct {
	seq, index, total int
	channel           uint64
	kind              string
	content, embed    string
	files, mentions   string
	status            PostStatus
	attempts          int
}

// deliveryRun is what Deliver needs of the run and its task.
type deliveryRun struct {
	run     Run
	guild   uint64
	owner   uint64
	preview bool
}

func readDeliveryRun(ctx context.Context, q querier, runID string) (deliveryRun, error) {
	var d deliveryRun
	var guild, owner int64
	r, err := readRun(ctx, q, runID)
	if err != nil {
		return d, err
	}
	if err := q.QueryRowContext(ctx, `SELECT guild_id, owner_id FROM kimi_tasks WHERE id = ?`, r.TaskID).Scan(&guild, &owner); err != nil {
		return d, fmt.Errorf("tasks: read task of run %s: %w", runID, err)
	}
	return deliveryRun{run: r, guild: uint64(guild), owner: uint64(owner), preview: r.Status == RunPreview}, nil
}

func readPosts(ctx context.Context, q querier, runID string) ([]postRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, chunk_index, chunk_total, channel_id, kind, content, embed, file_ids, mentions, status, attempts
		FROM kimi_task_posts WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("tasks: read posts of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []postRow
	for rows.Next() {
		var p postRow
		var ch int64
		var st string
		if err := rows.Scan(&p.seq, &p.index, &p.total, &ch, &p.kind, &p.content, &p.embed, &p.files, &p.mentions, &st, &p.attempts); err != nil {
			return nil, fmt.Errorf("tasks: read posts of %s: %w", runID, err)
		}
		p.channel, p.status = uint64(ch), PostStatus(st)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: read posts of %s: %w", runID, err)
	}
	return out, nil
}

// chunk rebuilds the PostChunk of row p (files from the revision's).
func (p postRow) chunk(files []Attachment) (PostChunk, error) {
	c := PostChunk{ChannelID: p.channel, Index: p.index - 1, Total: p.total, Content: p.content}
	if p.embed != "" {
		c.Embed = &Embed{}
		if err := json.Unmarshal([]byte(p.embed), c.Embed); err != nil {
			return PostChunk{}, fmt.Errorf("tasks: post %d: embed: %w", p.seq, err)
		}
	}
	if err := json.Unmarshal([]byte(p.mentions), &c.AllowedMentions); err != nil {
		return PostChunk{}, fmt.Errorf("tasks: post %d: mentions: %w", p.seq, err)
	}
	if c.AllowedMentions.Parse == nil {
		c.AllowedMentions.Parse = []string{}
	}
	var names storedFiles
	if err := json.Unmarshal([]byte(p.files), &names); err != nil {
		return PostChunk{}, fmt.Errorf("tasks: post %d: files: %w", p.seq, err)
	}
	for _, n := range names {
		found := false
		for _, f := range files {
			if f.Name == n {
				c.Files, found = append(c.Files, f), true
				break
			}
		}
		if !found {
			return PostChunk{}, fmt.Errorf("tasks: post %d: file %q is gone", p.seq, n)
		}
	}
	return c, nil
}

// Deliver posts run runID's pending rows strictly in order, one at a time
// (waiting for one of the worker's slots first), and returns the run's
// status after. Each row is claimed (pending → sending with a fresh token,
// one transaction), posted, then recorded under the token guard: sent with
// its message id and published embed; a 429 under MaxPostAttempts goes
// back to pending and is re-sent after its wait; another HTTP error is
// failed; an error after the send started (5xx, no answer, unknown) is
// uncertain and never re-posted. A failed or uncertain post row stops the
// delivery (later rows stay pending), ends the run failed or uncertain and
// puts the task in needs_attention; a failed log row only records itself.
// The transaction that records the last post row as sent completes the
// run and enqueues its publication (Service.Results; nil: none). A preview
// run keeps its status, never enqueues and never changes the task.
func (d *Deliverer) Deliver(ctx context.Context, runID string) (RunStatus, error) {
	if d.waiting != nil {
		d.waiting()
	}
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("tasks: deliver %s: %w", runID, ctx.Err())
	}
	defer func() { <-d.sem }()

	st := d.s.st
	dr, err := readDeliveryRun(ctx, st.Reader(), runID)
	if err != nil {
		return "", err
	}
	if dr.run.Status != RunDelivering && !dr.preview && !ended(dr.run.Status) {
		return dr.run.Status, nil // nothing to deliver (not prepared)
	}
	files, err := readFiles(ctx, st.Reader(), dr.run.TaskID, dr.run.Revision)
	if err != nil {
		return "", err
	}
	waits := 0 // unavailable checks of the current row
	for {
		cur, err := readDeliveryRun(ctx, st.Reader(), runID)
		if err != nil {
			return "", err
		}
		dr.run = cur.run
		posts, err := readPosts(ctx, st.Reader(), runID)
		if err != nil {
			return "", err
		}
		// The post rows while the run delivers; its log row once it has
		// ended (completed, failed or uncertain).
		kind := "post"
		if ended(cur.run.Status) {
			kind = "log"
		} else if cur.run.Status != RunDelivering && !cur.preview {
			return cur.run.Status, nil
		}
		var next *postRow
		for i := range posts {
			if posts[i].status == PostSent || posts[i].kind != kind {
				continue
			}
			next = &posts[i]
			break
		}
		if next == nil || next.status != PostPending {
			// All sent, or blocked by a failed, uncertain or in-flight row.
			return cur.run.Status, nil
		}
		c, err := next.chunk(files)
		if err != nil {
			return "", err
		}
		if !dr.preview {
			aerr := d.destinationRefused(dr.guild, *next)
			if aerr == nil && d.auth != nil {
				aerr = d.auth.Authorize(ctx, dr.guild, dr.owner, c.ChannelID, c.Needs())
			}
			if aerr != nil && errors.Is(aerr, ErrUnavailable) && waits < MaxAuthorizeWaits {
				// The check could not be made: wait and check again.
				wait := d.delay << waits
				waits++
				d.s.log.Warn("delivery check unavailable; retrying", "run", runID, "seq", next.seq, "wait", wait, "err", aerr)
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return "", fmt.Errorf("tasks: deliver %s: %w", runID, ctx.Err())
				}
				continue
			}
			waits = 0
			if aerr != nil {
				if err := d.recordRefused(ctx, dr, *next, aerr); err != nil {
					return "", err
				}
				continue // the loop reads the blocked row and returns
			}
		}
		token, err := newID()
		if err != nil {
			return "", err
		}
		claimed := false
		attempts := 0
		err = st.Write(ctx, func(tx *sql.Tx) error {
			err := tx.QueryRowContext(ctx, `UPDATE kimi_task_posts SET status = 'sending', token = ?, attempts = attempts + 1, updated_ms = ?
				WHERE run_id = ? AND seq = ? AND status = 'pending' RETURNING attempts`, token, d.s.now().UnixMilli(), runID, next.seq).Scan(&attempts)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("tasks: claim post %d of %s: %w", next.seq, runID, err)
			}
			claimed = true
			return nil
		})
		if err != nil {
			return "", err
		}
		if !claimed {
			continue // another worker took it: re-read
		}
		msgID, embed, perr := d.poster.Post(ctx, dr.guild, c.ChannelID, c)
		if perr == nil {
			if err := d.recordSent(ctx, dr, *next, token, msgID, embed); err != nil {
				return "", err
			}
			d.s.notify()
			continue
		}
		oc, wait := classify(perr, attempts)
		if err := d.recordError(ctx, dr, *next, token, oc, perr); err != nil {
			return "", err
		}
		d.s.notify()
		if oc != outcomeRetry {
			continue // the loop reads the blocked row and returns
		}
		if wait <= 0 {
			wait = d.delay
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("tasks: deliver %s: %w", runID, ctx.Err())
		}
	}
}

// destinationRefused returns why post row p may no longer post to its
// channel under the guild's current policy (nil: it may).
func (d *Deliverer) destinationRefused(guild uint64, p postRow) error {
	if d.pols == nil || p.kind != "post" {
		return nil
	}
	if dests := d.pols.TaskPolicy(guild).Destinations; len(dests) > 0 && !slices.Contains(dests, p.channel) {
		return fmt.Errorf("channel %d is no longer one of this server's task destinations (scheduled_tasks.destinations)", p.channel)
	}
	return nil
}

// errLostClaim reports a row whose token changed under its sender.
var errLostClaim = errors.New("tasks: the post's claim was lost")

func guarded(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("tasks: %s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("tasks: %s: %w", what, errLostClaim)
	}
	return nil
}

// recordSent records row p sent under its token; when it is the last post
// row, the same transaction completes the run and enqueues its
// publication (confirmed publication).
func (d *Deliverer) recordSent(ctx context.Context, dr deliveryRun, p postRow, token string, msgID uint64, embed string) error {
	now := d.s.now()
	runID := dr.run.ID
	return d.s.st.Write(ctx, func(tx *sql.Tx) error {
		if embed != "" && !json.Valid([]byte(embed)) {
			embed = ""
		}
		res, err := tx.ExecContext(ctx, `UPDATE kimi_task_posts SET status = 'sent', message_id = ?, published_embed = ?, token = '', detail = '', updated_ms = ?
			WHERE run_id = ? AND seq = ? AND status = 'sending' AND token = ?`, int64(msgID), embed, now.UnixMilli(), runID, p.seq, token)
		if err := guarded(res, err, fmt.Sprintf("record post %d of %s sent", p.seq, runID)); err != nil {
			return err
		}
		if p.kind != "post" {
			return nil
		}
		var left int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kimi_task_posts WHERE run_id = ? AND kind = 'post' AND status <> 'sent'`, runID).Scan(&left); err != nil {
			return fmt.Errorf("tasks: record post %d of %s sent: %w", p.seq, runID, err)
		}
		if left > 0 {
			return nil
		}
		if dr.preview {
			_, err := tx.ExecContext(ctx, `UPDATE kimi_task_runs SET finished_ms = ? WHERE id = ? AND status = 'preview'`, now.UnixMilli(), runID)
			if err != nil {
				return fmt.Errorf("tasks: finish preview %s: %w", runID, err)
			}
			return nil
		}
		res, err = tx.ExecContext(ctx, `UPDATE kimi_task_runs SET status = 'completed', finished_ms = ? WHERE id = ? AND status = 'delivering'`, now.UnixMilli(), runID)
		if err := guarded(res, err, "complete run "+runID); err != nil {
			return err
		}
		var posts int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kimi_task_posts WHERE run_id = ? AND kind = 'post' AND chunk_index = 1`, runID).Scan(&posts); err != nil {
			return fmt.Errorf("tasks: complete run %s: %w", runID, err)
		}
		if err := logOutcome(ctx, tx, dr.run, "completed", fmt.Sprintf("%d posts", posts), now.UnixMilli()); err != nil {
			return err
		}
		if d.s.results == nil {
			return nil
		}
		msgs, err := sentMessages(ctx, tx, dr.guild, runID)
		if err != nil {
			return err
		}
		if _, err := d.s.results.Enqueue(ctx, tx, results.Publication{RunID: runID, TaskID: dr.run.TaskID, Revision: dr.run.Revision,
			GuildID: dr.guild, OwnerID: dr.owner, PublishedAt: now, Outcome: sdk.ResultCompleted, Messages: msgs}); err != nil {
			return fmt.Errorf("tasks: publish run %s: %w", runID, err)
		}
		return nil
	})
}

// sentMessages returns run runID's sent post rows (not log rows) in order.
func sentMessages(ctx context.Context, tx *sql.Tx, guild uint64, runID string) ([]sdk.ScheduledResultMessage, error) {
	// The run's files by name (an attachment's id is its name: names are
	// unique in a revision, and the producer's ReadFile takes it).
	sizes := map[string]int64{}
	frows, err := tx.QueryContext(ctx, `SELECT f.name, f.size FROM kimi_task_files f JOIN kimi_task_runs r ON r.task_id = f.task_id AND r.revision = f.revision
		WHERE r.id = ?`, runID)
	if err != nil {
		return nil, fmt.Errorf("tasks: read the files of %s: %w", runID, err)
	}
	for frows.Next() {
		var name string
		var size int64
		if err := frows.Scan(&name, &size); err != nil {
			frows.Close()
			return nil, fmt.Errorf("tasks: read the files of %s: %w", runID, err)
		}
		sizes[name] = size
	}
	if err := errors.Join(frows.Err(), frows.Close()); err != nil {
		return nil, fmt.Errorf("tasks: read the files of %s: %w", runID, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT channel_id, message_id, content, published_embed, file_ids FROM kimi_task_posts
		WHERE run_id = ? AND kind = 'post' AND status = 'sent' ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("tasks: read sent posts of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []sdk.ScheduledResultMessage
	for rows.Next() {
		var ch, msg int64
		var fileIDs string
		var m sdk.ScheduledResultMessage
		if err := rows.Scan(&ch, &msg, &m.Content, &m.EmbedJSON, &fileIDs); err != nil {
			return nil, fmt.Errorf("tasks: read sent posts of %s: %w", runID, err)
		}
		var names storedFiles
		if err := json.Unmarshal([]byte(fileIDs), &names); err != nil {
			return nil, fmt.Errorf("tasks: read sent posts of %s: files: %w", runID, err)
		}
		for _, n := range names {
			size, ok := sizes[n]
			if !ok {
				return nil, fmt.Errorf("tasks: read sent posts of %s: file %q is not the revision's", runID, n)
			}
			m.Attachments = append(m.Attachments, sdk.ScheduledResultAttachment{ID: n, Filename: n, SizeBytes: size})
		}
		m.Message = sdk.MessageRef{GuildID: guild, ChannelID: uint64(ch), MessageID: uint64(msg)}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: read sent posts of %s: %w", runID, err)
	}
	return out, nil
}

// recordError records row p's failed send under its token: back to
// pending (retry), failed or uncertain; a failed or uncertain post row
// ends the run so and puts the task in needs_attention (not a preview's).
func (d *Deliverer) recordError(ctx context.Context, dr deliveryRun, p postRow, token string, oc outcome, perr error) error {
	now := d.s.now().UnixMilli()
	runID := dr.run.ID
	detail := clip(perr.Error(), maxDetail)
	status, runStatus := PostPending, RunFailed
	switch oc {
	case outcomeFailed:
		status = PostFailed
	case outcomeUncertain:
		status, runStatus = PostUncertain, RunUncertain
	}
	return d.s.st.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE kimi_task_posts SET status = ?, token = '', detail = ?, updated_ms = ?
			WHERE run_id = ? AND seq = ? AND status = 'sending' AND token = ?`, string(status), detail, now, runID, p.seq, token)
		if err := guarded(res, err, fmt.Sprintf("record post %d of %s %s", p.seq, runID, status)); err != nil {
			return err
		}
		if status == PostPending || p.kind != "post" || dr.preview {
			return nil
		}
		runDetail := clip(fmt.Sprintf("post %d (chunk %d of %d) %s: %s", p.seq, p.index, p.total, status, perr.Error()), maxDetail)
		return endRun(ctx, tx, dr.run, runStatus, runDetail, now)
	})
}

// recordRefused records row p (still pending) failed because the
// Authorizer refused it: the row's detail is the refusal; a post row ends
// the run failed and puts the task in needs_attention.
func (d *Deliverer) recordRefused(ctx context.Context, dr deliveryRun, p postRow, aerr error) error {
	now := d.s.now().UnixMilli()
	runID := dr.run.ID
	detail := clip(aerr.Error(), maxDetail)
	err := d.s.st.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE kimi_task_posts SET status = 'failed', token = '', detail = ?, updated_ms = ?
			WHERE run_id = ? AND seq = ? AND status = 'pending'`, detail, now, runID, p.seq)
		if err := guarded(res, err, fmt.Sprintf("record post %d of %s refused", p.seq, runID)); err != nil {
			return err
		}
		if p.kind != "post" {
			return nil
		}
		runDetail := clip(fmt.Sprintf("post %d (chunk %d of %d) refused: %s", p.seq, p.index, p.total, aerr.Error()), maxDetail)
		return endRun(ctx, tx, dr.run, RunFailed, runDetail, now)
	})
	if err == nil {
		d.s.notify()
	}
	return err
}

// ended reports a run that has ended with an outcome its log row tells.
func ended(s RunStatus) bool {
	return s == RunCompleted || s == RunFailed || s == RunUncertain
}

// endRun ends run (delivering) as status with detail, puts its task in
// needs_attention and rewrites its pending log row to tell the outcome;
// inside the caller's transaction.
func endRun(ctx context.Context, tx *sql.Tx, run Run, status RunStatus, detail string, now int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE kimi_task_runs SET status = ?, detail = ?, finished_ms = ? WHERE id = ? AND status = 'delivering'`,
		string(status), detail, now, run.ID); err != nil {
		return fmt.Errorf("tasks: end run %s %s: %w", run.ID, status, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE kimi_tasks SET state = 'needs_attention', updated_ms = ? WHERE id = ?`, now, run.TaskID); err != nil {
		return fmt.Errorf("tasks: task %s needs attention: %w", run.TaskID, err)
	}
	return logOutcome(ctx, tx, run, string(status), detail, now)
}

// logOutcome rewrites run's pending log row (if any) to tell outcome.
func logOutcome(ctx context.Context, tx *sql.Tx, run Run, outcome, detail string, now int64) error {
	var name string
	err := tx.QueryRowContext(ctx, `SELECT name FROM kimi_tasks WHERE id = ?`, run.TaskID).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tasks: log outcome of %s: %w", run.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE kimi_task_posts SET content = ?, updated_ms = ? WHERE run_id = ? AND kind = 'log' AND status = 'pending'`,
		LogLine(name, outcome, detail), now, run.ID); err != nil {
		return fmt.Errorf("tasks: log outcome of %s: %w", run.ID, err)
	}
	return nil
}

// clip returns s cut to at most n code points.
func clip(s string, n int) string { return chunk.Clip(s, n) }
