package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
	names := s.namer()
	v := templates.GuildHistoryView{
		GuildID: strconv.FormatUint(id, 10), GuildLabel: guildTitle(names.Guild(id)), Module: module, Document: name,
		Target: target.String(), Revision: doc.Revision, Errors: errs,
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
	return render(c, status, templates.GuildHistoryPage(s.chrome(c, name+" history · "+v.GuildLabel, "guilds"), v))
}

func historyEntryView(e guildcfg.HistoryEntry, current string) templates.HistoryEntryView {
	v := templates.HistoryEntryView{
		ID: e.ID, At: e.At.UTC().Format("2006-01-02 15:04 UTC"), AtExact: exactTime(e.At), Actor: e.Actor,
		Revert: e.Revert, RevertedFrom: e.RevertedFrom, Before: guildcfg.ShortRevision(e.BeforeRevision),
		After: guildcfg.ShortRevision(e.AfterRevision), Current: e.AfterRevision == current,
		Created: e.BeforeRevision == guildcfg.EmptyRevision,
	}
	v.Hunks = unifiedDiff(e.Diff()) // the hunks as proposal pages show them unified
	v.ActorName = e.Actor
	if id, ok := strings.CutPrefix(e.Actor, "proposal:"); ok && proposalIDRE.MatchString(id) {
		v.ActorName, v.ActorURL = "proposal "+id[:8], proposalPath(id)
	}
	v.Summary = historySummary(e, v.Created)
	return v
}

// historySummary names a write by what it did: created, saved, reverted or
// deleted, and the settings it added, changed and removed (compared as
// parsed, so a key that only moved is none).
func historySummary(e guildcfg.HistoryEntry, created bool) string {
	verb := "saved"
	switch {
	case e.Revert:
		verb = "reverted to entry " + strconv.FormatInt(e.RevertedFrom, 10)
	case e.AfterRevision == guildcfg.EmptyRevision:
		return "deleted the document"
	case created:
		verb = "created the document"
	}
	kc, ok := guildcfg.ChangedKeys(e.BeforeText, e.Text)
	if !ok {
		return verb
	}
	var parts []string
	for _, p := range []struct {
		what string
		keys []string
	}{{"changed", kc.Changed}, {"added", kc.Added}, {"removed", kc.Removed}} {
		if len(p.keys) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.keys, ", "))
		}
	}
	if kc.Body {
		parts = append(parts, "changed the text after the settings")
	}
	if len(parts) == 0 {
		if created {
			return verb
		}
		return verb + ": no setting changed"
	}
	return verb + ": " + strings.Join(parts, "; ")
}
