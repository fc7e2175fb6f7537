package guildcfg

import (
	"context"
	"time"
)

// HistoryEntry is one past write of a document.
type HistoryEntry struct {
	ID     int64
	At     time.Time
	Actor  string // Actor.AuditName of the writer
	Kind   ActorKind
	Revert bool
	// RevertedFrom is the history entry a revert restored (0 otherwise).
	RevertedFrom   int64
	BeforeRevision string
	AfterRevision  string
	// Text is the document after the write; BeforeText before it ("" when
	// the document did not exist).
	Text       string
	BeforeText string
}

// Diff returns the line diff of the write.
func (e HistoryEntry) Diff() []Hunk { return Diff(e.BeforeText, e.Text) }

// HistoryPage selects a page of history: entries older than Before (0: the
// newest), at most Limit (default 20, at most 100).
type HistoryPage struct {
	Before int64
	Limit  int
}

// HistoryResult is one page of history, newest first; Next is the Before
// of the following page (0 on the last page).
type HistoryResult struct {
	Entries []HistoryEntry
	Next    int64
}

// History returns a page of the document's history, newest first.
func (s *Service) History(ctx context.Context, target Target, page HistoryPage) (HistoryResult, error) {
	if err := s.checkTarget(target); err != nil {
		return HistoryResult{}, err
	}
	limit := page.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 100)
	rows, err := readHistory(ctx, s.db.Reader(), target.String(), page.Before, limit+1)
	if err != nil {
		return HistoryResult{}, err
	}
	var res HistoryResult
	for i := 0; i < len(rows) && i < limit; i++ {
		h := rows[i]
		e := HistoryEntry{
			ID: h.id, At: h.at, Actor: h.actor, Kind: h.actorKind, Revert: h.action == "revert",
			RevertedFrom: h.revertedFrom, BeforeRevision: h.beforeRevision, AfterRevision: h.afterRevision, Text: h.content,
		}
		// Every write has a row, so the next older row holds the text this
		// one replaced (none: the document did not exist before).
		if i+1 < len(rows) && rows[i+1].afterRevision == h.beforeRevision {
			e.BeforeText = rows[i+1].content
		}
		res.Entries = append(res.Entries, e)
	}
	if len(rows) > limit {
		res.Next = rows[limit-1].id
	}
	return res, nil
}
