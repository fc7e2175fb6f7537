package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// router holds every module's commands and components. Registration works
// without Discord (it is local routing); dispatch comes from the Discord
// adapter through Host.RunCommand and friends, contained.
type router struct {
	mu         sync.RWMutex
	commands   map[string]*command   // qualified name
	components map[string]*component // module \x00 kind \x00 key
}

type command struct {
	inst         *instance
	spec         sdk.CommandSpec
	handler      sdk.CommandHandler
	autocomplete sdk.AutocompleteHandler
}

type component struct {
	inst    *instance
	kind    sdk.ComponentKind
	handler sdk.ComponentHandler
	opts    sdk.ComponentOptions
}

func newRouter() *router {
	return &router{commands: map[string]*command{}, components: map[string]*component{}}
}

func componentKey(module string, kind sdk.ComponentKind, key string) string {
	return module + "\x00" + string(kind) + "\x00" + key
}

// dropModule removes every registration of inst.
func (r *router) dropModule(inst *instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.commands, func(_ string, c *command) bool { return c.inst == inst })
	maps.DeleteFunc(r.components, func(_ string, c *component) bool { return c.inst == inst })
}

// interactions is a module's sdk.Interactions view.
type interactions struct {
	inst *instance
	r    *router
}

var _ sdk.Interactions = (*interactions)(nil)

func (v *interactions) AddCommand(spec sdk.CommandSpec, handler sdk.CommandHandler, autocomplete sdk.AutocompleteHandler) (sdk.Registration, error) {
	if v.inst.revoked() {
		return nil, v.inst.revokedErr("interactions")
	}
	if err := hostkit.ValidateCommandSpec(spec); err != nil {
		return nil, err
	}
	if handler == nil {
		return nil, fmt.Errorf("host: command %s needs a handler", strconv.Quote(spec.QualifiedName()))
	}
	name := spec.QualifiedName()
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	if cur := v.r.commands[name]; cur != nil {
		return nil, fmt.Errorf("host: command /%s is already registered by module %s", name, strconv.Quote(cur.inst.name))
	}
	c := &command{inst: v.inst, spec: spec, handler: handler, autocomplete: autocomplete}
	v.r.commands[name] = c
	return once(func() {
		v.r.mu.Lock()
		defer v.r.mu.Unlock()
		if v.r.commands[name] == c {
			delete(v.r.commands, name)
		}
	}), nil
}

func (v *interactions) ReplaceGuildCommands(ctx context.Context, guildID uint64, commands []sdk.GuildCommand) error {
	if v.inst.revoked() {
		return v.inst.revokedErr("interactions")
	}
	return &sdk.CommandSyncError{Err: ErrDiscordNotConnected}
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
	k := componentKey(v.inst.name, kind, key)
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	if v.r.components[k] != nil {
		return nil, fmt.Errorf("host: component %s %s is already registered", kind, strconv.Quote(key))
	}
	c := &component{inst: v.inst, kind: kind, handler: handler, opts: opts}
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

// ErrNoHandler is returned for an interaction no running module handles
// (or one in a guild where its module is not active).
var ErrNoHandler = errors.New("host: no running module handles this interaction")

// ErrNotAllowed is returned when the caller's trust tier is below the
// command's or component's minimum.
var ErrNotAllowed = errors.New("host: not allowed")

func (r *router) command(name string, guildID uint64) (*command, error) {
	r.mu.RLock()
	c := r.commands[name]
	r.mu.RUnlock()
	if c == nil || !c.inst.running() || guildID == 0 || !c.inst.guildActive(guildID) {
		return nil, ErrNoHandler
	}
	return c, nil
}

// RunCommand dispatches a slash command (qualified name, e.g. "kudos give")
// for a caller of tier, contained.
func (h *Host) RunCommand(ctx context.Context, name string, tier sdk.TrustTier, in sdk.Interaction) error {
	c, err := h.router.command(name, in.GuildID())
	if err != nil {
		return err
	}
	if tier.Or(sdk.TierMember) < c.spec.EffectiveMinTier() {
		return ErrNotAllowed
	}
	return h.callback(ctx, c.inst, "command", "/"+name, func(ctx context.Context) error { return c.handler(ctx, in) })
}

// RunAutocomplete asks a command's autocomplete handler, contained.
func (h *Host) RunAutocomplete(ctx context.Context, name string, in sdk.Interaction, option, current string) ([]sdk.Choice, error) {
	c, err := h.router.command(name, in.GuildID())
	if err != nil {
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
// its custom id (m:<module>:<key>[:part…]), contained.
func (h *Host) RunComponent(ctx context.Context, kind sdk.ComponentKind, tier sdk.TrustTier, in sdk.Interaction) error {
	id, ok := sdk.ParseCustomID(in.CustomID())
	if !ok {
		return ErrNoHandler
	}
	h.router.mu.RLock()
	c := h.router.components[componentKey(id.Module, kind, id.Key)]
	h.router.mu.RUnlock()
	if c == nil || !c.inst.running() || in.GuildID() == 0 || !c.inst.guildActive(in.GuildID()) {
		return ErrNoHandler
	}
	if tier.Or(sdk.TierMember) < c.opts.EffectiveMinTier() {
		return ErrNotAllowed
	}
	what := string(kind)
	return h.callback(ctx, c.inst, what, id.Key, func(ctx context.Context) error { return c.handler(ctx, in) })
}
