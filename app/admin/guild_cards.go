package admin

import (
	"context"
	"strconv"
	"sync"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/web/templates"
)

// guildCardsMax and guildCardsBytes bound the kept guild-page cards (a
// guild page has two plus one per module with settings, each a few KB):
// past either the cache starts over.
const (
	guildCardsMax   = 512
	guildCardsBytes = 16 << 20
)

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
	bytes int // the kept cards' sizes, summed
}

// docKey is what a kept render keys a document by: its revision (a hash of
// its text), whether it exists (an empty document and a missing one share
// a revision) and when it was written and by whom (a text written again
// after another keeps its revision; pages show who wrote it and when).
func docKey(doc guildcfg.Document) string {
	return strconv.FormatBool(doc.Exists) + ":" + doc.Revision + ":" + strconv.FormatInt(doc.UpdatedAt.UnixNano(), 10) + ":" + doc.UpdatedBy
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
	size := c.html.Len(0)
	if old, ok := g.cards[k]; ok {
		g.bytes -= old.html.Len(0)
	}
	if g.cards == nil || len(g.cards) >= guildCardsMax || g.bytes+size > guildCardsBytes {
		g.cards, g.bytes = map[guildCardKey]guildCard{}, 0
	}
	g.cards[k] = c
	g.bytes += size
}

// keepCard renders card of v once with csrfSlot, keeps it under k and
// returns it.
func (g *guildCards) keepCard(ctx context.Context, k guildCardKey, v templates.GuildView, docRev string, dirRev uint64) (guildCard, error) {
	html, err := renderBytes(ctx, templates.GuildCard(csrfSlot, v, k.card))
	if err != nil {
		return guildCard{}, err
	}
	c := guildCard{docRev: docRev, dirRev: dirRev, html: newSpliced(html)}
	if len(html) <= pageKeepMax { // a card of a huge document renders each time
		g.put(k, c)
	}
	return c, nil
}
