package admin

import (
	"context"
	"io"
	"sync"

	"github.com/a-h/templ"

	"github.com/kimiapp/kimi/web/templates"
)

// guildCardsMax bounds the kept guild-page cards (a guild page has two
// plus one per module with settings); past it the cache starts over.
const guildCardsMax = 512

// guildCardKey is a card of a guild's page: "setup", "raw" or
// "module-<name>".
type guildCardKey struct {
	guild uint64
	card  string
}

// guildCard is a card rendered once for every session, csrfSlot in place
// of the CSRF token, with what it was rendered from: its document's
// revision and the guild's directory revision read before the pickers
// were (dirRevisioner).
type guildCard struct {
	docRev string
	dirRev uint64
	html   spliced
}

// guildCards are the guild pages' kept cards. A card is kept only as
// stored documents render it (no refused form, no conflict, no notice of
// a save beside it), so its bytes are those of any session's request but
// for the token; it is good while its document's revision and the guild's
// directory revision are those it was rendered from.
type guildCards struct {
	mu    sync.Mutex
	cards map[guildCardKey]guildCard
}

// dirRevisioner is the directory's revision per guild (*discord.Bot).
type dirRevisioner interface {
	DirectoryRevision(guild uint64) uint64
}

// dirRevision is guild's directory revision; ok false: the directory has
// none, so no card is kept (without a directory the pickers read nothing,
// revision 0).
func (s *Server) dirRevision(guild uint64) (uint64, bool) {
	if s.directory() == nil {
		return 0, true
	}
	if r, ok := s.opts.Discord.(dirRevisioner); ok {
		return r.DirectoryRevision(guild), true
	}
	return 0, false
}

// get returns the card kept under k if it was rendered from docRev and
// dirRev.
func (g *guildCards) get(k guildCardKey, docRev string, dirRev uint64) (guildCard, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.cards[k]
	return c, ok && c.docRev == docRev && c.dirRev == dirRev
}

func (g *guildCards) put(k guildCardKey, c guildCard) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cards == nil || len(g.cards) >= guildCardsMax {
		g.cards = map[guildCardKey]guildCard{}
	}
	g.cards[k] = c
}

// component is the card with the session's token.
func (c guildCard) component(token string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error { return c.html.WriteTo(w, token) })
}

// keepCard renders card of v once with csrfSlot, keeps it under k and
// returns it.
func (g *guildCards) keepCard(ctx context.Context, k guildCardKey, v templates.GuildView, docRev string, dirRev uint64) (guildCard, error) {
	html, err := renderBytes(ctx, templates.GuildCard(csrfSlot, v, k.card))
	if err != nil {
		return guildCard{}, err
	}
	c := guildCard{docRev: docRev, dirRev: dirRev, html: newSpliced(html)}
	g.put(k, c)
	return c, nil
}
