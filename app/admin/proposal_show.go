package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/web/templates"
)

// proposalShow is GET /proposals/{id}: the proposal, its check against the
// configuration as it is now, the diff, the decision forms and history.
// An id that is not 32 lowercase hex, or that the service does not know,
// is a 404.
func (s *Server) proposalShow(c echo.Context) error {
	id, err := proposalParam(c)
	if err != nil {
		return err
	}
	return s.renderProposal(c, http.StatusOK, id, form.ProposalReject{}, nil)
}

// renderProposal renders the proposal page with the reject form as typed
// and its errors (nil: none).
func (s *Server) renderProposal(c echo.Context, status int, id string, reject form.ProposalReject, errs form.Errors) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	ch := s.chrome(c, "Proposal "+id[:8], "proposals")
	v := templates.ProposalView{ID: id, Live: "/proposals/events?view=detail&id=" + id}
	if reason := reject.KeptReason(); reason == "" && len(errs) == 0 {
		// The page as stored data renders it: kept for every session.
		region, summary, err := s.proposalDetailRegion(ctx, id, ch.CSRF)
		if err != nil {
			return err
		}
		v.Summary, v.DetailKept = summary, region
		return render(c, status, templates.ProposalPage(ch, v))
	}
	d, err := s.proposalDetailView(ctx, id)
	if err != nil {
		return err
	}
	d.Reason, d.Errors = reject.KeptReason(), errs
	v.Summary, v.Detail = d.Summary, d
	return render(c, status, templates.ProposalPage(ch, v))
}

// proposalDetailView reads a proposal, its history and (while pending) its
// check. An unknown id is echo.ErrNotFound.
func (s *Server) proposalDetailView(ctx context.Context, id string) (templates.ProposalDetailView, error) {
	v, _, err := s.proposalDetail(ctx, id)
	return v, err
}

// proposalDetail is proposalDetailView and whether it is whole: false when
// a check against the live document failed (the page says to reload; such
// a render is not kept).
func (s *Server) proposalDetail(ctx context.Context, id string) (templates.ProposalDetailView, bool, error) {
	whole := true
	p, events, err := s.opts.Proposals.Get(ctx, id)
	if errors.Is(err, proposals.ErrNotFound) {
		return templates.ProposalDetailView{}, false, echo.ErrNotFound
	} else if err != nil {
		return templates.ProposalDetailView{}, false, fmt.Errorf("admin: proposal: %w", err)
	}
	v := templates.ProposalDetailView{
		ID: p.ID, Summary: p.Summary, State: string(p.State), StateLabel: templates.ProposalStateLabel(string(p.State)), StateKind: stateBadge(p.State),
		Pending: p.State == sdk.ProposalPending, Module: p.Module, Proposer: mention(p.Actor.UserID),
		Source: p.Actor.Source, Target: p.Target.String(),
		CreatedAt: proposalTime(p.CreatedAt), CreatedAtExact: exactTime(p.CreatedAt), LastError: p.LastError,
	}
	names := s.namer()
	v.ProposerName = names.Member(p.Actor.GuildID, p.Actor.UserID)
	if p.Actor.ChannelID != 0 {
		v.Channel = "<#" + strconv.FormatUint(p.Actor.ChannelID, 10) + ">"
		v.ChannelName = names.Channel(p.Actor.ChannelID)
	}
	v.TargetName, v.TargetURL, v.HistoryURL = targetLinks(p.Target, names)
	v.Mentions = s.mentions(p.Target.GuildID)
	if !v.Pending {
		switch {
		case p.DecidedByAdmin != "":
			v.DecidedBy = p.DecidedByAdmin
		case p.DecidedByUser != 0:
			v.DecidedBy = mention(p.DecidedByUser)
			v.DeciderName = names.Member(p.Target.GuildID, p.DecidedByUser)
		default:
			v.DecidedBy = "kimi"
		}
		v.DecisionSource, v.DecisionReason, v.DecidedAt = p.DecisionSource, p.DecisionReason, proposalTime(p.DecidedAt)
	}
	if p.State == sdk.ProposalApplied || p.State == sdk.ProposalRolledBack {
		if check, err := s.opts.Proposals.Check(ctx, id); err != nil {
			s.log.Warn("read a decided proposal's live document", "proposal", id, "err", err)
			whole = false
		} else {
			v.CanRollback, v.RollbackNote = rollbackView(p, check.Live)
		}
	}
	before, beforeName := p.BaseContent, "As it was when proposed"
	if v.Pending {
		v.Checked = true
		check, err := s.opts.Proposals.Check(ctx, id)
		switch {
		case errors.Is(err, proposals.ErrNotFound):
			return templates.ProposalDetailView{}, false, echo.ErrNotFound
		case err != nil:
			s.log.Warn("check a proposal", "proposal", id, "err", err)
			whole = false
			v.CheckError = "The proposal could not be checked against the live configuration just now; reload to try again. Approving checks it again in any case."
		default:
			before, beforeName = check.Live.Text, "Live now"
			v.Problems = check.Problems
			v.AlreadyLive = check.Live.Revision == p.ContentRevision
			switch {
			case check.Conflict:
				v.Conflict = conflictText(p, check.Live)
			case len(check.Problems) == 0:
				v.WouldApply = true
			}
		}
	}
	v.DiffOld, v.DiffNew = beforeName, "Proposed"
	// The split view has sides, the unified one (phones) only markers: each
	// has its own caption, and CSS shows the one of the view it shows.
	v.DiffTitle = beforeName + " (left, −) against the proposed document (right, +)."
	v.DiffTitleUnified = beforeName + " (lines marked −) against the proposed document (lines marked +)."
	if !v.Pending {
		v.DiffTitle = "What the proposal changes against the document as it was when proposed (left, −: then; right, +: proposed)."
		v.DiffTitleUnified = "What the proposal changes against the document as it was when proposed (−: then; +: proposed)."
	}
	hunks, canonical := guildcfg.DiffDocuments(before, p.Content)
	v.NoChanges = len(hunks) == 0
	if canonical {
		v.DiffNote = "Both documents are compared as parsed, with their keys in alphabetical order: a key that only moved is no change."
		v.Reserialised = v.NoChanges && before != p.Content
	}
	v.Split, v.Unified = splitDiff(hunks), unifiedDiff(hunks)
	for _, e := range events {
		v.Events = append(v.Events, proposalEventView(e, names, p.Target.GuildID))
	}
	return v, whole, nil
}

// conflictText explains in plain words why an approval now would reject
// the proposal.
func conflictText(p proposals.Proposal, live guildcfg.Document) string {
	was := "did not exist"
	if p.BaseExists {
		was = "was at revision " + guildcfg.ShortRevision(p.BaseRevision)
	}
	now := "has been deleted"
	if live.Exists {
		now = "is now at revision " + guildcfg.ShortRevision(live.Revision)
		if live.UpdatedBy != "" {
			now += ", written by " + live.UpdatedBy
		}
		if !live.UpdatedAt.IsZero() {
			now += " at " + proposalTime(live.UpdatedAt)
		}
	}
	return "The document changed since this proposal was made: it " + was + " then and " + now +
		". Approving would not apply it — it would be rejected with “configuration changed since proposal”. " +
		"Reject it, and ask for a new proposal against the current document if the change is still wanted."
}

// rollbackView says whether an applied proposal can be rolled back (its
// document still the one it wrote) and, when its document changed since it
// was applied or rolled back, a note that says so.
func rollbackView(p proposals.Proposal, live guildcfg.Document) (can bool, note string) {
	now := "has been deleted"
	if live.Exists {
		now = "is now at revision " + guildcfg.ShortRevision(live.Revision)
		if live.UpdatedBy != "" {
			now += ", written by " + live.UpdatedBy
		}
		if !live.UpdatedAt.IsZero() {
			now += " at " + proposalTime(live.UpdatedAt)
		}
	}
	switch {
	case p.State == sdk.ProposalApplied && proposals.AppliedIsLive(p, live):
		return true, ""
	case p.State == sdk.ProposalApplied:
		return false, "The document changed since this proposal was applied: it " + now + ". " +
			"It can no longer be rolled back, as that would throw the later change away; revert to the revision you want from the document's history instead."
	case p.State == sdk.ProposalRolledBack && !proposals.BaseIsLive(p, live):
		return false, "The document changed again since this proposal was rolled back: it " + now + "."
	}
	return false, ""
}

// targetLinks names a target and links its pages: the guild page (a
// module's card on it) and the document's history. Channel fragments have
// no page.
func targetLinks(t guildcfg.Target, names namer) (name, page, history string) {
	switch t.Kind {
	case guildcfg.KindGuild:
		return "Server setup of " + names.Guild(t.GuildID).Text(), guildPath(t.GuildID) + "#setup", historyURL(t.GuildID, "", 0)
	case guildcfg.KindGuildModule:
		return t.Module + " settings in " + names.Guild(t.GuildID).Text(), guildPath(t.GuildID) + "#module-" + t.Module,
			historyURL(t.GuildID, t.Module, 0)
	case guildcfg.KindChannel:
		return "Fragment of " + names.Channel(t.ChannelID).Text(), "", ""
	}
	return t.String(), "", ""
}

// unifiedDiff is hunks as the unified view shows them (phones).
func unifiedDiff(hunks []guildcfg.Hunk) []templates.DiffHunk {
	var out []templates.DiffHunk
	for _, h := range hunks {
		out = append(out, historyHunk(h))
	}
	return out
}

// historyHunk is one hunk as the history page's diff and a proposal's
// unified diff show it.
func historyHunk(h guildcfg.Hunk) templates.DiffHunk {
	hv := templates.DiffHunk{Header: hunkHeader(h)}
	for _, l := range h.Lines {
		dl := templates.DiffLine{Op: "ctx", Marker: " ", Text: l.Text}
		switch l.Op {
		case guildcfg.DiffInsert:
			dl.Op, dl.Marker = "add", "+"
		case guildcfg.DiffDelete:
			dl.Op, dl.Marker = "del", "-"
		}
		hv.Lines = append(hv.Lines, dl)
	}
	return hv
}

func hunkHeader(h guildcfg.Hunk) string {
	return fmt.Sprintf("@@ -%d,%d +%d,%d @@", h.BeforeStart, h.BeforeLines, h.AfterStart, h.AfterLines)
}

// splitDiff is hunks as side-by-side rows (wide screens): unchanged lines
// on both sides, a run of removed lines paired with the added lines that
// follow it, row by row, the shorter side padded with empty cells.
func splitDiff(hunks []guildcfg.Hunk) []templates.SplitRow {
	var rows []templates.SplitRow
	for _, h := range hunks {
		rows = append(rows, templates.SplitRow{Header: hunkHeader(h)})
		oldNo, newNo := h.BeforeStart, h.AfterStart
		lines := h.Lines
		for i := 0; i < len(lines); {
			if lines[i].Op == guildcfg.DiffContext {
				rows = append(rows, templates.SplitRow{
					OldNo: strconv.Itoa(oldNo), NewNo: strconv.Itoa(newNo), Old: lines[i].Text, New: lines[i].Text,
					OldOp: "ctx", NewOp: "ctx", OldMarker: " ", NewMarker: " ",
				})
				oldNo, newNo, i = oldNo+1, newNo+1, i+1
				continue
			}
			var dels, adds []string
			for i < len(lines) && lines[i].Op == guildcfg.DiffDelete {
				dels, i = append(dels, lines[i].Text), i+1
			}
			for i < len(lines) && lines[i].Op == guildcfg.DiffInsert {
				adds, i = append(adds, lines[i].Text), i+1
			}
			for j := 0; j < max(len(dels), len(adds)); j++ {
				r := templates.SplitRow{OldOp: "none", NewOp: "none"}
				if j < len(dels) {
					r.OldNo, r.Old, r.OldOp, r.OldMarker = strconv.Itoa(oldNo), dels[j], "del", "-"
					oldNo++
				}
				if j < len(adds) {
					r.NewNo, r.New, r.NewOp, r.NewMarker = strconv.Itoa(newNo), adds[j], "add", "+"
					newNo++
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// proposalEventView is one history entry as the page shows it.
func proposalEventView(e proposals.Event, names namer, guildID uint64) templates.ProposalEventView {
	v := templates.ProposalEventView{Kind: e.Kind, Label: e.Kind, Actor: e.Actor, Source: e.Source, Detail: e.Detail,
		At: proposalTime(e.At), AtExact: exactTime(e.At), BadgeKind: "neutral"}
	if id := actorUserID(e.Actor); id != 0 {
		v.ActorName = names.User(id, guildID)
	}
	if e.BeforeRevision != "" {
		v.Before = guildcfg.ShortRevision(e.BeforeRevision)
	}
	if e.AfterRevision != "" {
		v.After = guildcfg.ShortRevision(e.AfterRevision)
	}
	switch e.Kind {
	case "created":
		v.Label = "proposed"
	case "card_posted":
		v.Label = "card posted"
	case "approve_failed":
		v.Label, v.BadgeKind = "approval failed", "warning"
	case "applied":
		v.BadgeKind = "success"
	case "rejected":
		v.BadgeKind = "danger"
	case "recovered":
		v.Label, v.BadgeKind = "recovered", "success"
	case "rolled_back":
		v.Label = "rolled back"
	}
	return v
}
