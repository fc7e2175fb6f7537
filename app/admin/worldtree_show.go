package admin

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/worldtree"
	"github.com/kimiapp/kimi/web/templates"
)

// Bounds of the Worldtree page: the whole page answers within worldtreePageTimeout (each call to
// Worldtree within worldtreeCallTimeout), and shows worldtreeSessionPage sessions a page.
const (
	worldtreePageTimeout = 10 * time.Second
	worldtreeCallTimeout = 8 * time.Second
	worldtreeSessionPage = 25
	// worldtreeMaxCursor bounds the ?cursor= passed through to Worldtree (an opaque token).
	worldtreeMaxCursor = 4096
	// worldtreeMaxTraits bounds the persona traits shown per agent.
	worldtreeMaxTraits = 40
)

// worldtreePage shows the configured Worldtree server. Each section fails on its own, with the
// operator message of worldtree.DescribeError.
func (s *Server) worldtreePage(c echo.Context) error {
	ctx, cancel := withTimeout(c, worldtreePageTimeout)
	defer cancel()
	st, err := settings.LoadWorldtree(ctx, s.opts.Store)
	if err != nil {
		return fmt.Errorf("admin: worldtree page: %w", err)
	}
	s.worldtree.set(st.Configured())
	chrome := s.chrome(c, "Worldtree", "worldtree")
	if sess := sessionOf(c); sess != nil {
		if f, ok := s.worldtree.takeResult(sess.ID, "/worldtree", time.Now()); ok {
			chrome.Flashes = append(chrome.Flashes, f) // the result of the save that led here
		}
	}
	v := templates.WorldtreeView{Configured: st.Configured(), BaseURL: st.BaseURL}
	if !st.Configured() {
		return render(c, http.StatusOK, templates.WorldtreePage(chrome, v))
	}

	cursor := c.QueryParam("cursor")
	archived := c.QueryParam("archived") == "1"
	if len(cursor) > worldtreeMaxCursor {
		return echo.NewHTTPError(http.StatusBadRequest, "The page cursor is too long. Start again from the first page.")
	}
	v.IncludeArchived = archived
	v.ArchivedURL = worldtreeURL("", !archived)
	if cursor != "" {
		v.SessionsFirstURL = worldtreeURL("", archived)
	}

	client, err := st.NewClient(worldtree.WithTimeout(worldtreeCallTimeout), worldtree.WithLogger(s.log))
	if err != nil {
		v.Notice = "The stored Worldtree settings cannot be used: " + worldtree.DescribeError(err) + " Correct them in Settings."
		return render(c, http.StatusOK, templates.WorldtreePage(chrome, v))
	}
	data, err := loadWorldtreeOverview(ctx, client, overviewOptions{
		Cursor: cursor, Limit: worldtreeSessionPage, IncludeArchived: archived,
	})
	if err != nil {
		v.Notice = worldtree.DescribeError(err)
	}
	fillWorldtreeView(&v, data)
	if data.SessionsErr == nil && data.Sessions.NextCursor != nil && *data.Sessions.NextCursor != "" {
		if next := *data.Sessions.NextCursor; len(next) <= worldtreeMaxCursor {
			v.SessionsNextURL = worldtreeURL(next, archived)
		} else {
			// This page refuses such a cursor; a link to it would always fail.
			v.Notice = strings.TrimSpace(v.Notice + " " + fmt.Sprintf(
				"Worldtree's next-page cursor is too long to follow (over %d bytes), so later pages of sessions cannot be shown here.", worldtreeMaxCursor))
		}
	}
	return render(c, http.StatusOK, templates.WorldtreePage(chrome, v))
}

// worldtreeURL is the Worldtree page at cursor ("" = first page) with or without archived sessions.
func worldtreeURL(cursor string, archived bool) string {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if archived {
		q.Set("archived", "1")
	}
	if len(q) == 0 {
		return "/worldtree"
	}
	return "/worldtree?" + q.Encode()
}

// fillWorldtreeView turns the overview into the page's view, section by section. When every
// section failed with the same cause (the server is unreachable, the key is rejected), the page
// shows that cause once instead of four identical section errors.
func fillWorldtreeView(v *templates.WorldtreeView, d overviewData) {
	if msg, ok := commonFailure(d.MeErr, d.CapabilitiesErr, d.AgentsErr, d.SessionsErr); ok {
		v.Unavailable = true
		v.Notice = strings.TrimSpace(v.Notice + " " + msg)
		return
	}
	if d.MeErr != nil {
		v.IdentityError = worldtree.DescribeError(d.MeErr)
	} else {
		id := d.Identity
		v.Identity = &templates.WorldtreeIdentity{UserID: id.UserID, Tier: id.Tier, KeyID: id.KeyID, KeyLabel: id.KeyLabel, Scopes: id.Scopes}
	}
	if d.CapabilitiesErr != nil {
		v.TemplatesError = worldtree.DescribeError(d.CapabilitiesErr)
	}
	for _, t := range d.Templates {
		row := templates.WorldtreeTemplate{Name: t.Name, DefaultModel: t.DefaultModel, AllowedModels: t.AllowedModels}
		if t.SystemPromptMaxBytes > 0 {
			row.PromptMax = humanBytes(int64(t.SystemPromptMaxBytes))
		}
		v.Templates = append(v.Templates, row)
	}
	if d.AgentsErr != nil {
		v.AgentsError = worldtree.DescribeError(d.AgentsErr)
	}
	for _, a := range d.Agents {
		v.Agents = append(v.Agents, worldtreeAgentView(a))
	}
	if d.SessionsErr != nil {
		v.SessionsError = worldtree.DescribeError(d.SessionsErr)
	}
	for _, s := range d.Sessions.Items {
		row := templates.WorldtreeSession{
			ID: s.SessionID, AgentID: s.AgentID, Created: worldtreeTime(s.CreatedAt),
			LastActive: worldtreeTime(s.LastActive), Archived: s.Archived, Tags: s.Tags,
		}
		if s.Name != nil {
			row.Name = *s.Name
		}
		v.Sessions = append(v.Sessions, row)
	}
}

// commonFailure reports the one description shared by errs when every one of them failed.
func commonFailure(errs ...error) (string, bool) {
	msg := ""
	for i, err := range errs {
		if err == nil {
			return "", false
		}
		d := worldtree.DescribeError(err)
		if i > 0 && d != msg {
			return "", false
		}
		msg = d
	}
	return msg, msg != ""
}

func worldtreeAgentView(a agentOverview) templates.WorldtreeAgent {
	out := templates.WorldtreeAgent{
		ID: a.Agent.AgentID, Name: a.Agent.Name, Description: a.Agent.Description,
		Capabilities: a.Agent.Capabilities, Traits: flattenTraits(a.Agent.PersonaTraits),
	}
	if out.Name == "" {
		out.Name = a.Agent.AgentID
	}
	if a.Agent.Version != nil {
		out.Version = *a.Agent.Version
	}
	switch {
	case a.PersonaErr != nil:
		out.PersonaError = worldtree.DescribeError(a.PersonaErr)
	case a.PersonaSkipped:
		out.PersonaNote = fmt.Sprintf("Not read: live state is shown for the first %d agents only.", worldtreeMaxPersonaAgents)
	case !a.PersonaConfigured:
		out.PersonaNote = "No persona is configured for this agent on Worldtree."
	case a.Persona == nil || a.Persona.PAD == nil:
		out.PersonaNote = "Worldtree sent a persona state without a PAD reading."
	default:
		p := a.Persona
		pad := []struct {
			label     string
			now, base float64
			baseOK    bool
		}{
			{"Pleasure", p.PAD.Pleasure, 0, false},
			{"Arousal", p.PAD.Arousal, 0, false},
			{"Dominance", p.PAD.Dominance, 0, false},
		}
		if b := p.BaselinePAD; b != nil {
			pad[0].base, pad[1].base, pad[2].base = b.Pleasure, b.Arousal, b.Dominance
			pad[0].baseOK, pad[1].baseOK, pad[2].baseOK = true, true, true
		}
		view := &templates.WorldtreePersona{DominantEmotion: p.DominantEmotion, UpdatedAt: worldtreeTime(p.LastUpdatedAt)}
		for _, x := range pad {
			st := templates.Stat{Label: x.label, Value: formatNumber(x.now), TestID: "worldtree-pad-" + strings.ToLower(x.label)}
			if x.baseOK {
				st.Hint = "baseline " + formatNumber(x.base)
			}
			view.PAD = append(view.PAD, st)
		}
		out.Persona = view
	}
	return out
}

// flattenTraits lists persona traits as "ocean.openness: 0.8", sorted, at most
// worldtreeMaxTraits entries.
func flattenTraits(traits map[string]any) []templates.KeyValue {
	var out []templates.KeyValue
	var walk func(prefix string, v any, depth int)
	walk = func(prefix string, v any, depth int) {
		if m, ok := v.(map[string]any); ok && depth < 3 {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				name := k
				if prefix != "" {
					name = prefix + "." + k
				}
				walk(name, m[k], depth+1)
			}
			return
		}
		out = append(out, templates.KeyValue{Key: prefix, Value: clip(traitValue(v), 200)})
	}
	walk("", traits, 0)
	if len(out) > worldtreeMaxTraits {
		out = append(out[:worldtreeMaxTraits], templates.KeyValue{Key: "…", Value: fmt.Sprintf("%d more not shown", len(out)-worldtreeMaxTraits)})
	}
	return out
}

// traitValue renders a JSON value briefly.
func traitValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "—"
	case string:
		return x
	case float64:
		return formatNumber(x)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, traitValue(e))
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		return fmt.Sprintf("%d fields", len(x))
	}
	return fmt.Sprint(v)
}

// formatNumber shows a reading with at most three decimals ("0.52", "1", "-0.125").
func formatNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "—"
	}
	return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
}

// worldtreeTime shows an ISO-8601 timestamp as "2026-05-25 22:30 UTC"; anything else verbatim.
func worldtreeTime(s string) string {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Format("2006-01-02 15:04 UTC")
		}
	}
	return s
}
