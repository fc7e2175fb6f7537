package admin

import (
	"context"
	"sync"

	"github.com/a-h/templ"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/web/templates"
)

// proposalListsMax bounds the kept inbox renders (one per filter and
// cursor looked at) and proposal pages; past it the cache starts over.
const proposalListsMax = 64

// pageKeepMax is the largest render kept (a proposal's diff, a guild's
// cards): bigger ones render for their request only.
const pageKeepMax = 256 << 10

// keptProposalList is the inbox's live region as rendered for a filter
// (it holds no form, so no CSRF token), with what it was rendered from:
// the proposals service's generation and the directory revisions of the
// guilds its rows name, summed (each only grows).
type keptProposalList struct {
	gen, dir uint64
	html     []byte
}

// proposalLists are the inbox renders kept per filter (its query string).
type proposalLists struct {
	mu sync.Mutex
	m  map[string]keptProposalList
}

// generationer is the proposals service's generation, moved by every
// write (*proposals.Service): data read after it is at least as new.
type generationer interface{ Generation() uint64 }

// proposalListRegion is the inbox's live region for f (validated): the
// kept render while the service's generation and the rows' guilds'
// directory revisions are those it was rendered from, else a render kept
// for the next request. A server whose services offer no revisions renders
// every time.
func (s *Server) proposalListRegion(ctx context.Context, f form.ProposalFilter) (templ.Component, error) {
	g, ok := s.opts.Proposals.(generationer)
	if !ok {
		v, err := s.proposalListView(ctx, f)
		return templates.ProposalList(v), err
	}
	// Read before the list and the directory (see generationer).
	gen := g.Generation()
	key := f.Query(true)
	page, err := s.proposalListPage(ctx, f)
	if err != nil {
		return nil, err
	}
	dir, keep := uint64(0), true
	seen := map[uint64]bool{}
	for _, p := range page.Items {
		for _, guild := range []uint64{p.Target.GuildID, p.Actor.GuildID} {
			if guild == 0 || seen[guild] {
				continue
			}
			seen[guild] = true
			r, ok := s.dirRevision(guild)
			dir, keep = dir+r, keep && ok
		}
	}
	s.proposalLists.mu.Lock()
	k, hit := s.proposalLists.m[key]
	s.proposalLists.mu.Unlock()
	if keep && hit && k.gen == gen && k.dir == dir {
		return rawRegion(k.html), nil
	}
	html, err := renderBytes(ctx, templates.ProposalList(s.proposalListOf(f, page)))
	if err != nil {
		return nil, err
	}
	if keep {
		s.proposalLists.mu.Lock()
		if s.proposalLists.m == nil || len(s.proposalLists.m) >= proposalListsMax {
			s.proposalLists.m = map[string]keptProposalList{}
		}
		s.proposalLists.m[key] = keptProposalList{gen: gen, dir: dir, html: html}
		s.proposalLists.mu.Unlock()
	}
	return rawRegion(html), nil
}

// keptProposalDetail is a proposal page's live region rendered with
// csrfSlot, with what it was rendered from: the service's generation, the
// revisions of the proposal's target document and of its guild's server
// setup (its check reads both), and the directory revisions of the guilds
// it names.
type keptProposalDetail struct {
	gen, dir      uint64
	target, guild string
	summary       string
	html          spliced
}

// proposalDetails are the proposal pages' regions kept per proposal.
type proposalDetails struct {
	mu sync.Mutex
	m  map[string]keptProposalDetail
}

// proposalDetailRegion is proposal id's live region with the session's
// token csrf (and its summary, the page's heading): the kept render while
// what it was rendered from is unchanged, else a render kept for the next
// request. Like the inbox's list, without the services' revisions it
// renders every time.
func (s *Server) proposalDetailRegion(ctx context.Context, id, csrf string) (templ.Component, string, error) {
	g, ok := s.opts.Proposals.(generationer)
	var key keptProposalDetail
	if ok {
		key.gen = g.Generation() // before every read below
		p, _, err := s.opts.Proposals.Get(ctx, id)
		if err != nil {
			ok = false // proposalDetailView answers it
		} else {
			for _, guild := range []uint64{p.Target.GuildID, p.Actor.GuildID} {
				r, known := s.dirRevision(guild)
				key.dir, ok = key.dir+r, ok && known
			}
			key.target, key.guild = s.documentRevision(ctx, p.Target), s.documentRevision(ctx, guildcfg.GuildTarget(p.Target.GuildID))
		}
	}
	if ok {
		s.proposalDetails.mu.Lock()
		k, hit := s.proposalDetails.m[id]
		s.proposalDetails.mu.Unlock()
		if hit && k.gen == key.gen && k.dir == key.dir && k.target == key.target && k.guild == key.guild {
			return k.html.Component(csrf), k.summary, nil
		}
	}
	d, whole, err := s.proposalDetail(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if !ok || !whole {
		return templates.ProposalDetail(csrf, d), d.Summary, nil
	}
	html, err := renderBytes(ctx, templates.ProposalDetail(csrfSlot, d))
	if err != nil {
		return nil, "", err
	}
	if len(html) > pageKeepMax {
		return newSpliced(html).Component(csrf), d.Summary, nil // too big to keep
	}
	key.summary, key.html = d.Summary, newSpliced(html)
	s.proposalDetails.mu.Lock()
	if s.proposalDetails.m == nil || len(s.proposalDetails.m) >= proposalListsMax {
		s.proposalDetails.m = map[string]keptProposalDetail{}
	}
	s.proposalDetails.m[id] = key
	s.proposalDetails.mu.Unlock()
	return key.html.Component(csrf), d.Summary, nil
}

// documentRevision is target's docKey ("unreadable" when it cannot be
// read: such a key never matches a kept one read while it could).
func (s *Server) documentRevision(ctx context.Context, target guildcfg.Target) string {
	if s.opts.Guilds == nil {
		return ""
	}
	doc, err := s.opts.Guilds.Document(ctx, target)
	if err != nil {
		return "unreadable"
	}
	return docKey(doc)
}
