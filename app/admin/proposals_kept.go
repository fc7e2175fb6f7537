package admin

import (
	"context"
	"sync"

	"github.com/a-h/templ"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// proposalListsMax bounds the kept inbox renders (one per filter and
// cursor looked at); past it the cache starts over.
const proposalListsMax = 64

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
