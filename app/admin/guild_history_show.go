package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/web/templates"
)

const guildHistoryPageSize = 20

// guildHistory is a document's history (?module= picks a module's settings
// document, none the server setup), newest first, each write with its
// diff and a button that reverts to it.
func (s *Server) guildHistory(c echo.Context) error {
	id, err := guildParam(c)
	if err != nil {
		return err
	}
	var before int64
	if b := c.QueryParam("before"); b != "" {
		before, err = strconv.ParseInt(b, 10, 64)
		if err != nil || before < 0 {
			return echo.NewHTTPError(http.StatusBadRequest, "The page cursor is not valid.")
		}
	}
	return s.renderGuildHistory(c, http.StatusOK, id, c.QueryParam("module"), before, nil)
}

// historyTarget is the document a history address names.
func (s *Server) historyTarget(id uint64, module string) (guildcfg.Target, string, error) {
	if module == "" {
		return guildcfg.GuildTarget(id), "Server setup", nil
	}
	target, _, err := s.moduleTarget(id, module)
	return target, module + " settings", err
}

func historyURL(id uint64, module string, before int64) string {
	q := url.Values{}
	if module != "" {
		q.Set("module", module)
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	u := guildPath(id) + "/history"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (s *Server) renderGuildHistory(c echo.Context, status int, id uint64, module string, before int64, errs form.Errors) error {
	target, name, err := s.historyTarget(id, module)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	doc, err := s.opts.Guilds.Document(ctx, target)
	if err != nil {
		return fmt.Errorf("admin: guild history: %w", err)
	}
	res, err := s.opts.Guilds.History(ctx, target, guildcfg.HistoryPage{Before: before, Limit: guildHistoryPageSize})
	if err != nil {
		return fmt.Errorf("admin: guild history: %w", err)
	}
	v := templates.GuildHistoryView{
		GuildID: strconv.FormatUint(id, 10), Module: module, Document: name, Target: target.String(),
		Revision: doc.Revision, Errors: errs,
	}
	for _, e := range res.Entries {
		v.Entries = append(v.Entries, historyEntryView(e, doc.Revision))
	}
	if res.Next > 0 {
		v.NextURL = historyURL(id, module, res.Next)
	}
	if before > 0 {
		v.FirstURL = historyURL(id, module, 0)
	}
	return render(c, status, templates.GuildHistoryPage(s.chrome(c, name+" history · guild "+v.GuildID, "guilds"), v))
}

func historyEntryView(e guildcfg.HistoryEntry, current string) templates.HistoryEntryView {
	v := templates.HistoryEntryView{
		ID: e.ID, At: e.At.UTC().Format("2006-01-02 15:04 UTC"), AtExact: exactTime(e.At), Actor: e.Actor,
		Revert: e.Revert, RevertedFrom: e.RevertedFrom, Before: guildcfg.ShortRevision(e.BeforeRevision),
		After: guildcfg.ShortRevision(e.AfterRevision), Current: e.AfterRevision == current,
		Created: e.BeforeRevision == guildcfg.EmptyRevision,
	}
	v.Hunks = unifiedDiff(e.Diff()) // the hunks as proposal pages show them unified
	return v
}
