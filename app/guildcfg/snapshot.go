package guildcfg

import (
	"maps"
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// snapshot is the immutable in-memory view the hot path reads: every
// guild that has a document, with its activation and each schema module's
// settings. A write builds a new snapshot (copying the guild map, rebuilding
// the one guild it touched) and swaps it in; readers never lock.
type snapshot struct {
	guilds map[uint64]*guildState
	// schemas and defaults are fixed at New: every module with a
	// GuildSettingsSchema, and its settings when a guild has no document.
	schemas  map[string]sdk.GuildSettingsSchema
	order    []string // schema modules, sorted
	defaults map[string]sdk.GuildSettingsSnapshot
	// channels holds the valid channel documents that block or pin tools
	// (channel documents name no guild, so they are keyed by channel).
	channels map[uint64]ChannelConfig
}

// guildState is one guild in a snapshot. Never modified once published.
type guildState struct {
	id       uint64
	hasDoc   bool
	revision string
	config   GuildConfig // valid only when valid
	valid    bool
	problems []FieldError
	modules  map[string]sdk.GuildSettingsSnapshot // modules with a stored document

	// derived by finish
	active         bool
	invalidModules []string // schema modules whose settings here are invalid
	blockedBy      []string // the disable_guild ones among them
}

func (s *snapshot) settings(g *guildState, module string) (sdk.GuildSettingsSnapshot, bool) {
	if g != nil {
		if ms, ok := g.modules[module]; ok {
			return ms, true
		}
	}
	d, ok := s.defaults[module]
	return d, ok
}

// finish derives activation: a guild is active only with a valid document
// that says bot_active: true and no disable_guild module whose settings
// here are invalid (fail closed: no document, inactive).
func (s *snapshot) finish(g *guildState) {
	g.invalidModules, g.blockedBy = nil, nil
	for _, m := range s.order {
		ms, _ := s.settings(g, m)
		if ms.Valid {
			continue
		}
		g.invalidModules = append(g.invalidModules, m)
		if s.schemas[m].EffectivePolicy() == sdk.DisableGuild {
			g.blockedBy = append(g.blockedBy, m)
		}
	}
	g.active = g.hasDoc && g.valid && g.config.BotActive && len(g.blockedBy) == 0
}

// with returns a copy of s in which guild id is replaced by what edit makes
// of a copy of its state.
func (s *snapshot) with(id uint64, edit func(g *guildState)) *snapshot {
	next := *s
	next.guilds = maps.Clone(s.guilds)
	var g guildState
	if old := s.guilds[id]; old != nil {
		g = *old
		g.modules = maps.Clone(old.modules)
	} else {
		g = guildState{id: id}
	}
	if g.modules == nil {
		g.modules = map[string]sdk.GuildSettingsSnapshot{}
	}
	edit(&g)
	next.place(&g)
	return &next
}

// place derives g's activation and puts it into s (which must be a
// snapshot still being built).
func (s *snapshot) place(g *guildState) {
	s.finish(g)
	if !g.hasDoc && len(g.modules) == 0 {
		delete(s.guilds, g.id)
		return
	}
	s.guilds[g.id] = g
}

func newSnapshot(specs []sdk.Spec) *snapshot {
	s := &snapshot{
		guilds:   map[uint64]*guildState{},
		schemas:  map[string]sdk.GuildSettingsSchema{},
		defaults: map[string]sdk.GuildSettingsSnapshot{},
		channels: map[uint64]ChannelConfig{},
	}
	for _, spec := range specs {
		if spec.GuildSettings == nil {
			continue
		}
		schema := *spec.GuildSettings
		s.schemas[spec.Name] = schema
		s.order = append(s.order, spec.Name)
		snap, _ := EvaluateModuleDocument(schema, "", false)
		s.defaults[spec.Name] = snap
	}
	slices.Sort(s.order)
	return s
}

// applyGuildDocument sets a guild's server-setup state from its text.
func applyGuildDocument(g *guildState, text string) {
	g.hasDoc = true
	g.revision = Revision(text)
	cfg, err := ParseGuildDocument(text)
	g.config, g.valid, g.problems = cfg, err == nil, problemsOf(err)
}

func problemsOf(err error) []FieldError {
	if err == nil {
		return nil
	}
	if v, ok := err.(*ValidationError); ok {
		return v.Problems
	}
	return []FieldError{{Message: err.Error()}}
}

// withChannel returns a copy of s with channel id's document set from text
// ("" with deleted: removed). Only a valid document that blocks or pins a
// tool is kept; an invalid one contributes nothing (its problems show on
// its page).
func (s *snapshot) withChannel(id uint64, text string, deleted bool) *snapshot {
	next := *s
	next.channels = maps.Clone(s.channels)
	applyChannelDocument(next.channels, id, text, deleted)
	return &next
}

func applyChannelDocument(channels map[uint64]ChannelConfig, id uint64, text string, deleted bool) {
	delete(channels, id)
	if deleted {
		return
	}
	cfg, err := ParseChannelDocument(text)
	if err == nil && (len(cfg.BlockedTools) > 0 || len(cfg.PinnedTools) > 0) {
		cfg.Body = ""
		channels[id] = cfg
	}
}
