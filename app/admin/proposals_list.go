package admin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/web/templates"
)

// proposalsList is GET /proposals: the inbox, filtered by the GET form
// (state, guild, module, target), newest first, a page at a time by the
// service's keyset cursor (?after=), with the counts per state. Refused
// filters answer 400 with the form's messages and list nothing.
func (s *Server) proposalsList(c echo.Context) error {
	f := form.ParseProposalFilter(c.Request())
	errs := f.Validate()
	v := templates.ProposalsView{State: f.State, Guild: f.Guild, Module: f.Module, Target: f.Target,
		Errors: errs, Filtered: f.Filtered()}
	status := http.StatusOK
	if errs.OK() {
		ctx, cancel := withTimeout(c, 5*time.Second)
		defer cancel()
		list, err := s.proposalListRegion(ctx, f)
		if err != nil {
			return err
		}
		v.ListKept = list
		v.Live = "/proposals/events?view=list"
		if q := f.Query(true); q != "" {
			v.Live += "&" + q
		}
	} else {
		status = http.StatusBadRequest
		v.List = templates.ProposalListView{Invalid: true}
	}
	return render(c, status, templates.ProposalsPage(s.chrome(c, "Proposals", "proposals"), v))
}

// proposalListView reads one page of the inbox for f (validated).
func (s *Server) proposalListView(ctx context.Context, f form.ProposalFilter) (templates.ProposalListView, error) {
	page, err := s.proposalListPage(ctx, f)
	if err != nil {
		return templates.ProposalListView{}, err
	}
	return s.proposalListOf(f, page), nil
}

// proposalListPage reads one page of the inbox for f (validated).
func (s *Server) proposalListPage(ctx context.Context, f form.ProposalFilter) (proposals.Page, error) {
	page, err := s.opts.Proposals.List(ctx, proposals.Filter{
		State: proposals.State(f.State), GuildID: f.GuildID(), Module: f.Module, Target: f.Target,
		After: f.After, Limit: proposalsPageSize,
	})
	if err != nil {
		return proposals.Page{}, fmt.Errorf("admin: proposals list: %w", err)
	}
	return page, nil
}

// proposalListOf is the inbox's live region of page, read for f.
func (s *Server) proposalListOf(f form.ProposalFilter, page proposals.Page) templates.ProposalListView {
	v := templates.ProposalListView{Filtered: f.Filtered(), ClearURL: "/proposals"}
	all := f
	all.State, all.After = "", ""
	total := 0
	for _, st := range []proposals.State{sdk.ProposalPending, sdk.ProposalApplied, sdk.ProposalRejected, sdk.ProposalRolledBack} {
		n := page.Counts[st]
		total += n
		one := all
		one.State = string(st)
		v.Counts = append(v.Counts, templates.ProposalCount{State: string(st), Label: templates.ProposalStateLabel(string(st)), Count: n,
			URL: inboxURL(one), Active: f.State == string(st)})
	}
	v.Counts = append([]templates.ProposalCount{{State: "all", Label: "all", Count: total, URL: inboxURL(all), Active: f.State == ""}}, v.Counts...)
	v.Pending = page.Counts[sdk.ProposalPending]
	names := s.namer()
	for _, p := range page.Items {
		v.Rows = append(v.Rows, templates.ProposalRow{
			ID: p.ID, URL: proposalPath(p.ID), Summary: p.Summary, State: string(p.State), StateKind: stateBadge(p.State),
			Module: p.Module, Target: p.Target.String(), Proposer: mention(p.Actor.UserID),
			GuildName: names.Guild(p.Target.GuildID), ProposerName: names.Member(p.Actor.GuildID, p.Actor.UserID),
			At: proposalTime(p.CreatedAt), AtExact: exactTime(p.CreatedAt), Mentions: s.mentions(p.Target.GuildID),
		})
	}
	if page.Next != "" {
		next := f
		next.After = page.Next
		v.NextURL = inboxURL(next)
	}
	if f.After != "" {
		first := f
		first.After = ""
		v.FirstURL = inboxURL(first)
	}
	return v
}

// inboxURL is the inbox's address with f's filters and cursor.
func inboxURL(f form.ProposalFilter) string {
	if q := f.Query(true); q != "" {
		return "/proposals?" + q
	}
	return "/proposals"
}
