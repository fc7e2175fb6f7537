package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
	"github.com/kimiapp/kimi/web/templates"
)

// moduleStorageNote is shown for a module without tables.
const moduleStorageNote = "This module has no tables (yet): they appear here once its migrations create them, and stay while it is disabled."

// moduleShow is /modules/{name}: the module's state, health history chart,
// settings form, manifest, tools, jobs, guild links and storage.
func (s *Server) moduleShow(c echo.Context) error {
	m, err := s.moduleParam(c)
	if err != nil {
		return err
	}
	return s.renderModule(c, http.StatusOK, m, nil, nil)
}

// renderModule renders a module's page; a refused settings form keeps what
// was typed (never a secret) with its errors.
func (s *Server) renderModule(c echo.Context, status int, m host.ModuleStatus, kept *form.ModuleSettings, errs form.Errors) error {
	sel := s.opts.Host.Selection()
	v := templates.ModuleView{
		Row: moduleRow(m, sel.FromEnv), Manifest: manifestEntries(m.Manifest), Chart: healthChart(m.History, time.Now()),
		Settings: settingsView(m, kept, errs), FromEnv: sel.FromEnv, StorageNote: moduleStorageNote,
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	tables, err := s.opts.Host.ModuleTables(ctx, m.Name)
	if err != nil {
		return fmt.Errorf("admin: module page: %w", err)
	}
	for _, tb := range tables {
		v.Storage = append(v.Storage, templates.Stat{Label: tb.Name, Value: unitCount(tb.Rows, "row"),
			TestID: "module-table-" + tb.Name})
	}
	stats, haveStats := s.toolStats(ctx, m)
	for _, t := range m.Tools {
		mt := templates.ModuleTool{Name: t.Name, Description: t.Description,
			Tier: t.MinTier.Or(sdk.TierMember).String() + " and above", Where: toolWhere(t), HasStats: haveStats}
		if haveStats {
			mt.Calls, mt.ErrorRate = toolCalls(stats[t.Name]), toolErrorRate(stats[t.Name])
		}
		v.Tools = append(v.Tools, mt)
	}
	now := time.Now()
	for _, j := range m.Jobs {
		mj := templates.ModuleJob{Key: j.Key, Handler: j.Handler, Next: relativeNext(j.NextRunAt, now),
			NextAt: j.NextRunAt.UTC().Format(time.RFC3339), NextExact: exactTime(j.NextRunAt),
			Attempt: j.Attempt, LastError: j.LastError}
		if j.Interval > 0 {
			mj.Every = intervalText(j.Interval)
		}
		if j.Running(now) {
			mj.Holder = j.LeaseHolder
		}
		if s.opts.Scheduler != nil {
			mj.RunPath, mj.CancelPath = jobPath(m.Name, j.Key)+"/run", jobPath(m.Name, j.Key)+"/cancel"
		}
		v.Jobs = append(v.Jobs, mj)
	}
	if len(m.Manifest.GuildSettings) > 0 && s.opts.Guilds != nil {
		guilds, err := s.opts.Guilds.List(ctx)
		if err != nil {
			return fmt.Errorf("admin: module page: %w", err)
		}
		names := s.namer()
		for _, g := range guilds {
			st := guildStatus(g)
			link := templates.ModuleGuildLink{ID: strconv.FormatUint(g.GuildID, 10), Name: names.Guild(g.GuildID), Status: st.Label}
			if slices.Contains(g.InvalidModules, m.Name) {
				link.Status += " · invalid settings of " + m.Name
			}
			v.Guilds = append(v.Guilds, link)
		}
	}
	return render(c, status, templates.ModulePage(s.chrome(c, m.Name, "modules"), v))
}

// toolStats are the module's tool calls over 30 days, when the server has
// the assistant's records and the module registers tools. A failed read
// is logged and leaves the page without them: it never fails the page.
func (s *Server) toolStats(ctx context.Context, m host.ModuleStatus) (map[string]assistant.ToolStat, bool) {
	if s.opts.ToolStats == nil || len(m.Tools) == 0 {
		return nil, false
	}
	stats, err := s.opts.ToolStats.ToolStats(ctx, m.Name)
	if err != nil {
		s.log.WarnContext(ctx, "reading the tool call counts failed; the module page shows none", "module", m.Name, "err", err)
		return nil, false
	}
	return stats, true
}

func toolWhere(t host.ToolInfo) string {
	var parts []string
	switch {
	case t.OwnerOnly:
		parts = append(parts, "owner only")
	case t.AllowOutsideGuilds:
		parts = append(parts, "in guilds and direct messages")
	default:
		parts = append(parts, "in guilds")
	}
	if t.RestrictGuilds {
		parts = append(parts, "restricted to "+strconv.Itoa(len(t.GuildIDs))+" guilds")
	}
	if len(t.Surfaces) > 0 {
		parts = append(parts, "surfaces: "+strings.Join(t.Surfaces, ", "))
	}
	return strings.Join(parts, "; ")
}

func manifestEntries(m host.Manifest) []templates.ManifestEntry {
	gs := m.GuildSettings
	if m.InvalidPolicy != "" {
		gs = append(slices.Clone(gs), "when invalid: "+m.InvalidPolicy)
	}
	return []templates.ManifestEntry{
		{Label: "Dependencies", Values: m.Dependencies},
		{Label: "Required capabilities", Values: m.RequiresCapabilities},
		{Label: "Activation capabilities", Values: m.ActivationCapabilities},
		{Label: "Discord permissions", Values: m.DiscordActions},
		{Label: "Declared tools", Values: m.Tools},
		{Label: "Declared commands", Values: m.Commands},
		{Label: "Services provided", Values: m.Provides},
		{Label: "Services consumed", Values: m.Consumes},
		{Label: "Event topics", Values: m.EventTopics},
		{Label: "HTTP hosts", Values: m.HTTPHosts},
		{Label: "Escape hatches", Values: m.EscapeHatches},
		{Label: "Guild settings", Values: gs},
	}
}

// settingsView is the settings form: an input per editable setting
// (secrets never shown back), the environment-only ones read-only.
func settingsView(m host.ModuleStatus, kept *form.ModuleSettings, errs form.Errors) templates.ModuleSettingsView {
	v := templates.ModuleSettingsView{Errors: errs}
	for _, fe := range m.FieldErrors {
		if errs == nil {
			v.Errors.Add(form.ModuleSettingName(fe.Field), fe.Message)
		}
	}
	if len(m.FieldErrors) > 0 && errs == nil {
		v.Errors.Add(form.FieldForm, "These settings kept the module from starting: correct them, save, then restart it.")
	}
	for _, st := range m.Settings {
		f := st.Field
		label := f.Label
		if label == "" {
			label = f.Name
		}
		if !st.Editable {
			val := st.Value
			if !st.Set && val == "" {
				val = "unset"
			}
			v.ReadOnly = append(v.ReadOnly, templates.Stat{Label: label, Value: val,
				Hint: "from " + st.Source + "; set " + hostkit.SettingEnvName(m.Name, f.Name)})
			continue
		}
		in := templates.SettingInput{
			Name: form.ModuleSettingName(f.Name), ID: "setting-" + f.Name, Label: label, Kind: string(f.Kind),
			Help: f.Help, Secret: f.Secret, SecretSet: f.Secret && st.Set, Choices: f.Choices, Multiline: f.Multiline,
			Source: st.Source, Error: v.Errors.Get(form.ModuleSettingName(f.Name)),
		}
		if !f.Secret && st.Source == "saved" {
			in.Value = st.Value
		}
		if kept != nil && !f.Secret {
			in.Value = kept.Values[f.Name]
		}
		if f.HasMin {
			in.Min = strconv.FormatFloat(f.Min, 'g', -1, 64)
		}
		if f.HasMax {
			in.Max = strconv.FormatFloat(f.Max, 'g', -1, 64)
		}
		if !f.Secret && st.Source != "saved" && st.Value != "" {
			in.Current = st.Value
			in.Help = strings.TrimSpace(in.Help + " Current value: " + secondsText(f.Name, st.Value) + ".")
		}
		v.Fields = append(v.Fields, in)
	}
	return v
}

// editableFields are the settings the form edits.
func editableFields(m host.ModuleStatus) []sdk.SettingField {
	var out []sdk.SettingField
	for _, st := range m.Settings {
		if st.Editable {
			out = append(out, st.Field)
		}
	}
	return out
}

// secondsText is a setting's value with, for a count of seconds (a name
// ending in _seconds), its duration in words: "604800 (7 days)".
func secondsText(name, value string) string {
	if !strings.HasSuffix(name, "_seconds") {
		return value
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n <= 0 {
		return value
	}
	w := intervalText(time.Duration(n) * time.Second)
	if w[0] < '0' || w[0] > '9' {
		w = "1 " + w // "1 day", not "day"
	}
	return value + " (" + w + ")"
}
