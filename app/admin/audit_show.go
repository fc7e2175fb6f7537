package admin

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

const auditPageSize = 50

// audit lists the audit log, newest first, filtered by actor, action and free
// text, paginated by an id cursor (?before=).
func (s *Server) audit(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	f := store.AuditFilter{
		Actor:  clip(strings.TrimSpace(c.QueryParam("actor")), 128),
		Action: clip(strings.TrimSpace(c.QueryParam("action")), 128),
		Query:  clip(strings.TrimSpace(c.QueryParam("q")), 200),
		Limit:  auditPageSize,
	}
	if b := c.QueryParam("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return echo.NewHTTPError(http.StatusBadRequest, "The page cursor is not valid.")
		}
		f.Before = n
	}
	entries, next, err := s.opts.Store.ListAudit(ctx, f)
	if err != nil {
		return fmt.Errorf("admin: audit: %w", err)
	}
	actions, err := s.opts.Store.AuditActions(ctx)
	if err != nil {
		return fmt.Errorf("admin: audit actions: %w", err)
	}
	if f.Action != "" && !slices.Contains(actions, f.Action) {
		actions = append(actions, f.Action)
	}
	v := templates.AuditView{
		Actions: actions, Actor: f.Actor, Action: f.Action, Query: f.Query,
		Filtered: f.Actor != "" || f.Action != "" || f.Query != "",
	}
	for _, e := range entries {
		at := e.At.UTC()
		v.Rows = append(v.Rows, templates.AuditRow{
			ID: e.ID, At: at.Format(time.RFC3339), AtText: at.Format("2006-01-02 15:04:05"),
			Actor: e.Actor, Action: e.Action, Target: e.Target, Detail: e.Detail, IP: e.IP,
		})
	}
	q := url.Values{}
	for k, val := range map[string]string{"actor": f.Actor, "action": f.Action, "q": f.Query} {
		if val != "" {
			q.Set(k, val)
		}
	}
	if next > 0 {
		nq := maps.Clone(q)
		nq.Set("before", strconv.FormatInt(next, 10))
		v.NextURL = "/audit?" + nq.Encode()
	}
	if f.Before > 0 {
		v.FirstURL = "/audit"
		if len(q) > 0 {
			v.FirstURL += "?" + q.Encode()
		}
	}
	return render(c, http.StatusOK, templates.AuditPage(s.chrome(c, "Audit log", "audit"), v))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}
