package sdktest

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// RegisteredCommand is a command registered on a FakeInteractions.
type RegisteredCommand struct {
	Spec         sdk.CommandSpec
	Handler      sdk.CommandHandler
	Autocomplete sdk.AutocompleteHandler
}

// ComponentID identifies a registered component: its kind and key.
type ComponentID struct {
	Kind sdk.ComponentKind
	Key  string
}

// RegisteredComponent is a component registered on a FakeInteractions.
type RegisteredComponent struct {
	Handler sdk.ComponentHandler
	Options sdk.ComponentOptions
	// RegisteredAt starts the registration's expiry (Options.ExpiresAfter).
	RegisteredAt time.Time
}

// MinTier is the tier a clicker needs (the registration's, default member).
func (c RegisteredComponent) MinTier() sdk.TrustTier { return c.Options.EffectiveMinTier() }

// FakeInteractions is an sdk.Interactions that records command, component
// and per-guild command registrations; tests invoke the handlers through
// RunCommand, RunAutocomplete and Press, which apply the host's gate once
// one is set, to global and per-guild commands alike (or call a handler
// directly). Registering a command or component
// that is already registered fails, as does an invalid component kind or
// key; CustomID uses the SDK's builder.
type FakeInteractions struct {
	module string

	mu            sync.Mutex
	commands      map[string]RegisteredCommand
	components    map[ComponentID]RegisteredComponent
	guildCommands map[uint64][]sdk.GuildCommand
	gate          *Gate
	now           func() time.Time
	// declared is set by DeclareCommands: then only declared top-level
	// names register, as in the host.
	declared []string
	owned    bool
	// SyncError, when set, is returned by ReplaceGuildCommands after
	// staging, as a failed live sync would be.
	SyncError error
}

var _ sdk.Interactions = (*FakeInteractions)(nil)

// NewFakeInteractions returns an empty router for module.
func NewFakeInteractions(module string) *FakeInteractions {
	return &FakeInteractions{
		module:        module,
		commands:      map[string]RegisteredCommand{},
		components:    map[ComponentID]RegisteredComponent{},
		guildCommands: map[uint64][]sdk.GuildCommand{},
		now:           time.Now,
	}
}

// SetClock sets the time source of component expiry (default time.Now);
// pass a Clock's Now to expire registrations without waiting.
func (f *FakeInteractions) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

// DeclareCommands makes the router own only the declared top-level
// command and group names (the spec's Commands; NewRuntime calls it):
// AddCommand of any other name then fails with "module 'm' did not
// declare command 'x'", as in the host.
func (f *FakeInteractions) DeclareCommands(names []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.declared, f.owned = slices.Clone(names), true
}

// AddCommand registers a command under its qualified name ("group.name");
// a name already registered fails with "module 'm' command 'q' is already
// registered", and after DeclareCommands an undeclared top-level name
// fails.
func (f *FakeInteractions) AddCommand(spec sdk.CommandSpec, handler sdk.CommandHandler, autocomplete sdk.AutocompleteHandler) (sdk.Registration, error) {
	if handler == nil {
		return nil, &sdk.ModuleContractError{Message: "command " + hostkit.Repr(spec.QualifiedName()) + " has no handler"}
	}
	if err := hostkit.ValidateCommandSpec(spec); err != nil {
		return nil, err
	}
	qualified := spec.QualifiedName()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.owned {
		if err := hostkit.CheckCommandDeclared(f.module, f.declared, spec); err != nil {
			return nil, err
		}
	}
	if _, exists := f.commands[qualified]; exists {
		return nil, &sdk.ModuleContractError{Message: "module " + hostkit.Repr(f.module) + " command " + hostkit.Repr(qualified) + " is already registered"}
	}
	if top := topName(spec); f.guildTopName(top) {
		return nil, &sdk.ModuleContractError{Message: "module " + hostkit.Repr(f.module) + " global command " + hostkit.Repr(top) + " would shadow a guild command"}
	}
	f.commands[qualified] = RegisteredCommand{Spec: spec, Handler: handler, Autocomplete: autocomplete}
	return newRegistration(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.commands, qualified)
	}), nil
}

// ReplaceGuildCommands replaces the module's command set for one guild (an
// empty slice removes it). The whole set is checked first, as in the host:
// each spec is valid and has a handler, no qualified name twice ("module
// 'm' guild command 'q' is registered more than once"), no top-level name
// of a global command ("module 'm' guild command 'x' would shadow a global
// command"). When SyncError is set it is returned as a failed live sync and
// the rejected set is not staged: the guild keeps its previous commands.
// RunCommand and RunAutocomplete reach a staged command only from its
// guild.
func (f *FakeInteractions) ReplaceGuildCommands(ctx context.Context, guildID uint64, commands []sdk.GuildCommand) error {
	seen := map[string]bool{}
	for _, c := range commands {
		if err := hostkit.ValidateCommandSpec(c.Spec); err != nil {
			return err
		}
		qualified := c.Spec.QualifiedName()
		if c.Handler == nil {
			return &sdk.ModuleContractError{Message: "guild command " + hostkit.Repr(qualified) + " has no handler"}
		}
		if seen[qualified] {
			return &sdk.ModuleContractError{Message: "module " + hostkit.Repr(f.module) + " guild command " + hostkit.Repr(qualified) + " is registered more than once"}
		}
		seen[qualified] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range commands {
		if top := topName(c.Spec); f.globalTopName(top) {
			return &sdk.ModuleContractError{Message: "module " + hostkit.Repr(f.module) + " guild command " + hostkit.Repr(top) + " would shadow a global command"}
		}
	}
	if f.SyncError != nil {
		return f.SyncError
	}
	if len(commands) == 0 {
		delete(f.guildCommands, guildID)
	} else {
		f.guildCommands[guildID] = slices.Clone(commands)
	}
	return nil
}

// RegisterComponent registers a button, select or modal handler for key;
// an unsupported kind ("unsupported component kind 'k'"), an invalid key
// (the custom-id rules) or a duplicate ("module 'm' component kind/'k' is
// already registered") fails.
func (f *FakeInteractions) RegisterComponent(kind sdk.ComponentKind, key string, handler sdk.ComponentHandler, opts sdk.ComponentOptions) (sdk.Registration, error) {
	if !kind.Valid() {
		return nil, &sdk.ModuleContractError{Message: "unsupported component kind " + hostkit.Repr(string(kind))}
	}
	if _, err := sdk.BuildCustomID(f.module, key); err != nil {
		return nil, err
	}
	if handler == nil {
		return nil, &sdk.ModuleContractError{Message: "component " + string(kind) + "/" + hostkit.Repr(key) + " has no handler"}
	}
	if opts.MinTier != 0 && !opts.MinTier.Valid() {
		return nil, &sdk.ModuleContractError{Message: "component " + string(kind) + "/" + hostkit.Repr(key) + " has an invalid min_tier"}
	}
	id := ComponentID{Kind: kind, Key: key}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, exists := f.components[id]; exists {
		return nil, &sdk.ModuleContractError{Message: "module " + hostkit.Repr(f.module) + " component " + string(kind) + "/" + hostkit.Repr(key) + " is already registered"}
	}
	f.components[id] = RegisteredComponent{Handler: handler, Options: opts, RegisteredAt: f.now()}
	return newRegistration(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.components, id)
	}), nil
}

// topName is the name a command occupies in Discord's tree: its group, or
// its own name.
func topName(spec sdk.CommandSpec) string { return cmp.Or(spec.Group, spec.Name) }

// globalTopName reports whether a global command occupies top; f.mu held.
func (f *FakeInteractions) globalTopName(top string) bool {
	for _, c := range f.commands {
		if topName(c.Spec) == top {
			return true
		}
	}
	return false
}

// guildTopName reports whether a guild command of any guild occupies top;
// f.mu held.
func (f *FakeInteractions) guildTopName(top string) bool {
	for _, set := range f.guildCommands {
		for _, c := range set {
			if topName(c.Spec) == top {
				return true
			}
		}
	}
	return false
}

// resolve finds the command a user in guildID reaches by qualified name:
// a global command, or one staged for that guild.
func (f *FakeInteractions) resolve(qualified string, guildID uint64) (RegisteredCommand, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.commands[qualified]; ok {
		return c, true
	}
	if guildID == 0 {
		return RegisteredCommand{}, false
	}
	for _, c := range f.guildCommands[guildID] {
		if c.Spec.QualifiedName() == qualified {
			return RegisteredCommand{Spec: c.Spec, Handler: c.Handler, Autocomplete: c.Autocomplete}, true
		}
	}
	return RegisteredCommand{}, false
}

// CustomID builds the module's custom id for key and parts.
func (f *FakeInteractions) CustomID(key string, parts ...string) (string, error) {
	return sdk.BuildCustomID(f.module, key, parts...)
}

// Command returns the command registered under a qualified name.
func (f *FakeInteractions) Command(qualified string) (RegisteredCommand, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.commands[qualified]
	return c, ok
}

// CommandNames returns the registered qualified command names, sorted.
func (f *FakeInteractions) CommandNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.commands))
}

// Component returns the component registered for kind and key.
func (f *FakeInteractions) Component(kind sdk.ComponentKind, key string) (RegisteredComponent, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.components[ComponentID{kind, key}]
	return c, ok
}

// Components returns the registered component ids, sorted by kind and key.
func (f *FakeInteractions) Components() []ComponentID {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := slices.Collect(maps.Keys(f.components))
	slices.SortFunc(ids, func(a, b ComponentID) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key))
	})
	return ids
}

// GuildCommands returns the command set staged for a guild.
func (f *FakeInteractions) GuildCommands(guildID uint64) []sdk.GuildCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.guildCommands[guildID])
}

// Gate is the host's check before a command, autocomplete or component
// handler runs:
// the caller's trust tier (Trust) and the module's guild predicate
// (Active, nil meaning every guild).
type Gate struct {
	Trust  sdk.Trust
	Active func(guildID uint64) bool
}

// SetGate makes RunCommand, RunAutocomplete and Press apply the host's
// gate; NewRuntime sets it with the runtime's trust lookup and module
// predicate.
func (f *FakeInteractions) SetGate(g *Gate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = g
}

// Replies the host sends instead of running a handler.
const (
	ReplyStaffOnly       = "Staff only."
	ReplyNotAllowed      = "Not allowed."
	ReplyControlInactive = "This control is no longer active."
	ReplyControlExpired  = "This control has expired."
	ReplyCommandFailed   = "Something went wrong running that command."
	ReplyControlFailed   = "Something went wrong handling that control."
)

// allowed applies the gate; a refusal replies ephemerally as the host does
// and reports false.
func (f *FakeInteractions) allowed(ctx context.Context, in sdk.Interaction, minTier sdk.TrustTier, guildRequired bool) (bool, error) {
	ok, err := f.admits(ctx, in, minTier, guildRequired)
	if ok || err != nil {
		return ok, err
	}
	msg := ReplyNotAllowed
	if minTier == sdk.TierStaff {
		msg = ReplyStaffOnly
	}
	return false, in.Respond(ctx, sdk.Response{Content: msg, Ephemeral: true})
}

// admits is the gate itself, without a reply: a guild when required, the
// module predicate, the caller's tier.
func (f *FakeInteractions) admits(ctx context.Context, in sdk.Interaction, minTier sdk.TrustTier, guildRequired bool) (bool, error) {
	f.mu.Lock()
	g := f.gate
	f.mu.Unlock()
	if g == nil {
		return true, nil
	}
	if in.GuildID() == 0 && guildRequired {
		return false, nil
	}
	// Outside a guild there is no guild predicate to apply, but the
	// caller's tier still is: a staff-only control must not open up in a DM.
	if in.GuildID() != 0 && g.Active != nil && !g.Active(in.GuildID()) {
		return false, nil
	}
	tier := sdk.TierMember
	if g.Trust != nil {
		t, err := g.Trust.Tier(ctx, in.GuildID(), in.UserID())
		if err != nil {
			return false, err
		}
		tier = t
	}
	return tier >= minTier, nil
}

// RunCommand dispatches a command by qualified name the way the host does:
// a global command, or a guild command staged (ReplaceGuildCommands) for
// the interaction's guild — the same path for both. With a gate set, a
// caller outside a guild, in a guild where the module is inactive, or below
// the command's min tier gets an ephemeral "Staff only." / "Not allowed."
// and the handler does not run. A handler error is answered with the
// host's generic ephemeral reply and returned.
func (f *FakeInteractions) RunCommand(ctx context.Context, qualified string, in sdk.Interaction) error {
	c, ok := f.resolve(qualified, in.GuildID())
	if !ok {
		return notRegistered(qualified, in.GuildID())
	}
	if ok, err := f.allowed(ctx, in, c.Spec.EffectiveMinTier(), true); !ok || err != nil {
		return err
	}
	if err := c.Handler(ctx, in); err != nil {
		_ = in.Respond(ctx, sdk.Response{Content: ReplyCommandFailed, Ephemeral: true})
		return err
	}
	return nil
}

func notRegistered(qualified string, guildID uint64) error {
	msg := "command " + hostkit.Repr(qualified) + " is not registered"
	if guildID != 0 {
		msg += " globally or in guild " + strconv.FormatUint(guildID, 10)
	}
	return &sdk.ModuleContractError{Message: msg}
}

// MaxAutocompleteChoices is how many suggestions the host passes on.
const MaxAutocompleteChoices = 25

// RunAutocomplete asks a command's autocomplete handler for suggestions for
// option, as Discord does while the user types current. The command is
// resolved like RunCommand's (global, or staged for the interaction's
// guild) and goes through the same gate with the command's min tier: a
// caller the gate refuses gets no suggestions and no reply, and the handler
// does not run. The option must be declared with Autocomplete. At most
// MaxAutocompleteChoices suggestions are returned; a handler error returns
// none and the error (the host logs it and shows none).
func (f *FakeInteractions) RunAutocomplete(ctx context.Context, qualified, option, current string, in sdk.Interaction) ([]sdk.Choice, error) {
	c, ok := f.resolve(qualified, in.GuildID())
	if !ok {
		return nil, notRegistered(qualified, in.GuildID())
	}
	declared := slices.ContainsFunc(c.Spec.Options, func(o sdk.CommandOption) bool { return o.Name == option && o.Autocomplete })
	if !declared || c.Autocomplete == nil {
		return nil, &sdk.ModuleContractError{Message: "command " + hostkit.Repr(qualified) + " option " + hostkit.Repr(option) + " has no autocomplete"}
	}
	if ok, err := f.admits(ctx, in, c.Spec.EffectiveMinTier(), true); !ok || err != nil {
		return nil, err
	}
	choices, err := c.Autocomplete(ctx, in, option, current)
	if err != nil {
		return nil, err
	}
	return slices.Clone(choices[:min(len(choices), MaxAutocompleteChoices)]), nil
}

// Press routes a component interaction by its custom id, as the host's
// dispatcher does: the id must be this module's (m:<module>:<key>…); an
// unregistered key is answered "This control is no longer active."; a
// registration past its ExpiresAfter is removed and answered "This control
// has expired."; with a
// gate set, a clicker below the component's min tier is refused like a
// command caller. A handler error is answered with the host's generic
// ephemeral reply and returned.
func (f *FakeInteractions) Press(ctx context.Context, kind sdk.ComponentKind, in sdk.Interaction) error {
	id, ok := sdk.ParseCustomID(in.CustomID())
	if !ok || id.Module != f.module {
		return &sdk.ModuleContractError{Message: "custom id " + hostkit.Repr(in.CustomID()) + " does not belong to module " + hostkit.Repr(f.module)}
	}
	c, ok := f.Component(kind, id.Key)
	if !ok {
		return in.Respond(ctx, sdk.Response{Content: ReplyControlInactive, Ephemeral: true})
	}
	if f.expired(ComponentID{kind, id.Key}, c) {
		return in.Respond(ctx, sdk.Response{Content: ReplyControlExpired, Ephemeral: true})
	}
	if ok, err := f.allowed(ctx, in, c.MinTier(), false); !ok || err != nil {
		return err
	}
	if err := c.Handler(ctx, in); err != nil {
		_ = in.Respond(ctx, sdk.Response{Content: ReplyControlFailed, Ephemeral: true})
		return err
	}
	return nil
}

// expired removes and reports a registration past its expiry (expiry is per
// registration, not per message, as in the host).
func (f *FakeInteractions) expired(id ComponentID, c RegisteredComponent) bool {
	if c.Options.ExpiresAfter <= 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.now().Before(c.RegisteredAt.Add(c.Options.ExpiresAfter)) {
		return false
	}
	if cur, ok := f.components[id]; ok && cur.RegisteredAt.Equal(c.RegisteredAt) {
		delete(f.components, id)
	}
	return true
}
