package host

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// router holds every module's commands and components. Registration works
// without Discord (it is local routing); dispatch comes from the Discord
// adapter through Host.RunCommand and friends, contained.
type router struct {
	mu         sync.RWMutex
	commands   map[string]*command                       // global, by qualified name ("group.name")
	guild      map[uint64]map[string]map[string]*command // guild → module → qualified name
	components map[string]*component                     // module \x00 kind \x00 key
}

type command struct {
	inst         *instance
	spec         sdk.CommandSpec
	handler      sdk.CommandHandler
	autocomplete sdk.AutocompleteHandler
}

type component struct {
	inst       *instance
	kind       sdk.ComponentKind
	handler    sdk.ComponentHandler
	opts       sdk.ComponentOptions
	registered time.Time
}

func newRouter() *router {
	return &router{commands: map[string]*command{}, guild: map[uint64]map[string]map[string]*command{}, components: map[string]*component{}}
}

func componentKey(module string, kind sdk.ComponentKind, key string) string {
	return module + "\x00" + string(kind) + "\x00" + key
}

// topName is the name a command occupies in Discord's tree: its group, or
// its own name.
func topName(spec sdk.CommandSpec) string { return cmp.Or(spec.Group, spec.Name) }

// dropModule removes every registration of inst (its guild command sets
// too: the next sync clears them in Discord).
func (r *router) dropModule(inst *instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.commands, func(_ string, c *command) bool { return c.inst == inst })
	maps.DeleteFunc(r.components, func(_ string, c *component) bool { return c.inst == inst })
	for g, mods := range r.guild {
		for _, c := range mods[inst.name] {
			if c.inst == inst {
				delete(mods, inst.name)
			}
			break
		}
		if len(mods) == 0 {
			delete(r.guild, g)
		}
	}
}

// topTaken reports who owns top in the global tree or in guild's (0: global
// only), excluding module's own guild set for that guild; r.mu held.
func (r *router) topTaken(top string, guildID uint64, module string) (string, bool) {
	for _, c := range r.commands {
		if topName(c.spec) == top {
			return c.inst.name, true
		}
	}
	for g, mods := range r.guild {
		if guildID != 0 && g != guildID {
			continue
		}
		for m, set := range mods {
			if guildID != 0 && m == module {
				continue
			}
			for _, c := range set {
				if topName(c.spec) == top {
					return m, true
				}
			}
		}
	}
	return "", false
}

// interactions is a module's sdk.Interactions view.
type interactions struct {
	inst *instance
	r    *router
}

var _ sdk.Interactions = (*interactions)(nil)

// commandsChanged tells the Discord connection the command set changed (it
// re-syncs, debounced; before READY it is a no-op there).
func (h *Host) commandsChanged() {
	if h.discord != nil {
		h.discord.CommandsChanged()
	}
}

func (v *interactions) AddCommand(spec sdk.CommandSpec, handler sdk.CommandHandler, autocomplete sdk.AutocompleteHandler) (sdk.Registration, error) {
	if v.inst.revoked() {
		return nil, v.inst.revokedErr("interactions")
	}
	if err := hostkit.ValidateCommandSpec(spec); err != nil {
		return nil, err
	}
	if err := hostkit.CheckCommandDeclared(v.inst.name, v.inst.spec.Commands, spec); err != nil {
		return nil, err
	}
	if handler == nil {
		return nil, fmt.Errorf("host: command %s needs a handler", strconv.Quote(spec.QualifiedName()))
	}
	name := spec.QualifiedName()
	v.r.mu.Lock()
	if cur := v.r.commands[name]; cur != nil {
		v.r.mu.Unlock()
		return nil, fmt.Errorf("host: command /%s is already registered by module %s", name, strconv.Quote(cur.inst.name))
	}
	// A group of one module, or a top-level name, is one entry in Discord's
	// tree: another module (or a guild set) cannot share it.
	if owner, taken := v.r.topTaken(topName(spec), 0, ""); taken && (owner != v.inst.name || spec.Group == "") {
		v.r.mu.Unlock()
		return nil, fmt.Errorf("host: command name /%s is already owned by module %s", topName(spec), strconv.Quote(owner))
	}
	c := &command{inst: v.inst, spec: spec, handler: handler, autocomplete: autocomplete}
	v.r.commands[name] = c
	v.r.mu.Unlock()
	v.inst.h.commandsChanged()
	return once(func() {
		v.r.mu.Lock()
		removed := v.r.commands[name] == c
		if removed {
			delete(v.r.commands, name)
		}
		v.r.mu.Unlock()
		if removed {
			v.inst.h.commandsChanged()
		}
	}), nil
}

// ReplaceGuildCommands replaces the module's command set for one guild: the
// set is checked whole (valid specs with handlers, no name twice, no name of
// a global command or another module's guild command there), staged in the
// router (guild commands route like global ones, only in their guild),
// recorded in kimi_command_guilds, and that guild's full set (every module)
// is pushed to Discord now. A failed push restores the previous set and
// returns *sdk.CommandSyncError; while Discord is not connected the set
// stays staged and the next READY syncs it.
func (v *interactions) ReplaceGuildCommands(ctx context.Context, guildID uint64, commands []sdk.GuildCommand) error {
	if v.inst.revoked() {
		return v.inst.revokedErr("interactions")
	}
	h := v.inst.h
	if err := h.capabilities().Require(sdk.CapDiscordGuildCommands); err != nil {
		return &sdk.ModuleContractError{Message: err.Error()}
	}
	if guildID == 0 {
		return &sdk.ModuleContractError{Message: "guild commands need a guild id"}
	}
	set := map[string]*command{}
	for _, gc := range commands {
		if err := hostkit.ValidateCommandSpec(gc.Spec); err != nil {
			return err
		}
		q := gc.Spec.QualifiedName()
		if gc.Handler == nil {
			return &sdk.ModuleContractError{Message: "guild command " + hostkit.Repr(q) + " has no handler"}
		}
		if set[q] != nil {
			return &sdk.ModuleContractError{Message: "module " + hostkit.Repr(v.inst.name) + " guild command " + hostkit.Repr(q) + " is registered more than once"}
		}
		set[q] = &command{inst: v.inst, spec: gc.Spec, handler: gc.Handler, autocomplete: gc.Autocomplete}
	}
	declarers := h.commandDeclarers(v.inst.name)
	for _, c := range set {
		if owner, ok := declarers[topName(c.spec)]; ok {
			return &sdk.ModuleContractError{Message: "module " + hostkit.Repr(v.inst.name) + " guild command " + hostkit.Repr(topName(c.spec)) + " is declared by module " + hostkit.Repr(owner)}
		}
	}
	v.r.mu.Lock()
	for _, c := range set {
		if owner, taken := v.r.topTaken(topName(c.spec), guildID, v.inst.name); taken {
			v.r.mu.Unlock()
			return &sdk.ModuleContractError{Message: "module " + hostkit.Repr(v.inst.name) + " guild command " + hostkit.Repr(topName(c.spec)) + " is already owned by module " + hostkit.Repr(owner)}
		}
	}
	prev := v.r.setGuild(guildID, v.inst.name, set)
	v.r.mu.Unlock()

	if err := h.recordCommandGuild(ctx, v.inst.name, guildID); err != nil {
		v.restoreGuild(guildID, set, prev)
		return &sdk.CommandSyncError{Message: "could not record the guild command set", Err: err}
	}
	if h.discord == nil {
		return nil
	}
	err := h.discord.SyncGuildCommands(ctx, guildID)
	if err == nil || errors.Is(err, ErrDiscordNotConnected) {
		return nil // synced, or staged for the next READY
	}
	v.restoreGuild(guildID, set, prev)
	return &sdk.CommandSyncError{Err: err}
}

// setGuild replaces module's set for guild (empty removes), returning the
// previous one; r.mu held.
func (r *router) setGuild(guildID uint64, module string, set map[string]*command) map[string]*command {
	mods := r.guild[guildID]
	if mods == nil {
		mods = map[string]map[string]*command{}
		r.guild[guildID] = mods
	}
	prev := mods[module]
	if len(set) == 0 {
		delete(mods, module)
	} else {
		mods[module] = set
	}
	if len(mods) == 0 {
		delete(r.guild, guildID)
	}
	return prev
}

// restoreGuild puts prev back unless the set was replaced meanwhile.
func (v *interactions) restoreGuild(guildID uint64, set, prev map[string]*command) {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	cur := v.r.guild[guildID][v.inst.name]
	if (len(set) == 0 && len(cur) == 0) || (len(set) > 0 && len(cur) > 0 && maps.Equal(cur, set)) {
		v.r.setGuild(guildID, v.inst.name, prev)
	}
}

func (v *interactions) RegisterComponent(kind sdk.ComponentKind, key string, handler sdk.ComponentHandler, opts sdk.ComponentOptions) (sdk.Registration, error) {
	if v.inst.revoked() {
		return nil, v.inst.revokedErr("interactions")
	}
	if !kind.Valid() {
		return nil, fmt.Errorf("host: unknown component kind %s", strconv.Quote(string(kind)))
	}
	if _, err := sdk.BuildCustomID(v.inst.name, key); err != nil {
		return nil, err
	}
	if handler == nil {
		return nil, fmt.Errorf("host: component %s needs a handler", strconv.Quote(key))
	}
	if opts.MinTier != 0 && !opts.MinTier.Valid() {
		return nil, fmt.Errorf("host: component %s has an invalid min_tier", strconv.Quote(key))
	}
	k := componentKey(v.inst.name, kind, key)
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	if v.r.components[k] != nil {
		return nil, fmt.Errorf("host: component %s %s is already registered", kind, strconv.Quote(key))
	}
	c := &component{inst: v.inst, kind: kind, handler: handler, opts: opts, registered: v.inst.h.now()}
	v.r.components[k] = c
	return once(func() {
		v.r.mu.Lock()
		defer v.r.mu.Unlock()
		if v.r.components[k] == c {
			delete(v.r.components, k)
		}
	}), nil
}

func (v *interactions) CustomID(key string, parts ...string) (string, error) {
	return sdk.BuildCustomID(v.inst.name, key, parts...)
}

// ErrNoHandler is returned for an interaction no module handles: an
// unregistered command or control, or one whose module is not active in
// the guild ("This control is no longer active.").
var ErrNoHandler = errors.New("host: no running module handles this interaction")

// ErrUnavailable is returned for a control whose registration exists but
// whose module is not running right now — starting, restarting or closing
// ("This control is temporarily unavailable.").
var ErrUnavailable = errors.New("host: the module handling this interaction is unavailable")

// ErrExpired is returned for a control past its registration's
// ExpiresAfter; the registration is removed ("This control has expired.").
var ErrExpired = errors.New("host: this control has expired")

// ErrNotAllowed is returned when the caller's trust tier is below the
// command's or component's minimum, or the interaction is outside a guild;
// the error is a *TierError naming the minimum.
var ErrNotAllowed = errors.New("host: not allowed")

// TierError is a refusal for the caller's tier; it matches ErrNotAllowed.
type TierError struct {
	// MinTier is the tier the command or control needs ("Staff only." when
	// staff, else "Not allowed.").
	MinTier sdk.TrustTier
}

func (e *TierError) Error() string   { return "host: not allowed (needs " + e.MinTier.String() + ")" }
func (e *TierError) Is(t error) bool { return t == ErrNotAllowed }

// ModuleBinder is implemented by an Interaction that must know the module
// it is dispatched to (the Discord adapter builds that module's custom ids
// for the controls a reply carries); the host calls BindModule before the
// handler runs.
type ModuleBinder interface {
	BindModule(module string)
}

func bind(in sdk.Interaction, module string) {
	if b, ok := in.(ModuleBinder); ok {
		b.BindModule(module)
	}
}

// command finds the command a caller in guildID reaches by qualified name:
// a global one, else one of that guild's sets.
func (r *router) command(name string, guildID uint64) (*command, error) {
	r.mu.RLock()
	c := r.commands[name]
	if c == nil && guildID != 0 {
		for _, set := range r.guild[guildID] {
			if gc := set[name]; gc != nil {
				c = gc
				break
			}
		}
	}
	r.mu.RUnlock()
	if c == nil || !c.inst.running() {
		return nil, ErrNoHandler
	}
	return c, nil
}

// gate applies a command's guild, predicate and tier checks.
func (c *command) gate(guildID uint64, tier sdk.TrustTier) error {
	if guildID == 0 || !c.inst.guildActive(guildID) || tier.Or(sdk.TierMember) < c.spec.EffectiveMinTier() {
		return &TierError{MinTier: c.spec.EffectiveMinTier()}
	}
	return nil
}

// RunCommand dispatches a slash command by qualified name ("group.name" or
// "name", as sdk.CommandSpec.QualifiedName) for a caller of tier,
// contained. A caller outside a guild, in a guild where the module is not
// active, or below the command's minimum gets a *TierError.
func (h *Host) RunCommand(ctx context.Context, name string, tier sdk.TrustTier, in sdk.Interaction) error {
	c, err := h.router.command(name, in.GuildID())
	if err != nil {
		return err
	}
	if err := c.gate(in.GuildID(), tier); err != nil {
		return err
	}
	bind(in, c.inst.name)
	return h.callback(ctx, c.inst, "command", "/"+name, func(ctx context.Context) error { return c.handler(ctx, in) })
}

// RunAutocomplete asks a command's autocomplete handler, contained and
// gated like the command (a refused caller gets no suggestions); at most 25
// are returned.
func (h *Host) RunAutocomplete(ctx context.Context, name string, tier sdk.TrustTier, in sdk.Interaction, option, current string) ([]sdk.Choice, error) {
	c, err := h.router.command(name, in.GuildID())
	if err != nil {
		return nil, err
	}
	if err := c.gate(in.GuildID(), tier); err != nil {
		return nil, err
	}
	if c.autocomplete == nil {
		return nil, nil
	}
	var out []sdk.Choice
	err = h.callback(ctx, c.inst, "autocomplete", "/"+name, func(ctx context.Context) error {
		var err error
		out, err = c.autocomplete(ctx, in, option, current)
		return err
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(out[:min(len(out), 25)]), nil
}

// RunComponent dispatches a button click, select choice or modal submit by
// its custom id (m:<module>:<key>[:part…]), contained, in the reference's
// order: unregistered or inactive in the guild (ErrNoHandler), module not
// running (ErrUnavailable), expired (ErrExpired, the registration removed),
// outside a guild or below the control's tier (*TierError), then the
// handler.
func (h *Host) RunComponent(ctx context.Context, kind sdk.ComponentKind, tier sdk.TrustTier, in sdk.Interaction) error {
	id, ok := sdk.ParseCustomID(in.CustomID())
	if !ok {
		return ErrNoHandler
	}
	k := componentKey(id.Module, kind, id.Key)
	h.router.mu.RLock()
	c := h.router.components[k]
	h.router.mu.RUnlock()
	if c == nil {
		return ErrNoHandler
	}
	if !c.inst.running() {
		return ErrUnavailable
	}
	if in.GuildID() != 0 && !c.inst.guildActive(in.GuildID()) {
		return ErrNoHandler
	}
	if d := c.opts.ExpiresAfter; d > 0 && !h.now().Before(c.registered.Add(d)) {
		h.router.mu.Lock()
		if h.router.components[k] == c {
			delete(h.router.components, k)
		}
		h.router.mu.Unlock()
		return ErrExpired
	}
	if in.GuildID() == 0 || tier.Or(sdk.TierMember) < c.opts.EffectiveMinTier() {
		return &TierError{MinTier: c.opts.EffectiveMinTier()}
	}
	bind(in, c.inst.name)
	return h.callback(ctx, c.inst, string(kind), id.Key, func(ctx context.Context) error { return c.handler(ctx, in) })
}

// Commands returns every registered global command's spec, sorted by
// qualified name (the Discord connection syncs them in one bulk overwrite).
func (h *Host) Commands() []sdk.CommandSpec {
	h.router.mu.RLock()
	defer h.router.mu.RUnlock()
	out := make([]sdk.CommandSpec, 0, len(h.router.commands))
	for _, name := range slices.Sorted(maps.Keys(h.router.commands)) {
		out = append(out, h.router.commands[name].spec)
	}
	return out
}

// GuildCommands returns the specs of every module's command set for one
// guild, sorted by qualified name.
func (h *Host) GuildCommands(guildID uint64) []sdk.CommandSpec {
	h.router.mu.RLock()
	defer h.router.mu.RUnlock()
	var out []sdk.CommandSpec
	for _, set := range h.router.guild[guildID] {
		for _, c := range set {
			out = append(out, c.spec)
		}
	}
	slices.SortFunc(out, func(a, b sdk.CommandSpec) int { return cmp.Compare(a.QualifiedName(), b.QualifiedName()) })
	return out
}

// CommandGuilds returns the guilds that have guild commands staged now or
// recorded in kimi_command_guilds (a closed or disabled module's, which the
// next sync clears), ascending.
func (h *Host) CommandGuilds(ctx context.Context) ([]uint64, error) {
	h.router.mu.RLock()
	set := map[uint64]bool{}
	for g := range h.router.guild {
		set[g] = true
	}
	h.router.mu.RUnlock()
	if h.store != nil {
		rows, err := h.store.Reader().QueryContext(ctx, `SELECT DISTINCT guild_id FROM kimi_command_guilds`)
		if err != nil {
			return nil, fmt.Errorf("host: read command guilds: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var g int64
			if err := rows.Scan(&g); err != nil {
				return nil, fmt.Errorf("host: read command guilds: %w", err)
			}
			set[uint64(g)] = true
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("host: read command guilds: %w", err)
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// GuildCommandsSynced forgets the recorded (module, guild) rows of modules
// with no staged set in guildID: Discord now has that guild's set without
// them.
func (h *Host) GuildCommandsSynced(ctx context.Context, guildID uint64) error {
	if h.store == nil {
		return nil
	}
	h.router.mu.RLock()
	keep := slices.Sorted(maps.Keys(h.router.guild[guildID]))
	h.router.mu.RUnlock()
	return h.store.Write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT module FROM kimi_command_guilds WHERE guild_id = ?`, int64(guildID))
		if err != nil {
			return err
		}
		var drop []string
		for rows.Next() {
			var m string
			if err := rows.Scan(&m); err != nil {
				rows.Close()
				return err
			}
			if !slices.Contains(keep, m) {
				drop = append(drop, m)
			}
		}
		rows.Close()
		for _, m := range drop {
			if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_command_guilds WHERE module = ? AND guild_id = ?`, m, int64(guildID)); err != nil {
				return err
			}
		}
		return nil
	})
}

// recordCommandGuild records that module has (or had) a command set in
// guildID, so a later sync clears it once the module is gone.
func (h *Host) recordCommandGuild(ctx context.Context, module string, guildID uint64) error {
	if h.store == nil {
		return nil
	}
	return h.store.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_command_guilds (module, guild_id, updated_ms) VALUES (?, ?, ?)
			ON CONFLICT (module, guild_id) DO UPDATE SET updated_ms = excluded.updated_ms`, module, int64(guildID), h.now().UnixMilli())
		return err
	})
}
