package host

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// toolEntry is one registered LLM tool; info is its listing, never
// modified once built: a change of labels or surfaces replaces it (under
// the book's write lock), so listings handed out stay valid.
type toolEntry struct {
	tool sdk.Tool
	inst *instance
	info *ToolInfo
}

// toolBook is the appliance's tool registry (§1.9): tools are registered
// during their module's create, names are unique across the appliance,
// and a tool is visible only while its module runs and only in guilds
// where the module is active.
type toolBook struct {
	mu       sync.RWMutex
	tools    map[string]*toolEntry
	order    []*toolEntry                   // tools by name, for the listings
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
	// The schema the model is sent, encoded once: a schema that cannot be
	// encoded is refused here rather than at every turn.
	schema, err := json.Marshal(tool.Parameters)
	if err != nil {
		return fmt.Errorf("host: register tool %s: parameters: %w", strconv.Quote(tool.Name), err)
	}
	if tool.Parameters == nil {
		schema = []byte(`{"type":"object","properties":{}}`)
	}
	r.book.mu.Lock()
	defer r.book.mu.Unlock()
	if cur := r.book.tools[tool.Name]; cur != nil {
		return fmt.Errorf("host: tool %s is already registered by module %s", strconv.Quote(tool.Name), strconv.Quote(cur.inst.name))
	}
	e := &toolEntry{tool: tool, inst: r.inst}
	e.info = r.book.info(e, schema)
	r.book.tools[tool.Name] = e
	r.book.reorder()
	return nil
}

// reorder rebuilds the by-name order after a change of the set (write
// lock held).
func (b *toolBook) reorder() {
	b.order = b.order[:0]
	for _, name := range slices.Sorted(maps.Keys(b.tools)) {
		b.order = append(b.order, b.tools[name])
	}
}

// relist rebuilds the listings of module's tools after a change of its
// labels or surfaces (write lock held).
func (b *toolBook) relist(module string) {
	for _, e := range b.tools {
		if e.inst.name == module {
			e.info = b.info(e, e.info.Schema)
		}
	}
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
	b.relist(inst.name)
}

func (b *toolBook) declareSurface(module, surface string, names []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.surfaces[module] == nil {
		b.surfaces[module] = map[string][]string{}
	}
	b.surfaces[module][surface] = slices.Clone(names)
	b.relist(module)
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
	b.reorder()
}

// ToolInfo describes a registered tool for the assistant's tool loop and
// the admin UI. Its slices and maps are shared with the host's registry:
// read them, never modify them.
type ToolInfo struct {
	Name, Description, Module string
	// Parameters is the JSON schema of the arguments object as the module
	// registered it; Schema is the same encoded, as sent to the model.
	Parameters            map[string]any
	Schema                json.RawMessage
	MinTier               sdk.TrustTier
	Searchable, OwnerOnly bool
	AllowOutsideGuilds    bool
	RestrictGuilds        bool
	GuildIDs              []uint64
	// TrustedOutput: the output goes to the model as is; otherwise it is
	// wrapped as untrusted context.
	TrustedOutput bool
	// Label is the progress label: the module's RegisterToolLabels label
	// ("Giving kudos"), else the title-cased name ("Give Kudos").
	Label string
	// Surfaces are the evaluation surfaces that declared the tool.
	Surfaces []string
}

// info builds e's listing (the book's lock held).
func (b *toolBook) info(e *toolEntry, schema json.RawMessage) *ToolInfo {
	t := e.tool
	info := &ToolInfo{
		Name: t.Name, Description: t.Description, Module: e.inst.name, Parameters: t.Parameters, Schema: schema,
		MinTier: t.EffectiveMinTier(), Searchable: t.Searchable, OwnerOnly: t.OwnerOnly,
		AllowOutsideGuilds: t.AllowOutsideGuilds, RestrictGuilds: t.RestrictGuilds, GuildIDs: t.GuildIDs,
		TrustedOutput: t.TrustedOutput, Label: b.labelsOf[e.inst.name][t.Name],
	}
	if info.Label == "" {
		info.Label = TitleLabel(t.Name)
	}
	for _, s := range slices.Sorted(maps.Keys(b.surfaces[e.inst.name])) {
		if slices.Contains(b.surfaces[e.inst.name][s], t.Name) {
			info.Surfaces = append(info.Surfaces, s)
		}
	}
	return info
}

// TitleLabel is the progress label of a tool without one: its name
// title-cased, underscores as spaces ("give_kudos" → "Give Kudos").
func TitleLabel(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || r == ' ' })
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
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

// moduleTools lists the tools module registered (visible or not), by name:
// the admin's catalog of a module, unfiltered by any caller.
func (b *toolBook) moduleTools(module string) []ToolInfo {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []ToolInfo
	for _, e := range b.order {
		if e.inst.name == module {
			out = append(out, *e.info)
		}
	}
	return out
}

// ToolsFor lists, by name, the tools the caller tc may run: exactly those
// RunTool(tc) would run — the module running, tc's guild (GuildID 0: only
// AllowOutsideGuilds tools), RestrictGuilds, the module active in the
// guild, tc's tier at least MinTier, OwnerOnly for the owner alone —
// because both decide through hostkit.CheckToolCall. Blocked and
// searchable tools are the assistant's concern, not the host's: they are
// listed. (The admin's unfiltered catalog of a module is ModuleStatus.Tools.)
// The listings are the registry's own, shared and never modified: read
// them, never write through them.
func (h *Host) ToolsFor(tc sdk.ToolContext) []*ToolInfo {
	b := h.tools
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*ToolInfo, 0, len(b.order))
	var last *instance
	var g hostkit.ToolGate
	for _, e := range b.order {
		if e.inst != last {
			// RunTool's gate, built once per run of one module's tools.
			last, g = e.inst, h.gate(e)
		}
		if hostkit.CheckToolCall(e.tool, tc, g) == nil {
			out = append(out, e.info)
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
	b.reorder()
}
