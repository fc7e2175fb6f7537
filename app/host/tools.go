package host

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// toolEntry is one registered LLM tool.
type toolEntry struct {
	tool sdk.Tool
	inst *instance
}

// toolBook is the appliance's tool registry (§1.9): tools are registered
// during their module's create, names are unique across the appliance,
// and a tool is visible only while its module runs and only in guilds
// where the module is active.
type toolBook struct {
	mu       sync.RWMutex
	tools    map[string]*toolEntry
	surfaces map[string]map[string][]string // module -> surface -> tool names
	labelsOf map[string]map[string]string   // module -> tool -> label
}

func newToolBook() *toolBook {
	return &toolBook{tools: map[string]*toolEntry{}, surfaces: map[string]map[string][]string{}, labelsOf: map[string]map[string]string{}}
}

// loadRegistry is the sdk.ToolRegistry of one create call; seal ends it.
type loadRegistry struct {
	book   *toolBook
	inst   *instance
	mu     sync.Mutex
	sealed bool
}

var _ sdk.ToolRegistry = (*loadRegistry)(nil)

// Register implements sdk.ToolRegistry.
func (r *loadRegistry) Register(tool sdk.Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sealed {
		return hostkit.NewToolsSealed(tool.Name)
	}
	if err := hostkit.ValidateTool(tool); err != nil {
		return err
	}
	if err := hostkit.CheckToolDeclared(r.inst.name, r.inst.spec.Tools, tool.Name); err != nil {
		return err
	}
	tool.Parameters = maps.Clone(tool.Parameters)
	tool.GuildIDs = slices.Clone(tool.GuildIDs)
	r.book.mu.Lock()
	defer r.book.mu.Unlock()
	if cur := r.book.tools[tool.Name]; cur != nil {
		return fmt.Errorf("host: tool %s is already registered by module %s", strconv.Quote(tool.Name), strconv.Quote(cur.inst.name))
	}
	r.book.tools[tool.Name] = &toolEntry{tool: tool, inst: r.inst}
	return nil
}

func (r *loadRegistry) seal() {
	r.mu.Lock()
	r.sealed = true
	r.mu.Unlock()
}

// labels records tool progress labels by tool name (before or after the
// tools register); only the module's own tools show them.
func (b *toolBook) labels(inst *instance, labels map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.labelsOf[inst.name] == nil {
		b.labelsOf[inst.name] = map[string]string{}
	}
	maps.Copy(b.labelsOf[inst.name], labels)
}

func (b *toolBook) declareSurface(module, surface string, names []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.surfaces[module] == nil {
		b.surfaces[module] = map[string][]string{}
	}
	b.surfaces[module][surface] = slices.Clone(names)
}

// remove drops every tool registered by inst (a failed create, a close
// before a re-create).
func (b *toolBook) remove(inst *instance) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, e := range b.tools {
		if e.inst == inst {
			delete(b.tools, name)
		}
	}
	delete(b.surfaces, inst.name)
	delete(b.labelsOf, inst.name)
}

// ToolInfo describes a registered tool for the tool loop and the admin UI.
type ToolInfo struct {
	Name, Description, Module string
	Parameters                map[string]any
	MinTier                   sdk.TrustTier
	Searchable, OwnerOnly     bool
	AllowOutsideGuilds        bool
	RestrictGuilds            bool
	GuildIDs                  []uint64
	TrustedOutput             bool
	// Label is the progress label ("Giving kudos"), "" when none.
	Label string
	// Surfaces are the evaluation surfaces that declared the tool.
	Surfaces []string
}

func (b *toolBook) info(e *toolEntry) ToolInfo {
	t := e.tool
	info := ToolInfo{
		Name: t.Name, Description: t.Description, Module: e.inst.name, Parameters: maps.Clone(t.Parameters),
		MinTier: t.EffectiveMinTier(), Searchable: t.Searchable, OwnerOnly: t.OwnerOnly,
		AllowOutsideGuilds: t.AllowOutsideGuilds, RestrictGuilds: t.RestrictGuilds, GuildIDs: slices.Clone(t.GuildIDs),
		TrustedOutput: t.TrustedOutput, Label: b.labelsOf[e.inst.name][t.Name],
	}
	for _, s := range slices.Sorted(maps.Keys(b.surfaces[e.inst.name])) {
		if slices.Contains(b.surfaces[e.inst.name][s], t.Name) {
			info.Surfaces = append(info.Surfaces, s)
		}
	}
	return info
}

// gate is what the host knows about e's module when it decides whether a
// call or a listing of e is allowed: the same hostkit.ToolGate sdktest's
// CallGated is given, so the two decide alike (hostkit.CheckToolCall).
func (h *Host) gate(e *toolEntry) hostkit.ToolGate {
	g := hostkit.ToolGate{Running: e.inst.running(), GuildActive: e.inst.guildActive}
	if h.guilds != nil {
		g.IsOwner = h.guilds.IsOwner
	}
	return g
}

// moduleTools lists the tools module registered (visible or not), by name.
func (b *toolBook) moduleTools(module string) []ToolInfo {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []ToolInfo
	for _, name := range slices.Sorted(maps.Keys(b.tools)) {
		if e := b.tools[name]; e.inst.name == module {
			out = append(out, b.info(e))
		}
	}
	return out
}

// Tools lists the tools available in guildID (0: outside guilds), by name.
func (h *Host) Tools(guildID uint64) []ToolInfo {
	b := h.tools
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []ToolInfo
	for _, name := range slices.Sorted(maps.Keys(b.tools)) {
		if e := b.tools[name]; hostkit.ToolVisible(e.tool, guildID, h.gate(e)) {
			out = append(out, b.info(e))
		}
	}
	return out
}

// ErrToolUnavailable is returned by RunTool for a tool that is unknown,
// masked (its module is not running) or not available to this caller here
// (hostkit.ErrToolUnavailable, which it wraps).
var ErrToolUnavailable = fmt.Errorf("host: %w", hostkit.ErrToolUnavailable)

// RunTool runs a tool for a caller, contained: a panic, an error or a
// hang (past the callback timeout) is logged with the module's logger,
// reflected in its health, and returned; the host keeps running.
func (h *Host) RunTool(ctx context.Context, name string, tc sdk.ToolContext, args json.RawMessage) (string, error) {
	h.tools.mu.RLock()
	e := h.tools.tools[name]
	h.tools.mu.RUnlock()
	// One gate for the host and sdktest's CallGated: visibility, tier,
	// owner-only.
	if e == nil || hostkit.CheckToolCall(e.tool, tc, h.gate(e)) != nil {
		return "", ErrToolUnavailable
	}
	var out string
	err := h.callback(ctx, e.inst, "tool", name, func(ctx context.Context) error {
		var err error
		out, err = e.tool.Handler(ctx, tc, args)
		return err
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// removeModule drops every tool of the module, whatever its incarnation.
func (b *toolBook) removeModule(module string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, e := range b.tools {
		if e.inst.name == module {
			delete(b.tools, name)
		}
	}
	delete(b.surfaces, module)
	delete(b.labelsOf, module)
}
