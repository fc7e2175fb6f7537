package proposals

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// The decisions' replies and reasons (the original's words, §4.1).
const (
	ReplyNotFound      = "Proposal not found."
	ReplyOtherGuild    = "This proposal belongs to another guild."
	ReplyChanged       = "Not applied: configuration changed."
	ReplyApplied       = "Proposal applied."
	ReplyRejected      = "Proposal rejected."
	ReplyRecovered     = "Proposal applied: recovered an interrupted approval."
	ReasonChanged      = "configuration changed since proposal"
	ReasonRecovered    = "recovered an interrupted approval"
	MsgGuildBroken     = "the guild configuration is invalid"
	MsgGuildDisabled   = "module guild settings would disable this guild"
	MsgChangedAgain    = "the file changed again before rollback and was left untouched"
	replyAlreadyFormat = "Proposal is already %s."
)

// Approve applies a pending proposal (one decision at a time): re-validated,
// written only if the live document still equals the base (or already
// equals the proposal), the guild verified, and rolled back to the exact
// base when it does not verify (the proposal stays pending with
// LastError). An unknown id is ErrNotFound with Outcome.Message
// "Proposal not found.".
func (s *Service) Approve(ctx context.Context, id string, d Decider) (Outcome, error) {
	decisionMu.Lock()
	defer decisionMu.Unlock()
	p, out, done, err := s.loadPending(ctx, id, d)
	if done || err != nil {
		return out, err
	}
	return s.approve(ctx, p, d)
}

// loadPending reads a proposal for a decision; done is true when the
// decision ends there (unknown, another guild's, already decided: the card
// is refreshed).
func (s *Service) loadPending(ctx context.Context, id string, d Decider) (Proposal, Outcome, bool, error) {
	if !validID(id) {
		return Proposal{}, Outcome{Message: ReplyNotFound}, true, ErrNotFound
	}
	p, err := readProposal(ctx, s.st.Reader(), id)
	if errors.Is(err, ErrNotFound) {
		return Proposal{}, Outcome{Message: ReplyNotFound}, true, ErrNotFound
	}
	if err != nil {
		return Proposal{}, Outcome{}, true, err
	}
	if d.GuildID != 0 && d.GuildID != p.GuildID {
		return p, Outcome{Proposal: p, Message: ReplyOtherGuild}, true, nil
	}
	if p.State != sdk.ProposalPending {
		s.refreshCard(ctx, p)
		return p, Outcome{Proposal: p, Applied: p.State == sdk.ProposalApplied, Message: fmt.Sprintf(replyAlreadyFormat, stateWords(p.State))}, true, nil
	}
	return p, Outcome{}, false, nil
}

func (s *Service) approve(ctx context.Context, p Proposal, d Decider) (Outcome, error) {
	actor := guildcfg.Actor{Kind: guildcfg.ActorProposal, Name: p.ID, IP: d.IP}
	// The module a guild-module target configures must still be loaded: its
	// settings schema validates the content, and its OnChange applies it.
	if p.Target.Kind == guildcfg.KindGuildModule && s.known != nil && !s.known(p.Target.Module) {
		return s.failApproval(ctx, p, d, "unknown module "+hostkit.Repr(p.Target.Module), "", p.BaseRevision)
	}
	if err := s.guilds.Validate(p.Target, p.Content); err != nil {
		return s.failApproval(ctx, p, d, refusal(err).Error(), "", p.BaseRevision)
	}
	live, err := s.guilds.Document(ctx, p.Target)
	if err != nil {
		return Outcome{}, err
	}
	switch {
	case s.isBase(p, live):
		if _, err := s.guilds.Write(ctx, p.Target, p.Content, p.BaseRevision, actor); err != nil {
			var conflict *guildcfg.ConflictError
			if !errors.As(err, &conflict) {
				return s.failApproval(ctx, p, d, refusal(err).Error(), "", live.Revision)
			}
			return s.rejectChanged(ctx, p, d, conflict.Current.Revision)
		}
	case live.Exists && live.Text == p.Content:
		// already written (an interrupted approval): verify and finish
	default:
		return s.rejectChanged(ctx, p, d, live.Revision)
	}
	if problem := s.verify(ctx, p.GuildID); problem != "" {
		rb := s.rollback(ctx, p, actor)
		return s.failApproval(ctx, p, d, problem, rb, p.ContentRevision)
	}
	p.State, p.DecidedByUser, p.DecidedByAdmin, p.DecisionSource, p.DecisionReason = sdk.ProposalApplied, d.UserID, d.Admin, d.Source, ""
	ok, err := s.record(ctx, p, decision{state: sdk.ProposalApplied, d: d, audit: ActionApprove,
		event: Event{Kind: EventApplied, BeforeRevision: p.BaseRevision, AfterRevision: p.ContentRevision}})
	if err != nil {
		return Outcome{}, err
	}
	if !ok {
		return s.already(ctx, p.ID)
	}
	return s.finish(ctx, p.ID, ReplyApplied)
}

// isBase reports whether the live document is exactly the proposal's base.
func (s *Service) isBase(p Proposal, live guildcfg.Document) bool {
	return live.Exists == p.BaseExists && live.Revision == p.BaseRevision
}

// rejectChanged decides rejected with "configuration changed since
// proposal".
func (s *Service) rejectChanged(ctx context.Context, p Proposal, d Decider, liveRev string) (Outcome, error) {
	ok, err := s.record(ctx, p, decision{state: sdk.ProposalRejected, d: d, reason: ReasonChanged, audit: ActionReject,
		event: Event{Kind: EventRejected, Detail: ReasonChanged, BeforeRevision: liveRev, AfterRevision: liveRev}})
	if err != nil {
		return Outcome{}, err
	}
	if !ok {
		return s.already(ctx, p.ID)
	}
	return s.finish(ctx, p.ID, ReplyChanged)
}

// failApproval keeps the proposal pending with "Not applied: <failure>[;
// <rollback>]" as its LastError.
func (s *Service) failApproval(ctx context.Context, p Proposal, d Decider, failure, rollback, afterRev string) (Outcome, error) {
	msg := "Not applied: " + failure
	if rollback != "" {
		msg += "; " + rollback
	}
	live, err := s.guilds.Document(ctx, p.Target)
	if err == nil {
		afterRev = live.Revision
	}
	if _, err := s.record(ctx, p, decision{d: d, lastError: msg, audit: ActionApproveFailed,
		event: Event{Kind: EventApproveFailed, Detail: msg, BeforeRevision: p.BaseRevision, AfterRevision: afterRev}}); err != nil {
		return Outcome{}, err
	}
	out, err := s.finish(ctx, p.ID, msg)
	return out, err
}

// already answers a decision that lost the race for a proposal.
func (s *Service) already(ctx context.Context, id string) (Outcome, error) {
	p, err := readProposal(ctx, s.st.Reader(), id)
	if err != nil {
		return Outcome{}, err
	}
	s.refreshCard(ctx, p)
	return Outcome{Proposal: p, Applied: p.State == sdk.ProposalApplied, Message: fmt.Sprintf(replyAlreadyFormat, stateWords(p.State))}, nil
}

// finish re-reads the proposal, updates its card and tells the watchers.
func (s *Service) finish(ctx context.Context, id, msg string) (Outcome, error) {
	p, err := readProposal(ctx, s.st.Reader(), id)
	if err != nil {
		return Outcome{}, err
	}
	s.refreshCard(ctx, p)
	s.changed()
	return Outcome{Proposal: p, Applied: p.State == sdk.ProposalApplied, Message: msg}, nil
}

// verify checks the guild after a write: its server setup valid and no
// disable_guild module's settings invalid ("" when it verifies). The
// guildcfg snapshot already holds the write when Write returns, so
// activation and module settings are the refreshed ones.
func (s *Service) verify(ctx context.Context, guildID uint64) string {
	list, err := s.guilds.List(ctx)
	if err != nil {
		return MsgGuildBroken
	}
	i := slices.IndexFunc(list, func(g guildcfg.GuildSummary) bool { return g.GuildID == guildID })
	if i < 0 || !list[i].HasDocument || !list[i].Valid {
		return MsgGuildBroken
	}
	if len(list[i].BlockedBy) > 0 {
		return MsgGuildDisabled
	}
	return ""
}

// rollback restores the exact base (an absent base is deleted) if the live
// document is still the proposal's; it returns "" when restored, else why
// not.
func (s *Service) rollback(ctx context.Context, p Proposal, actor guildcfg.Actor) string {
	ctx = context.WithoutCancel(ctx)
	live, err := s.guilds.Document(ctx, p.Target)
	if err != nil {
		return "rollback failed: " + err.Error()
	}
	if !live.Exists || live.Text != p.Content {
		return MsgChangedAgain
	}
	if p.BaseExists {
		_, err = s.guilds.Write(ctx, p.Target, p.BaseContent, live.Revision, actor)
	} else {
		err = s.guilds.Delete(ctx, p.Target, live.Revision, actor)
	}
	var conflict *guildcfg.ConflictError
	switch {
	case errors.As(err, &conflict):
		return MsgChangedAgain
	case err != nil:
		s.log.Error("rolling back a failed approval failed", "proposal", p.ID, "err", err)
		return "rollback failed: " + refusal(err).Error()
	}
	return ""
}

// Reject rejects a pending proposal. If the proposed content is already
// live (an interrupted approval) and the guild verifies, the proposal is
// applied with "recovered an interrupted approval"; if it does not verify
// the base is restored first ("Could not reject safely: …" when that
// fails, the proposal staying pending).
func (s *Service) Reject(ctx context.Context, id string, d Decider, reason string) (Outcome, error) {
	decisionMu.Lock()
	defer decisionMu.Unlock()
	p, out, done, err := s.loadPending(ctx, id, d)
	if done || err != nil {
		return out, err
	}
	live, err := s.guilds.Document(ctx, p.Target)
	if err != nil {
		return Outcome{}, err
	}
	if !s.isBase(p, live) && live.Exists && live.Text == p.Content {
		if s.verify(ctx, p.GuildID) == "" {
			ok, err := s.record(ctx, p, decision{state: sdk.ProposalApplied, d: d, reason: ReasonRecovered, audit: ActionApprove,
				event: Event{Kind: EventRecovered, Detail: ReasonRecovered, BeforeRevision: p.BaseRevision, AfterRevision: p.ContentRevision}})
			if err != nil {
				return Outcome{}, err
			}
			if !ok {
				return s.already(ctx, p.ID)
			}
			return s.finish(ctx, p.ID, ReplyRecovered)
		}
		if rb := s.rollback(ctx, p, guildcfg.Actor{Kind: guildcfg.ActorProposal, Name: p.ID, IP: d.IP}); rb != "" {
			msg := "Could not reject safely: " + rb
			if _, err := s.record(ctx, p, decision{d: d, lastError: msg, audit: ActionApproveFailed,
				event: Event{Kind: EventApproveFailed, Detail: msg, BeforeRevision: p.BaseRevision, AfterRevision: p.ContentRevision}}); err != nil {
				return Outcome{}, err
			}
			return s.finish(ctx, p.ID, msg)
		}
		live.Revision = p.BaseRevision
	}
	ok, err := s.record(ctx, p, decision{state: sdk.ProposalRejected, d: d, reason: reason, audit: ActionReject,
		event: Event{Kind: EventRejected, Detail: reason, BeforeRevision: live.Revision, AfterRevision: live.Revision}})
	if err != nil {
		return Outcome{}, err
	}
	if !ok {
		return s.already(ctx, p.ID)
	}
	return s.finish(ctx, p.ID, ReplyRejected)
}

// Check validates the proposed content against the configuration as it is
// now: the problems an approval would meet (none: it would apply), and
// whether the live document still equals the base (Conflict false) or
// already equals the proposal.
func (s *Service) Check(ctx context.Context, id string) (CheckResult, error) {
	p, _, err := s.Get(ctx, id)
	if err != nil {
		return CheckResult{}, err
	}
	var res CheckResult
	if err := s.guilds.Validate(p.Target, p.Content); err != nil {
		var ve *guildcfg.ValidationError
		if errors.As(err, &ve) && len(ve.Problems) > 0 {
			res.Problems = ve.Messages()
		} else {
			res.Problems = []string{refusal(err).Error()}
		}
	}
	res.Live, err = s.guilds.Document(ctx, p.Target)
	if err != nil {
		var te *guildcfg.TargetError
		if !errors.As(err, &te) {
			return CheckResult{}, err
		}
		res.Problems = append(res.Problems, te.Message)
		return res, nil
	}
	res.Conflict = !s.isBase(p, res.Live) && !(res.Live.Exists && res.Live.Text == p.Content)
	return res, nil
}
