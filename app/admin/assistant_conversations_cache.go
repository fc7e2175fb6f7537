package admin

import (
	"context"
	"sync"

	"github.com/kimiapp/kimi/web/templates"
)

// conversationRegionsKept bounds the list renders kept.
const conversationRegionsKept = 16

// conversationRegions keeps the conversation list's recent renders by the
// view they were rendered from: every open list reloads its region after
// each turn, and a view equal to one rendered before (the same rows,
// names, relative times and links) renders the same, so it is written
// once. The oldest render goes first past conversationRegionsKept.
type conversationRegions struct {
	mu   sync.Mutex
	kept []conversationRegion
}

type conversationRegion struct {
	list templates.ConversationsList
	html string
}

// render returns v rendered by templates.ConversationsListRegion.
func (r *conversationRegions) render(ctx context.Context, v templates.ConversationsList) (string, error) {
	r.mu.Lock()
	for i := len(r.kept) - 1; i >= 0; i-- {
		if r.kept[i].list.Equal(v) {
			html := r.kept[i].html
			r.mu.Unlock()
			return html, nil
		}
	}
	r.mu.Unlock()
	html, err := renderFragment(ctx, templates.ConversationsListRegion(v))
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.kept) >= conversationRegionsKept {
		r.kept = append(r.kept[:0], r.kept[1:]...)
	}
	r.kept = append(r.kept, conversationRegion{list: v, html: html})
	return html, nil
}
