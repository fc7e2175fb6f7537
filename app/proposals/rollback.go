package proposals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// ActionRollback is the audit action of a roll back (its detail carries the
// live document's revisions before and after).
const ActionRollback = "proposal.rollback"

// EventRolledBack is the history event of a roll back.
const EventRolledBack = "rolled_back"

// The roll back's replies.
const (
	ReplyRolledBack = "Proposal rolled back: the document is again the one it was made against."
	// ReplyNotApplied is the reply for any state but applied (%s: the
	// state).
	ReplyNotApplied = "Only an applied proposal can be rolled back; this one is %s."
	// ReplyChangedSince refuses a roll back whose document changed after
	// the proposal was applied (%s: the live revision, or "deleted").
	ReplyChangedSince = "Not rolled back: the document changed since this proposal was applied (it is now %s). " +
		"Rolling back would throw that later change away; revert to the revision you want from the document's history instead."
)

// Rollback restores an applied proposal's document to its base (an absent
// base is deleted) through the same compare-and-swap as the approval: the
// write expects the proposal's own revision, so a document changed since
// it was applied is left untouched and the roll back refused with
// ReplyChangedSince (nothing is decided, nothing audited). A roll back
// that writes marks the proposal rolled_back with an event and an
// ActionRollback audit row. Decisions run one at a time; an unknown id is
// ErrNotFound.
func (s *Service) Rollback(ctx context.Context, id string, d Decider) (Outcome, error) {
	decisionMu.Lock()
	defer decisionMu.Unlock()
	if !validID(id) {
		return Outcome{Message: ReplyNotFound}, ErrNotFound
	}
	p, err := readProposal(ctx, s.st.Reader(), id)
	if err != nil {
		return Outcome{Message: ReplyNotFound}, err
	}
	if p.State != sdk.ProposalApplied {
		return Outcome{Proposal: p, Message: RollbackRefusal(p, guildcfg.Document{})}, nil
	}
	live, err := s.guilds.Document(ctx, p.Target)
	if err != nil {
		return Outcome{}, err
	}
	if msg := RollbackRefusal(p, live); msg != "" {
		return Outcome{Proposal: p, Message: msg}, nil
	}
	actor := guildcfg.Actor{Kind: guildcfg.ActorProposal, Name: p.ID, IP: d.IP}
	if p.BaseExists {
		_, err = s.guilds.Write(ctx, p.Target, p.BaseContent, p.ContentRevision, actor)
	} else {
		err = s.guilds.Delete(ctx, p.Target, p.ContentRevision, actor)
	}
	var conflict *guildcfg.ConflictError
	switch {
	case errors.As(err, &conflict):
		return Outcome{Proposal: p, Message: changedSince(conflict.Current)}, nil
	case err != nil:
		var te *guildcfg.TargetError
		var ve *guildcfg.ValidationError
		if errors.As(err, &te) || errors.As(err, &ve) {
			return Outcome{Proposal: p, Message: "Not rolled back: " + refusal(err).Error()}, nil
		}
		return Outcome{}, fmt.Errorf("proposals: roll back %s: %w", p.ID, err)
	}
	ok, err := s.recordRollback(ctx, p, d)
	if err != nil {
		return Outcome{}, err
	}
	if !ok {
		return s.already(ctx, p.ID)
	}
	out, err := s.finish(ctx, p.ID, ReplyRolledBack)
	out.RolledBack = err == nil
	return out, err
}

// RollbackRefusal is why p cannot be rolled back over the live document
// ("" when it can): it is not applied, or the document changed since.
func RollbackRefusal(p Proposal, live guildcfg.Document) string {
	if p.State != sdk.ProposalApplied {
		return fmt.Sprintf(ReplyNotApplied, stateWords(p.State))
	}
	if !AppliedIsLive(p, live) {
		return changedSince(live)
	}
	return ""
}

// AppliedIsLive reports whether the live document is still the one an
// applied proposal wrote (the only document a roll back may replace).
func AppliedIsLive(p Proposal, live guildcfg.Document) bool {
	return live.Exists && live.Revision == p.ContentRevision
}

// BaseIsLive reports whether the live document is exactly the proposal's
// base (what a rolled-back proposal left).
func BaseIsLive(p Proposal, live guildcfg.Document) bool {
	return live.Exists == p.BaseExists && (!live.Exists || live.Revision == p.BaseRevision)
}

func changedSince(live guildcfg.Document) string {
	now := "deleted"
	if live.Exists {
		now = "at revision " + guildcfg.ShortRevision(live.Revision)
		if live.UpdatedBy != "" {
			now += ", written by " + live.UpdatedBy
		}
	}
	return fmt.Sprintf(ReplyChangedSince, now)
}

// stateWords is a state as a sentence says it.
func stateWords(st State) string {
	if st == sdk.ProposalRolledBack {
		return "rolled back"
	}
	return string(st)
}

// recordRollback marks an applied proposal rolled back with its event and
// audit row; false when it was no longer applied.
func (s *Service) recordRollback(ctx context.Context, p Proposal, d Decider) (bool, error) {
	now := s.now()
	ok := true
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE kimi_proposals SET state = 'rolled_back', decided_by_user = ?, decided_by_admin = ?,
			decision_source = ?, decision_reason = '', decided_ms = ?, updated_ms = ? WHERE id = ? AND state = 'applied'`,
			int64(d.UserID), d.Admin, d.Source, now.UnixMilli(), now.UnixMilli(), p.ID)
		if err != nil {
			return fmt.Errorf("proposals: roll back %s: %w", p.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			ok = false
			return nil
		}
		after := p.BaseRevision
		if !p.BaseExists {
			after = guildcfg.EmptyRevision
		}
		if err := insertEvent(ctx, tx, p.ID, Event{At: now, Kind: EventRolledBack, Actor: deciderName(d), Source: d.Source,
			BeforeRevision: p.ContentRevision, AfterRevision: after}); err != nil {
			return err
		}
		detail := fmt.Sprintf("%s %s: revision %s -> %s", p.Target.String(), p.ID,
			guildcfg.ShortRevision(p.ContentRevision), guildcfg.ShortRevision(after))
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: auditActor(d), Action: ActionRollback,
			Target: "proposal:" + p.ID, Detail: detail, IP: d.IP})
	})
	return ok, err
}
