package proposals

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The inbox counts its proposals by state on every page: a count over all
// of them (10,000 take a millisecond of SQLite's time, paid by every
// request of the inbox and by the navigation's pending badge on every
// page). The service is the only writer of kimi_proposals, so it keeps
// the counts it read until its next write: gen goes up after every write
// transaction it commits (or tries), and a count is used only under the
// generation it was read in — a count read while a write commits is
// kept under the older generation and never used.

// countCacheMax bounds the filters whose counts (and pages) are kept;
// pageKeepMax the bytes of documents a kept page may hold (a proposal's
// documents may be up to 1 MB each: such pages are read afresh).
const (
	countCacheMax = 64
	pageKeepMax   = 256 << 10
)

// counts is the kept counts by state of each filter, and the kept pages.
type counts struct {
	gen       atomic.Uint64
	mu        sync.Mutex
	kept      map[string]keptCounts
	pages     map[string]keptPage
	proposals map[string]keptOne // Get's, by id
}

type keptCounts struct {
	gen uint64
	by  map[State]int
}

type keptPage struct {
	gen   uint64
	items []Proposal
	next  string
}

// keptPage returns the page kept for key in the current generation.
func (s *Service) keptPage(key string) ([]Proposal, string, uint64, bool) {
	gen := s.counts.gen.Load()
	s.counts.mu.Lock()
	k, ok := s.counts.pages[key]
	s.counts.mu.Unlock()
	if !ok || k.gen != gen {
		return nil, "", gen, false
	}
	return k.items, k.next, gen, true
}

// keepPage keeps items (read in generation gen) for key when their
// documents are small.
func (s *Service) keepPage(key string, gen uint64, items []Proposal, next string) {
	size := 0
	for _, p := range items {
		size += len(p.Content) + len(p.BaseContent)
	}
	if size > pageKeepMax {
		return
	}
	s.counts.mu.Lock()
	if s.counts.pages == nil || len(s.counts.pages) >= countCacheMax {
		s.counts.pages = map[string]keptPage{}
	}
	s.counts.pages[key] = keptPage{gen: gen, items: items, next: next}
	s.counts.mu.Unlock()
}

// keptOne is a proposal and its history as Get read them in gen.
type keptOne struct {
	gen    uint64
	p      Proposal
	events []Event
}

// keptProposal returns the proposal kept for id in the current
// generation (its history a copy).
func (s *Service) keptProposal(id string) (Proposal, []Event, bool) {
	gen := s.counts.gen.Load()
	s.counts.mu.Lock()
	k, ok := s.counts.proposals[id]
	s.counts.mu.Unlock()
	if !ok || k.gen != gen {
		return Proposal{}, nil, false
	}
	return k.p, slices.Clone(k.events), true
}

// keepProposal keeps p and its history (read in generation gen) when its
// documents are small.
func (s *Service) keepProposal(gen uint64, p Proposal, events []Event) {
	if len(p.Content)+len(p.BaseContent) > pageKeepMax {
		return
	}
	s.counts.mu.Lock()
	if s.counts.proposals == nil || len(s.counts.proposals) >= countCacheMax {
		s.counts.proposals = map[string]keptOne{}
	}
	s.counts.proposals[p.ID] = keptOne{gen: gen, p: p, events: slices.Clone(events)}
	s.counts.mu.Unlock()
}

// Generation is a number every write of the service moves on (after its
// commit): what the service answers after reading it is at least as new
// as what it answered before it moved.
func (s *Service) Generation() uint64 { return s.counts.gen.Load() }

// write runs fn in a write transaction of the store and then moves the
// generation on, whatever the outcome.
func (s *Service) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	defer s.counts.gen.Add(1)
	return s.st.Write(ctx, fn)
}

// countsBy returns the counts by state for the query q with args (its
// WHERE on the filter's guild, module and target), kept until the next
// write.
func (s *Service) countsBy(ctx context.Context, q string, args []any) (map[State]int, error) {
	key := q + "\x00" + argsKey(args)
	gen := s.counts.gen.Load()
	s.counts.mu.Lock()
	k, ok := s.counts.kept[key]
	s.counts.mu.Unlock()
	if ok && k.gen == gen {
		return k.by, nil
	}
	rows, err := s.st.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	by := map[State]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		by[State(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.counts.mu.Lock()
	if s.counts.kept == nil || len(s.counts.kept) >= countCacheMax {
		s.counts.kept = map[string]keptCounts{}
	}
	s.counts.kept[key] = keptCounts{gen: gen, by: by}
	s.counts.mu.Unlock()
	return by, nil
}

// argsKey is args as text (strings and integers only).
func argsKey(args []any) string {
	var b strings.Builder
	for _, a := range args {
		switch v := a.(type) {
		case string:
			b.WriteString("s" + v)
		case int64:
			b.WriteString("i" + strconv.FormatInt(v, 10))
		default:
			b.WriteString("?")
		}
		b.WriteByte(0)
	}
	return b.String()
}
