package proposals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Audit actions of decisions (their details carry the live document's
// revisions before and after).
const (
	ActionApprove       = "proposal.approve"
	ActionApproveFailed = "proposal.approve_failed"
	ActionReject        = "proposal.reject"
)

// Event kinds.
const (
	EventCreated       = "created"
	EventCardPosted    = "card_posted"
	EventApproveFailed = "approve_failed"
	EventApplied       = "applied"
	EventRejected      = "rejected"
	EventRecovered     = "recovered"
)

const proposalColumns = `id, guild_id, target, module, summary, content, content_revision, base_exists, base_content, base_revision,
	actor_user_id, actor_source, actor_channel_id, state, decided_by_user, decided_by_admin, decision_source, decision_reason,
	decided_ms, last_error, card_channel_id, card_message_id, created_ms, updated_ms`

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func scanProposal(sc interface{ Scan(...any) error }) (Proposal, error) {
	var (
		p                                        Proposal
		guild, actorUser, actorChan, decidedBy   int64
		cardChan, cardMsg, decided, created, upd int64
		target, state                            string
		baseExists                               int
	)
	err := sc.Scan(&p.ID, &guild, &target, &p.Module, &p.Summary, &p.Content, &p.ContentRevision, &baseExists, &p.BaseContent, &p.BaseRevision,
		&actorUser, &p.Actor.Source, &actorChan, &state, &decidedBy, &p.DecidedByAdmin, &p.DecisionSource, &p.DecisionReason,
		&decided, &p.LastError, &cardChan, &cardMsg, &created, &upd)
	if err != nil {
		return Proposal{}, err
	}
	t, err := guildcfg.ParseTarget(target)
	if err != nil {
		return Proposal{}, fmt.Errorf("proposals: stored target %q: %w", target, err)
	}
	p.Target, p.GuildID, p.State, p.BaseExists = t, uint64(guild), State(state), baseExists == 1
	p.Actor.UserID, p.Actor.GuildID, p.Actor.ChannelID = uint64(actorUser), uint64(guild), uint64(actorChan)
	p.DecidedByUser = uint64(decidedBy)
	if decided > 0 {
		p.DecidedAt = time.UnixMilli(decided).UTC()
	}
	if cardMsg > 0 {
		p.Card = sdk.MessageRef{GuildID: uint64(guild), ChannelID: uint64(cardChan), MessageID: uint64(cardMsg)}
	}
	p.CreatedAt, p.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(upd).UTC()
	return p, nil
}

func readProposal(ctx context.Context, q querier, id string) (Proposal, error) {
	p, err := scanProposal(q.QueryRowContext(ctx, `SELECT `+proposalColumns+` FROM kimi_proposals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Proposal{}, ErrNotFound
	}
	if err != nil {
		return Proposal{}, fmt.Errorf("proposals: read %s: %w", id, err)
	}
	return p, nil
}

func insertEvent(ctx context.Context, tx *sql.Tx, id string, e Event) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO kimi_proposal_events (proposal_id, at_ms, kind, actor, source, detail, before_revision, after_revision)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, e.At.UnixMilli(), e.Kind, e.Actor, e.Source, e.Detail, e.BeforeRevision, e.AfterRevision)
	if err != nil {
		return fmt.Errorf("proposals: record %s event of %s: %w", e.Kind, id, err)
	}
	return nil
}

// insert stores a new pending proposal with its created event.
func (s *Service) insert(ctx context.Context, p Proposal) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		base := 0
		if p.BaseExists {
			base = 1
		}
		ms := p.CreatedAt.UnixMilli()
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_proposals (id, guild_id, target, module, summary, content, content_revision,
			base_exists, base_content, base_revision, actor_user_id, actor_source, actor_channel_id, state, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
			p.ID, int64(p.GuildID), p.Target.String(), p.Module, p.Summary, p.Content, p.ContentRevision, base, p.BaseContent, p.BaseRevision,
			int64(p.Actor.UserID), p.Actor.Source, int64(p.Actor.ChannelID), ms, ms)
		if err != nil {
			return fmt.Errorf("proposals: insert %s: %w", p.ID, err)
		}
		return insertEvent(ctx, tx, p.ID, Event{At: p.CreatedAt, Kind: EventCreated, Actor: userActor(p.Actor.UserID), Source: p.Module,
			Detail: p.Summary, BeforeRevision: p.BaseRevision, AfterRevision: p.ContentRevision})
	})
}

// remove deletes a proposal whose card could not be posted, if it is
// still pending (a decided one is kept: it may be applied); it reports
// whether it deleted it.
func (s *Service) remove(ctx context.Context, id string) (bool, error) {
	removed := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_proposals WHERE id = ? AND state = 'pending'`, id)
		if err != nil {
			return fmt.Errorf("proposals: delete %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		removed = true
		if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_proposal_events WHERE proposal_id = ?`, id); err != nil {
			return fmt.Errorf("proposals: delete events of %s: %w", id, err)
		}
		return nil
	})
	return removed, err
}

// attachCard records the card's message.
func (s *Service) attachCard(ctx context.Context, id string, ref sdk.MessageRef) error {
	now := s.now()
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE kimi_proposals SET card_channel_id = ?, card_message_id = ?, updated_ms = ? WHERE id = ?`,
			int64(ref.ChannelID), int64(ref.MessageID), now.UnixMilli(), id); err != nil {
			return fmt.Errorf("proposals: attach the card of %s: %w", id, err)
		}
		return insertEvent(ctx, tx, id, Event{At: now, Kind: EventCardPosted, Actor: "kimi", Source: "kimi",
			Detail: fmt.Sprintf("channel %d, message %d", ref.ChannelID, ref.MessageID)})
	})
}

// decision is a state change with its event and audit row.
type decision struct {
	state      State // "" keeps the proposal pending (a failed approval)
	d          Decider
	reason     string
	lastError  string
	event      Event
	audit      string // the audit action
	auditExtra string
}

// record commits a decision: the state change (single use: only a
// pending proposal changes), its event and its audit row. It reports
// false when the proposal was no longer pending.
func (s *Service) record(ctx context.Context, p Proposal, dc decision) (bool, error) {
	now := s.now()
	ok := true
	err := s.write(ctx, func(tx *sql.Tx) error {
		var res sql.Result
		var err error
		if dc.state == "" {
			res, err = tx.ExecContext(ctx, `UPDATE kimi_proposals SET last_error = ?, updated_ms = ? WHERE id = ? AND state = 'pending'`,
				dc.lastError, now.UnixMilli(), p.ID)
		} else {
			res, err = tx.ExecContext(ctx, `UPDATE kimi_proposals SET state = ?, decided_by_user = ?, decided_by_admin = ?, decision_source = ?,
				decision_reason = ?, decided_ms = ?, last_error = '', updated_ms = ? WHERE id = ? AND state = 'pending'`,
				string(dc.state), int64(dc.d.UserID), dc.d.Admin, dc.d.Source, dc.reason, now.UnixMilli(), now.UnixMilli(), p.ID)
		}
		if err != nil {
			return fmt.Errorf("proposals: decide %s: %w", p.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			ok = false
			return nil
		}
		dc.event.At = now
		dc.event.Actor, dc.event.Source = deciderName(dc.d), dc.d.Source
		if err := insertEvent(ctx, tx, p.ID, dc.event); err != nil {
			return err
		}
		detail := fmt.Sprintf("%s %s: revision %s -> %s", p.Target.String(), p.ID,
			guildcfg.ShortRevision(dc.event.BeforeRevision), guildcfg.ShortRevision(dc.event.AfterRevision))
		if dc.event.Detail != "" {
			detail += " (" + dc.event.Detail + ")"
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: auditActor(dc.d), Action: dc.audit,
			Target: "proposal:" + p.ID, Detail: detail, IP: dc.d.IP})
	})
	return ok, err
}

// Get returns a proposal and its history, kept until the service's next
// write (counts.go) when its documents are small.
func (s *Service) Get(ctx context.Context, id string) (Proposal, []Event, error) {
	if !validID(id) {
		return Proposal{}, nil, ErrNotFound
	}
	if p, events, ok := s.keptProposal(id); ok {
		return p, events, nil
	}
	gen := s.counts.gen.Load()
	p, events, err := s.get(ctx, id)
	if err == nil {
		s.keepProposal(gen, p, events)
	}
	return p, events, err
}

func (s *Service) get(ctx context.Context, id string) (Proposal, []Event, error) {
	p, err := readProposal(ctx, s.st.Reader(), id)
	if err != nil {
		return Proposal{}, nil, err
	}
	rows, err := s.st.Reader().QueryContext(ctx, `SELECT at_ms, kind, actor, source, detail, before_revision, after_revision
		FROM kimi_proposal_events WHERE proposal_id = ? ORDER BY id`, id)
	if err != nil {
		return Proposal{}, nil, fmt.Errorf("proposals: read the history of %s: %w", id, err)
	}
	defer rows.Close()
	var events []Event
	for rows.Next() {
		var e Event
		var at int64
		if err := rows.Scan(&at, &e.Kind, &e.Actor, &e.Source, &e.Detail, &e.BeforeRevision, &e.AfterRevision); err != nil {
			return Proposal{}, nil, fmt.Errorf("proposals: read the history of %s: %w", id, err)
		}
		e.At = time.UnixMilli(at).UTC()
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return Proposal{}, nil, fmt.Errorf("proposals: read the history of %s: %w", id, err)
	}
	return p, events, nil
}

// List returns a page of the inbox, newest first (keyset on created time
// and id).
func (s *Service) List(ctx context.Context, f Filter) (Page, error) {
	limit := f.Limit
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	var where []string
	var args []any
	if f.GuildID != 0 {
		where, args = append(where, "guild_id = ?"), append(args, int64(f.GuildID))
	}
	if f.Module != "" {
		where, args = append(where, "module = ?"), append(args, f.Module)
	}
	if f.Target != "" {
		where, args = append(where, "target = ?"), append(args, f.Target)
	}
	common := len(where)
	commonArgs := append([]any(nil), args...)
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, string(f.State))
	}
	if f.After != "" {
		ms, id, ok := parseCursor(f.After)
		if !ok {
			return Page{}, fmt.Errorf("proposals: list: bad cursor %q", f.After)
		}
		where, args = append(where, "(created_ms < ? OR (created_ms = ? AND id < ?))"), append(args, ms, ms, id)
	}
	q := `SELECT ` + proposalColumns + ` FROM kimi_proposals`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_ms DESC, id DESC LIMIT ?"
	args = append(args, limit+1)
	var page Page
	key := q + "\x00" + argsKey(args)
	items, next, gen, ok := s.keptPage(key)
	if ok {
		// Kept pages are shared: callers get their own slice.
		page.Items, page.Next = slices.Clone(items), next
	} else {
		rows, err := s.st.Reader().QueryContext(ctx, q, args...)
		if err != nil {
			return Page{}, fmt.Errorf("proposals: list: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			p, err := scanProposal(rows)
			if err != nil {
				return Page{}, fmt.Errorf("proposals: list: %w", err)
			}
			page.Items = append(page.Items, p)
		}
		if err := rows.Err(); err != nil {
			return Page{}, fmt.Errorf("proposals: list: %w", err)
		}
		if len(page.Items) > limit {
			page.Items = page.Items[:limit]
			last := page.Items[limit-1]
			page.Next = strconv.FormatInt(last.CreatedAt.UnixMilli(), 10) + ":" + last.ID
		}
		s.keepPage(key, gen, slices.Clone(page.Items), page.Next)
	}
	cq := `SELECT state, count(*) FROM kimi_proposals`
	if common > 0 {
		cq += " WHERE " + strings.Join(where[:common], " AND ")
	}
	cq += " GROUP BY state"
	by, err := s.countsBy(ctx, cq, commonArgs)
	if err != nil {
		return Page{}, fmt.Errorf("proposals: count: %w", err)
	}
	page.Counts = map[State]int{sdk.ProposalPending: 0, sdk.ProposalApplied: 0, sdk.ProposalRejected: 0, sdk.ProposalRolledBack: 0}
	for st, n := range by {
		page.Counts[st] = n
	}
	return page, nil
}

func parseCursor(c string) (int64, string, bool) {
	msText, id, ok := strings.Cut(c, ":")
	ms, err := strconv.ParseInt(msText, 10, 64)
	return ms, id, ok && err == nil && validID(id)
}

// PendingCount is the number of pending proposals (the navigation badge).
func (s *Service) PendingCount(ctx context.Context) (int, error) {
	by, err := s.countsBy(ctx, `SELECT state, count(*) FROM kimi_proposals GROUP BY state`, nil)
	if err != nil {
		return 0, fmt.Errorf("proposals: count pending: %w", err)
	}
	return by[sdk.ProposalPending], nil
}

// Uncarded returns the pending proposals without a review card, oldest
// first.
func (s *Service) Uncarded(ctx context.Context) ([]Proposal, error) {
	rows, err := s.st.Reader().QueryContext(ctx, `SELECT `+proposalColumns+` FROM kimi_proposals
		WHERE state = 'pending' AND card_message_id = 0 ORDER BY created_ms, id`)
	if err != nil {
		return nil, fmt.Errorf("proposals: uncarded: %w", err)
	}
	defer rows.Close()
	var out []Proposal
	for rows.Next() {
		p, err := scanProposal(rows)
		if err != nil {
			return nil, fmt.Errorf("proposals: uncarded: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func userActor(id uint64) string { return fmt.Sprintf("<@%d>", id) }

// deciderName is the decider as the history shows it.
func deciderName(d Decider) string {
	switch {
	case d.Source == "web":
		return d.Admin
	case d.UserID != 0:
		return userActor(d.UserID)
	}
	return "kimi"
}

// auditActor is the decider as the audit log shows it: the admin's
// username, or discord:<user id>.
func auditActor(d Decider) string {
	if d.Source == "web" {
		return d.Admin
	}
	return "discord:" + strconv.FormatUint(d.UserID, 10)
}
