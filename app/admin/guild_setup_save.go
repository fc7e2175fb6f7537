package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/web/templates"
)

// saveGuildSetup stores the server-setup form as the guild's document (the
// text after the frontmatter kept), compare-and-swap on the revision the
// form was opened at. Invalid input re-renders the page with every field's
// message and stores nothing; a lost race (another tab saved first) shows
// the current document and the text that was not saved.
func (s *Server) saveGuildSetup(c echo.Context) error {
	id, err := guildParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	f := form.ParseGuildSetup(c.Request())
	target := guildcfg.GuildTarget(id)
	errs := f.Validate()
	status := http.StatusUnprocessableEntity
	if errs.OK() {
		cur, err := s.opts.Guilds.Document(ctx, target)
		if err != nil {
			return fmt.Errorf("admin: save guild setup: %w", err)
		}
		text := f.Document(guildBody(cur))
		if cfg, perr := guildcfg.ParseGuildDocument(text); perr == nil {
			text = guildcfg.RenderGuildDocument(cfg) // the canonical form, so saves compare equal
		}
		switch {
		case cur.Revision != f.ExpectedRevision:
			return s.guildConflict(c, id, "setup", "server setup", text)
		case cur.Exists && (cur.Guild == nil || len(extraKeys(cur)) > 0 || cur.Comments):
			errs = form.Errors{form.FieldForm: form.MsgGuildExtraKeys}
		default:
			saved, werr := s.opts.Guilds.Write(ctx, target, text, f.ExpectedRevision, guildActor(c))
			if werr == nil {
				return s.guildWritten(c, guildPath(id)+"#setup", f.ExpectedRevision, saved)
			}
			var conflict *guildcfg.ConflictError
			if errors.As(werr, &conflict) {
				return s.guildConflict(c, id, "setup", "server setup", text)
			}
			if refused, st, ok := s.refusedForm(c, werr); ok {
				errs, status = refused, st
			} else if errs = form.GuildErrors(werr, form.FieldForm); errs.OK() {
				return fmt.Errorf("admin: save guild setup: %w", werr)
			}
		}
	}
	v := templates.GuildSetupView{
		Editable: true, BotActive: f.BotActive, StaffUserIDs: f.StaffUserIDs, StaffRoleIDs: f.StaffRoleIDs,
		RegularRoleIDs: f.RegularRoleIDs, AllowedChannelIDs: f.AllowedChannelIDs, ProposalChannelID: f.ProposalChannelID,
		TasksEnabled: f.TasksEnabled, TasksMinTier: f.TasksMinTier, TasksTimezone: f.TasksTimezone,
		TasksDestinations: f.TasksDestinations, AssistantEnabled: f.AssistantEnabled, AssistantMinTier: f.AssistantMinTier,
		AssistantBlockedTools: f.AssistantBlockedTools, AssistantPinnedTools: f.AssistantPinnedTools,
		AssistantDailyTokens: f.AssistantDailyTokens, Errors: errs,
	}
	return s.renderGuild(c, status, id, guildPageState{setup: &v})
}

// guildWritten ends a successful save: back to the page at the form's card
// (to's fragment) with a notice beside that form that says whether a
// revision was recorded (saving the same text records none).
func (s *Server) guildWritten(c echo.Context, to, expected string, saved guildcfg.Document) error {
	flash := flashGuildSaved
	if saved.Revision == expected {
		flash = flashGuildUnchanged
	}
	_, card, _ := strings.Cut(to, "#")
	s.setFlashNear(c, flash, card)
	return c.Redirect(http.StatusSeeOther, to)
}

// guildConflict answers a save that lost a compare-and-swap: 409, the page
// as it is now, and in the card whose form lost (where the page opens) the
// text that was not saved to copy from.
func (s *Server) guildConflict(c echo.Context, id uint64, card, document, mine string) error {
	return s.renderGuild(c, http.StatusConflict, id, guildPageState{
		conflict: &templates.GuildConflict{Document: document, Mine: mine, Card: card}})
}
