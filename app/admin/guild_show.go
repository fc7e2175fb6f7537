package admin

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/web/templates"
)

// guildPageState carries a refused save into the guild page: the form as
// submitted with its errors, or the text a conflict did not save. The zero
// value renders the stored documents.
type guildPageState struct {
	setup    *templates.GuildSetupView
	raw      *templates.GuildRawView
	module   string                    // the module whose form is kept
	settings *form.GuildModuleSettings // as submitted
	errors   form.Errors               // of the kept form
	conflict *templates.GuildConflict
}

// guildShow is a guild's page: the server-setup document as a form and as
// raw text, and every module's settings as a form generated from its
// schema, each carrying the revision it shows.
func (s *Server) guildShow(c echo.Context) error {
	id, err := guildParam(c)
	if err != nil {
		return err
	}
	return s.renderGuild(c, http.StatusOK, id, guildPageState{})
}

// kept reports whether the page shows only stored documents (no refused
// form, no conflict): its cards may then be kept (guild_cards.go).
func (st guildPageState) kept() bool {
	return st.setup == nil && st.raw == nil && st.settings == nil && st.conflict == nil && len(st.errors) == 0
}

func (s *Server) renderGuild(c echo.Context, status int, id uint64, st guildPageState) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	// Read before the documents and the directory: a card rendered from
	// what follows is good while both revisions stay (guild_cards.go).
	dirRev, keep := s.dirRevision(id)
	keep = keep && st.kept()
	doc, err := s.opts.Guilds.Document(ctx, guildcfg.GuildTarget(id))
	if err != nil {
		return fmt.Errorf("admin: guild page: %w", err)
	}
	summary, _ := s.opts.Guilds.Summary(id)
	name := s.namer().Guild(id)
	ch := s.chrome(c, guildTitle(name), "guilds")
	v := templates.GuildView{
		ID: strconv.FormatUint(id, 10), Name: name, Status: guildStatus(summary), Exists: doc.Exists,
		Revision: doc.Revision, Short: guildcfg.ShortRevision(doc.Revision), Conflict: st.conflict,
		Kept: map[string]templ.Component{},
	}
	// near takes a card's notices of a save from the chrome; a card with
	// any is rendered for this request only.
	near := func(card string) bool {
		n := takeNear(&ch, card)
		if len(n) > 0 {
			if v.Near == nil {
				v.Near = map[string][]templates.Flash{}
			}
			v.Near[card] = n
		}
		return len(n) == 0
	}
	// kept is the card's kept render, when it may be used and there is one.
	kept := func(card, docRev string, quiet bool) bool {
		if !keep || !quiet {
			return false
		}
		kc, ok := s.guildCards.get(guildCardKey{id, card}, docRev, dirRev)
		if ok {
			v.Kept[card] = kc.html.Component(ch.CSRF)
		}
		return ok
	}
	setupQuiet, rawQuiet := near("setup"), near("raw")
	if !kept("setup", docKey(doc), setupQuiet) {
		v.Setup = setupView(doc)
		if st.setup != nil {
			v.Setup = *st.setup
		}
		v.Setup.Warnings = problemMessages(doc.Warnings)
		v.Pick = s.setupPickers(id, v.Setup)
	}
	if !kept("raw", docKey(doc), rawQuiet) {
		v.Raw = templates.GuildRawView{Text: doc.Text, Problems: problemMessages(doc.Problems)}
		if st.raw != nil {
			st.raw.Problems = v.Raw.Problems
			v.Raw = *st.raw
		}
	}
	if st.conflict != nil {
		v.Errors = form.Errors{form.FieldForm: form.MsgGuildConflict}
	}
	for _, name := range s.opts.Guilds.SchemaModules() {
		target, schema, err := s.moduleTarget(id, name)
		if err != nil {
			continue
		}
		mdoc, err := s.opts.Guilds.Document(ctx, target)
		if err != nil {
			return fmt.Errorf("admin: guild page: %w", err)
		}
		card := "module-" + name
		if kept(card, docKey(mdoc), near(card)) {
			v.Modules = append(v.Modules, templates.GuildModuleView{Name: name})
			continue
		}
		mv := s.moduleView(name, schema, mdoc)
		if st.module == name && st.settings != nil {
			keepModuleForm(&mv, *st.settings, st.errors)
		}
		s.pickModuleFields(id, schema, &mv)
		v.Modules = append(v.Modules, mv)
		if keep && len(v.Near[card]) == 0 {
			kc, err := s.guildCards.keepCard(ctx, guildCardKey{id, card}, v, docKey(mdoc), dirRev)
			if err != nil {
				return err
			}
			v.Kept[card] = kc.html.Component(ch.CSRF)
		}
	}
	for _, card := range []string{"setup", "raw"} {
		if _, ok := v.Kept[card]; ok || !keep || len(v.Near[card]) > 0 {
			continue
		}
		kc, err := s.guildCards.keepCard(ctx, guildCardKey{id, card}, v, docKey(doc), dirRev)
		if err != nil {
			return err
		}
		v.Kept[card] = kc.html.Component(ch.CSRF)
	}
	return render(c, status, templates.GuildPage(ch, v))
}

// moduleView is a module's settings form filled from its stored document:
// the keys the document sets, the defaults shown beside the others.
func (s *Server) moduleView(name string, schema sdk.GuildSettingsSchema, doc guildcfg.Document) templates.GuildModuleView {
	mv := templates.GuildModuleView{
		Name: name, Exists: doc.Exists, Valid: len(doc.Problems) == 0,
		Revision: doc.Revision, Short: guildcfg.ShortRevision(doc.Revision), Problems: problemMessages(doc.Problems),
		Policy: "Invalid settings take the whole guild offline.",
	}
	if schema.EffectivePolicy() == sdk.DisableModule {
		mv.Policy = "Invalid settings turn " + name + " off in this guild only."
	}
	var set map[string]any
	if doc.Frontmatter != nil {
		set = doc.Frontmatter.Values
	}
	mv.Fields = slices.Clone(s.moduleFields(name, schema))
	for i, f := range schema.Fields {
		fv := &mv.Fields[i]
		raw, explicit := set[f.Name]
		if explicit {
			fv.Value = settingText(raw)
			if v, err := f.Coerce(raw); err == nil {
				fv.Value = settingText(v)
			}
		}
		if f.Kind == sdk.GuildSettingBool {
			b, _ := raw.(bool)
			if !explicit {
				b, _ = f.Default.(bool)
			}
			fv.Checked, fv.Value = b, ""
		}
		switch {
		case explicit:
			fv.Source = "Set in the document."
		case fv.Kind == string(sdk.GuildSettingBool) && fv.Default != "":
			fv.Source = "Default: " + onOff(fv.Checked) + "."
		case fv.Default != "":
			fv.Source = "Default: " + fv.Default + "."
		}
	}
	return mv
}

// moduleFields is a module's settings form before a document fills it: per
// schema field its input's name and id, label, kind, help, choices,
// default and hint. A module's schema is fixed for the configuration
// service's life, so each is built once; callers copy it before filling it.
func (s *Server) moduleFields(name string, schema sdk.GuildSettingsSchema) []templates.ModuleField {
	if v, ok := s.moduleForms.Load(name); ok {
		return v.([]templates.ModuleField)
	}
	fields := make([]templates.ModuleField, 0, len(schema.Fields))
	for _, f := range schema.Fields {
		fv := templates.ModuleField{
			Name: form.ModuleSettingName(f.Name), ID: "ms-" + name + "-" + f.Name, Label: f.Name, Kind: string(f.Kind),
			Help: f.Help, Required: f.Required, Choices: f.Choices,
		}
		if f.Default != nil {
			if d, err := f.Coerce(nil); err == nil {
				fv.Default = settingText(d)
			}
		}
		fv.Hint = templates.ModuleHint(fv)
		fields = append(fields, fv)
	}
	v, _ := s.moduleForms.LoadOrStore(name, fields)
	return v.([]templates.ModuleField)
}

// keepModuleForm shows a refused module form as it was submitted, with its
// errors.
func keepModuleForm(mv *templates.GuildModuleView, f form.GuildModuleSettings, errs form.Errors) {
	mv.Errors = errs
	for i := range mv.Fields {
		fv := &mv.Fields[i]
		name := fv.Label
		if fv.Kind == string(sdk.GuildSettingBool) {
			fv.Checked = f.Bools[name]
		} else {
			fv.Value = f.Values[name]
		}
		fv.Error = errs.Get(fv.Name)
	}
}

// settingText renders a setting's value for an input: lists one entry per
// line.
func settingText(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case []uint64:
		return idsText(t)
	case []string:
		return strings.Join(t, "\n")
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, "\n")
	}
	return fmt.Sprint(v)
}

// onOff is a switch's state in words.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
