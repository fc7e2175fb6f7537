package admin

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/web/templates"
)

// newGuildDocument is the server-setup document a guild added by id starts
// with: known, and not served until an admin switches it on.
const newGuildDocument = "---\n" + guildcfg.KeyBotActive + ": false\n---\n"

// addGuild creates the server-setup document of the guild whose id was
// typed (bot_active: false, audited as a save) and opens its page. A guild
// that already has one is opened as it is: adding is idempotent and never
// overwrites.
func (s *Server) addGuild(c echo.Context) error {
	f := form.ParseGuildAdd(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return s.renderGuilds(c, http.StatusUnprocessableEntity, templates.GuildsView{AddID: f.ID, AddErrors: errs})
	}
	target, _ := f.Target()
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	doc, err := s.opts.Guilds.Document(ctx, target)
	if err != nil {
		return fmt.Errorf("admin: add guild: %w", err)
	}
	flash := flashGuildExists
	if !doc.Exists {
		_, err := s.opts.Guilds.Write(ctx, target, newGuildDocument, guildcfg.EmptyRevision, guildActor(c))
		var conflict *guildcfg.ConflictError
		switch {
		case errors.As(err, &conflict): // added in another tab meanwhile
		case err != nil:
			return fmt.Errorf("admin: add guild: %w", err)
		default:
			flash = flashGuildCreated
		}
	}
	s.setFlash(c, flash)
	return c.Redirect(http.StatusSeeOther, guildPath(target.GuildID))
}
