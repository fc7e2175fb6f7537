package host

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/modstore"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/modules/sdk"
)

// ModuleStatus is one compiled-in module as the /modules pages show it.
type ModuleStatus struct {
	Name, Version string
	// Description is the spec's one or two sentences for the operator
	// ("" when the spec has none).
	Description string
	// Enabled says the module is in the selection in effect.
	Enabled bool
	State   State
	// Since is when the module entered State (zero before the host
	// started): how long a starting module has been starting.
	Since time.Time
	// Reason says why a module is disabled or failed, or what a starting
	// one waits for.
	Reason string
	// Health is the visible health (zero when never reported); HealthAge
	// is its age.
	Health    sdk.ModuleHealth
	HasHealth bool
	HealthAge time.Duration
	// Metrics are the health metrics, which carry the event-bus and
	// storage counters (at most sdk.MaxHealthMetrics in all).
	Metrics map[string]float64
	// Goroutines is how many goroutines run under the module's
	// ModuleLabel at the last count (HasGoroutines: counted while running).
	Goroutines    int
	HasGoroutines bool
	// RunningLong are its callbacks past their budget, oldest first, as
	// shown: "running long: command /ping for 4 s".
	RunningLong []string
	// History is the bounded record of health changes, oldest first.
	History  []HealthChange
	Manifest Manifest
	Tools    []ToolInfo
	Jobs     []scheduler.Job
	Settings []SettingStatus
	// FieldErrors are the invalid settings that kept the module from starting.
	FieldErrors []FieldError
}

// Manifest is what a module declares, rendered for display.
type Manifest struct {
	Dependencies           []string
	RequiresCapabilities   []string
	ActivationCapabilities []string
	DiscordActions         []string
	EventTopics            []string
	// HTTPHosts render as "host (network, schemes)".
	HTTPHosts     []string
	EscapeHatches []string
	Provides      []string
	Consumes      []string
	// GuildSettings render as "name (kind)"; InvalidPolicy applies when a
	// guild's settings are invalid.
	GuildSettings []string
	InvalidPolicy string
	// Tools and Commands are the names the module owns: its declared LLM
	// tools and top-level commands ("/kudos").
	Tools    []string
	Commands []string
}

// SettingStatus is one deployment setting with its current value. A
// secret's value is never included: only whether it is set.
type SettingStatus struct {
	Field sdk.SettingField
	// Value is the current text ("" for a secret or an unset value).
	Value string
	Set   bool
	// Source is "default", "saved" or the environment variable's name.
	Source string
	// Editable: the admin form may change it (exposed or secret fields).
	Editable bool
}

// Selection describes the selection in effect.
type Selection struct {
	Names []string
	// FromEnv says KIMI_MODULES overrides the stored selection: the UI
	// says "selection from KIMI_MODULES" and toggles wait for its removal.
	FromEnv bool
	// Problems are selection-level refusals (a duplicate, a module that
	// is not installed, a duplicate compiled-in module).
	Problems []string
}

// Selection returns the selection in effect.
func (h *Host) Selection() Selection {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Selection{Names: slices.Clone(h.selection), FromEnv: h.opts.SelectionSet, Problems: slices.Clone(h.problems)}
}

// Capabilities returns what the host advertises.
func (h *Host) Capabilities() sdk.Capabilities { return h.capabilities() }

// Modules returns every compiled-in module, in the order given to New.
func (h *Host) Modules() []ModuleStatus {
	out := make([]ModuleStatus, 0, len(h.ordered))
	for _, n := range h.ordered {
		st, _ := h.Module(n)
		out = append(out, st)
	}
	return out
}

// Module returns one module's status.
func (h *Host) Module(name string) (ModuleStatus, bool) {
	h.mu.Lock()
	e := h.entries[name]
	if e == nil {
		h.mu.Unlock()
		return ModuleStatus{}, false
	}
	st := ModuleStatus{
		Name: name, Version: e.spec.Version, Description: e.spec.Description, Enabled: e.selected, State: e.state, Since: e.since, Reason: e.reason,
		FieldErrors: slices.Clone(e.fieldErrors), Manifest: manifest(e.spec),
	}
	inst, origins := e.inst, maps.Clone(e.origins)
	h.mu.Unlock()

	if inst != nil {
		h.health.mergeMetrics(name, counters(inst))
	}
	health, history, ok := h.health.snapshot(name)
	st.History = history
	if ok {
		st.Health, st.HasHealth, st.HealthAge = health, true, h.now().Sub(health.UpdatedAt)
	}
	st.Metrics = maps.Clone(health.Metrics)
	if st.Metrics == nil {
		st.Metrics = map[string]float64{}
	}
	st.Goroutines, st.HasGoroutines = h.goroutines.count(name)
	now := time.Now() // the budgets' timers run on the wall clock
	for _, r := range h.long.list(name) {
		st.RunningLong = append(st.RunningLong, r.Text(now))
	}
	st.Tools = h.tools.moduleTools(name)
	if jobs, err := h.sched.Jobs(h.ctxBackground(), name); err != nil {
		h.log.Warn("listing scheduled jobs failed", "module", name, "err", err)
	} else {
		st.Jobs = jobs
	}
	st.Settings = h.settingStatus(e.spec, origins)
	return st, true
}

func (h *Host) settingStatus(spec sdk.Spec, origins map[string]string) []SettingStatus {
	if spec.Settings == nil {
		return nil
	}
	out := make([]SettingStatus, 0, len(spec.Settings.Fields))
	for _, f := range spec.Settings.Fields {
		s := SettingStatus{Field: f, Source: "default", Editable: f.Exposed() || f.Secret}
		if src, ok := origins[f.Name]; ok {
			s.Source, s.Set = src, true
		}
		switch {
		case f.Secret:
			// never rendered back
		case s.Set && s.Source == "saved":
			s.Value = h.savedValue(spec.Name, f.Name)
		case s.Set:
			s.Value = h.getenv(s.Source)
		case f.Default != nil:
			s.Value = fmt.Sprint(f.Default)
		}
		out = append(out, s)
	}
	return out
}

func (h *Host) savedValue(module, field string) string {
	if h.store == nil {
		return ""
	}
	v, _, err := h.store.Setting(h.ctxBackground(), settingKey(module, field))
	if err != nil {
		return ""
	}
	return v
}

func manifest(s sdk.Spec) Manifest {
	m := Manifest{
		Dependencies: slices.Clone(s.Dependencies), RequiresCapabilities: slices.Clone(s.RequiresCapabilities),
		ActivationCapabilities: slices.Clone(s.ActivationCapabilities), EventTopics: slices.Clone(s.Permissions.EventTopics),
		EscapeHatches: s.Permissions.EscapeHatches(), Tools: slices.Clone(s.Tools),
	}
	for _, c := range s.Commands {
		m.Commands = append(m.Commands, "/"+c)
	}
	for _, a := range s.Permissions.DiscordActions {
		m.DiscordActions = append(m.DiscordActions, string(a))
	}
	for _, r := range s.Permissions.HTTPHosts {
		m.HTTPHosts = append(m.HTTPHosts, fmt.Sprintf("%s (%s, %s)", r.Host, r.EffectiveNetwork(), strings.Join(r.EffectiveSchemes(), ", ")))
	}
	for _, p := range s.Provides {
		m.Provides = append(m.Provides, fmt.Sprintf("%s@%d", p.Name, p.Version))
	}
	for _, c := range s.Consumes {
		m.Consumes = append(m.Consumes, fmt.Sprintf("%s@%d from %s", c.Name, c.Version, c.Provider))
	}
	if s.GuildSettings != nil {
		for _, f := range s.GuildSettings.Fields {
			m.GuildSettings = append(m.GuildSettings, fmt.Sprintf("%s (%s)", f.Name, f.Kind))
		}
		m.InvalidPolicy = string(s.GuildSettings.EffectivePolicy())
	}
	return m
}

// counters are a running module's event-bus and storage counters, merged
// into its health metrics when its health is read. events_dropped counts
// queue drops only; events the guild predicate refused are events_filtered.
func counters(inst *instance) map[string]float64 {
	out := map[string]float64{}
	if inst.events != nil {
		s := inst.events.Stats()
		maps.Copy(out, map[string]float64{
			"events_published": float64(s.Published), "events_handled": float64(s.Delivered),
			"events_failed": float64(s.Failed), "events_timed_out": float64(s.TimedOut),
			"events_dropped": float64(s.Dropped - s.Filtered), "events_filtered": float64(s.Filtered),
			"events_pending": float64(s.Queued),
		})
	}
	if inst.storage != nil {
		w := inst.storage.Stats()
		maps.Copy(out, map[string]float64{
			"storage_writes": float64(w.Writes), "storage_write_wait_max_ms": ms(w.WaitMax),
			"storage_write_hold_max_ms": ms(w.HoldMax), "storage_writes_rolled_back": float64(w.RolledBackOverlong),
		})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ModuleTables lists a module's tables with their row counts, running or
// not (its tables are kept while it is disabled); nil without a real
// storage (tests).
func (h *Host) ModuleTables(ctx context.Context, name string) ([]modstore.TableInfo, error) {
	if _, ok := h.Module(name); !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownModule, name)
	}
	if h.mstore == nil {
		return nil, nil
	}
	tables, err := h.mstore.Tables(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("host: tables of %s: %w", name, err)
	}
	return tables, nil
}
