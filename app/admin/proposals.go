package admin

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/web/templates"
)

// ProposalReview is what the /proposals pages need of the proposals
// service (app/serve.go passes the *proposals.Service): the inbox, one
// proposal with its history and its check, the two decisions and the roll
// back, the pending count of the navigation and a change signal for the
// live regions.
type ProposalReview interface {
	List(ctx context.Context, f proposals.Filter) (proposals.Page, error)
	Get(ctx context.Context, id string) (proposals.Proposal, []proposals.Event, error)
	Check(ctx context.Context, id string) (proposals.CheckResult, error)
	Approve(ctx context.Context, id string, d proposals.Decider) (proposals.Outcome, error)
	Reject(ctx context.Context, id string, d proposals.Decider, reason string) (proposals.Outcome, error)
	Rollback(ctx context.Context, id string, d proposals.Decider) (proposals.Outcome, error)
	PendingCount(ctx context.Context) (int, error)
	Watch(fn func()) (cancel func())
}

var _ ProposalReview = (*proposals.Service)(nil)

// proposalsPageSize is the inbox's page.
const proposalsPageSize = 25

// proposalIDRE is a proposal id: 32 lowercase hex (the original's uuid4 hex).
var proposalIDRE = regexp.MustCompile(`\A[0-9a-f]{32}\z`)

// requireProposals answers 503 when the server runs without the proposals
// service (a server over an unmigrated database, some tests).
func (s *Server) requireProposals(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.opts.Proposals == nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "The proposals service is not running in this server.")
		}
		return next(c)
	}
}

// proposalParam is the {id} of a proposal address; anything but 32
// lowercase hex is a 404 (no such proposal can exist).
func proposalParam(c echo.Context) (string, error) {
	id := c.Param("id")
	if !proposalIDRE.MatchString(id) {
		return "", echo.ErrNotFound
	}
	return id, nil
}

func proposalPath(id string) string { return "/proposals/" + id }

// pendingCache is the navigation's pending count. The layout renders on
// every page, so the count is read once after each change the service
// signals (Watch) and served from memory until the next; a read that races
// a change is not kept.
type pendingCache struct {
	mu    sync.Mutex
	n     int
	valid bool
	gen   uint64
}

// invalidate forgets the count (the service's Watch callback: it must not
// block, and does not).
func (p *pendingCache) invalidate() {
	p.mu.Lock()
	p.valid = false
	p.gen++
	p.mu.Unlock()
}

// get returns the count, reading it with read when it is not known.
func (p *pendingCache) get(ctx context.Context, read func(context.Context) (int, error)) (int, error) {
	p.mu.Lock()
	if p.valid {
		n := p.n
		p.mu.Unlock()
		return n, nil
	}
	gen := p.gen
	p.mu.Unlock()
	n, err := read(ctx)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	if p.gen == gen {
		p.n, p.valid = n, true
	}
	p.mu.Unlock()
	return n, nil
}

// pendingProposals is the navigation badge's count; 0 without the service
// or when it cannot be read (logged: the page still renders).
func (s *Server) pendingProposals(ctx context.Context) int {
	if s.opts.Proposals == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	n, err := s.pending.get(ctx, s.opts.Proposals.PendingCount)
	if err != nil {
		s.log.Warn("count pending proposals for the navigation", "err", err)
		return 0
	}
	return n
}

// watchProposals subscribes the pending count to the service's changes;
// Close cancels it.
func (s *Server) watchProposals() {
	if s.opts.Proposals == nil {
		return
	}
	s.unwatchProposals = s.opts.Proposals.Watch(s.pending.invalidate)
}

// decisionResults holds each admin session's last decision message
// (Outcome.Message: the service's words, which a flash code cannot carry),
// shown once by the proposal page the decision redirects to. Only the
// server holds the text; the browser carries nothing but its session.
type decisionResults struct {
	mu      sync.Mutex
	results map[string]decisionResult // by admin session ID
}

type decisionResult struct {
	page  string
	flash templates.Flash
	at    time.Time
}

// Bounds of the pending decision messages, as worldtreeNav's results.
const (
	decisionResultTTL  = time.Minute
	decisionMaxResults = 256
)

func (d *decisionResults) put(sessionID, page string, f templates.Flash, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.results == nil {
		d.results = map[string]decisionResult{}
	}
	if len(d.results) >= decisionMaxResults {
		for id, r := range d.results {
			if now.Sub(r.at) > decisionResultTTL {
				delete(d.results, id)
			}
		}
		if len(d.results) >= decisionMaxResults {
			clear(d.results)
		}
	}
	d.results[sessionID] = decisionResult{page: page, flash: f, at: now}
}

func (d *decisionResults) take(sessionID, page string, now time.Time) (templates.Flash, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.results[sessionID]
	if !ok || r.page != page {
		return templates.Flash{}, false
	}
	delete(d.results, sessionID)
	if now.Sub(r.at) > decisionResultTTL {
		return templates.Flash{}, false
	}
	return r.flash, true
}

// stateBadge is a proposal state's badge kind.
func stateBadge(st proposals.State) string {
	switch st {
	case sdk.ProposalPending:
		return "warning"
	case sdk.ProposalApplied:
		return "success"
	case sdk.ProposalRejected:
		return "danger"
	case sdk.ProposalRolledBack:
		return "neutral"
	}
	return "neutral"
}

// mention is a Discord user's mention, "" for none.
func mention(id uint64) string {
	if id == 0 {
		return ""
	}
	return "<@" + strconv.FormatUint(id, 10) + ">"
}

func proposalTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}
