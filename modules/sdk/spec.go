package sdk

import (
	"context"
	"database/sql"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/kimiapp/kimi/modules/sdk/internal/settingvalue"
)

// Spec declares a module: who it is, what it needs and what it may do. A
// custom build passes specs to the appliance; preflight validates them with
// Spec.Validate before any module code runs.
//
// Treat a Spec as an immutable value: the host copies what it keeps.
type Spec struct {
	// Name matches `[a-z][a-z0-9_-]{0,63}` and is not "discord" or
	// "proposals" after "-"→"_". It prefixes tables and the event namespace.
	Name string
	// Version is free-form and displayed in the admin UI.
	Version string
	// Description is one or two sentences for the operator, shown under
	// the module's name on the admin's module list and page: what the
	// module does in a server. Optional ("" shows nothing, so a spec
	// written before the field existed is unchanged), plain text of at most
	// MaxDescriptionLen characters.
	Description string
	// APIVersion must equal sdk.APIVersion (2). Keep it a literal in your
	// spec so a future incompatible SDK fails preflight loudly.
	APIVersion int
	// Create wires the module from its load context. It must be pure
	// wiring: register tools and labels here, touch no ports.
	Create func(LoadContext) (Module, error)
	// Dependencies are module names that must be active and start first.
	Dependencies []string
	// Settings declares deployment settings (nil: none).
	Settings *SettingsDefinition
	// RequiresCapabilities must all be advertised, or startup aborts.
	RequiresCapabilities []string
	// ActivationCapabilities must all be advertised, or the module is
	// disabled (not created, not migrated) without aborting startup.
	ActivationCapabilities []string
	// Permissions are the module's declared Discord actions, event topics,
	// HTTP hosts and escape hatches; the ports enforce them.
	Permissions Permissions
	// GuildSettings declares per-guild settings (nil: none).
	GuildSettings *GuildSettingsSchema
	// Provides lists services this module provides via Runtime.Services.
	Provides []ServiceDeclaration
	// Consumes lists services this module consumes; each provider must be
	// in Dependencies.
	Consumes []ServiceRequirement
	// Tools names the LLM tools the module registers in Create: a module
	// owns the names it declares, registering any other name fails, and
	// two selected modules declaring one name both fail preflight.
	Tools []string
	// Commands names the top-level slash commands and command groups the
	// module registers with Interactions.AddCommand ("kudos" for
	// /kudos give), owned as Tools are. Per-guild command sets
	// (ReplaceGuildCommands) need no declaration, but may not use a name
	// another selected module declares.
	Commands []string
}

// Module is a created module. The host runs Migrations (all modules, in
// dependency order) before any Start, calls Start once with the runtime
// context, and Close once at shutdown (newest first), also after a failed
// Start of a later module.
type Module interface {
	// Migrations returns the module's named, forward-only migrations in
	// order. Released names and positions are immutable. May be empty.
	Migrations() []Migration
	// Start registers handlers, jobs and subscriptions. It must return
	// within the start timeout (60 s) and honour ctx cancellation.
	Start(ctx context.Context, rt *Runtime) error
	// Close releases what Start acquired. It must tolerate a Start that is
	// still running after cancellation, and return within 15 s.
	Close(ctx context.Context) error
}

// Migration is one named, forward-only schema step. Each step runs in its
// own write transaction together with its ledger row.
type Migration struct {
	// Name is unique within the module, non-empty and never changed after
	// release (for example "001_create_kudos").
	Name string
	// Up applies the step using mc.Tx; create tables via mc.Table.
	Up func(ctx context.Context, mc MigrationContext) error
}

// MigrationContext is what a migration step receives.
type MigrationContext struct {
	// Tx is the step's transaction; the host commits it with the ledger row.
	// It reaches only the module's own tables. Unlike WriteTx's, it may
	// ALTER TABLE them (add, rename or drop a column, rename a table within
	// the module's prefix), one statement at a time as SQLite would run a
	// multi-statement string; a Prepare takes one statement. Reading
	// sqlite_master, writable_schema, altering another module's or the
	// core's tables stay refused, and the step is rolled back when it
	// changed a schema object that is not the module's own (a table renamed
	// out of its prefix).
	Tx *sql.Tx
	// Module is the migrating module's name.
	Module string
}

// Table returns the quoted physical name of a logical table (see hostkit.TableName).
// It panics with a *ModuleContractError on an invalid name: table names are
// constants in a module's source, so this is a programming error.
func (mc MigrationContext) Table(name string) string { return mustTableName(mc.Module, name) }

// Permissions are a module's declarations, enforced at the ports and shown
// to the operator. Modules are trusted in-process code: this is a contract
// and an audit surface, not a sandbox.
type Permissions struct {
	// DiscordActions the module may call (see AllDiscordActions).
	DiscordActions []DiscordAction
	// EventTopics from other namespaces the module may subscribe to:
	// "<namespace>.<name>" or "<namespace>.*". Never the module's own.
	EventTopics []string
	// HTTPHosts the module may reach.
	HTTPHosts []HostRule
	// OverrideTargetPolicy skips the trust-tier target policy for ban, kick
	// and timeout (the bot, the actor and bots stay protected). Requires one
	// of those actions. An escape hatch.
	OverrideTargetPolicy bool
	// RawDiscord grants Runtime.RawDiscord. An escape hatch.
	RawDiscord bool
	// RawStorage grants Runtime.RawStorage. An escape hatch.
	RawStorage bool
	// ToolFiles grants ToolContext.Files (capability tools.files.v1, SDK 2.2).
	ToolFiles bool
	// ScheduledResults names the scheduled-result subscriptions the module
	// may register (capability scheduled_results.v1, SDK 2.4); each 1–64 of
	// `[a-z0-9_]`, unique.
	ScheduledResults []string
}

// Allows reports whether action is declared.
func (p Permissions) Allows(action DiscordAction) bool {
	return slices.Contains(p.DiscordActions, action)
}

// AllowsScheduledResult reports whether name is a declared subscription.
func (p Permissions) AllowsScheduledResult(name string) bool {
	return slices.Contains(p.ScheduledResults, name)
}

// EscapeHatches lists the escape hatches the permissions grant
// ("override_target_policy", "raw_bot", "raw_storage"), for display.
func (p Permissions) EscapeHatches() []string {
	var out []string
	if p.OverrideTargetPolicy {
		out = append(out, "override_target_policy")
	}
	if p.RawDiscord {
		out = append(out, "raw_bot")
	}
	if p.RawStorage {
		out = append(out, "raw_storage")
	}
	return out
}

// validatePermissions checks permissions for module. Messages:
// "module 'm' declares unknown Discord actions ['x']",
// "module 'm' overrides the target policy without a targeted action",
// "module 'm' need not declare its own topic 't'" (an EventTopicError),
// topic and host-rule errors, and
// "scheduled-result subscription names must be unique and valid".
func validatePermissions(module string, p Permissions) error {
	var unknown []string
	for _, a := range p.DiscordActions {
		if !a.Valid() && !slices.Contains(unknown, string(a)) {
			unknown = append(unknown, string(a))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return contractErrorf("module %s declares unknown Discord actions %s", pyRepr(module), pyReprStrings(unknown))
	}
	if p.OverrideTargetPolicy && !slices.ContainsFunc(p.DiscordActions, DiscordAction.Targeted) {
		return contractErrorf("module %s overrides the target policy without a targeted action", pyRepr(module))
	}
	for _, topic := range p.EventTopics {
		namespace, _, err := splitTopic(topic, true)
		if err != nil {
			return err
		}
		if namespace == tablePrefix(module) {
			return newEventTopicError(topic, "module %s need not declare its own topic %s", pyRepr(module), pyRepr(topic))
		}
	}
	for _, rule := range p.HTTPHosts {
		if err := validateHostRule(rule); err != nil {
			return err
		}
	}
	seen := make(map[string]bool, len(p.ScheduledResults))
	for _, name := range p.ScheduledResults {
		if seen[name] || !resultNameRE.MatchString(name) {
			return contractErrorf("scheduled-result subscription names must be unique and valid")
		}
		seen[name] = true
	}
	return nil
}

// Registration is a handle on something a port registered (a subscription,
// command, component, provided service or callback). Close removes it; it
// is idempotent and safe for concurrent use.
type Registration interface {
	// Close removes the registration; later calls do nothing.
	Close()
}

// Runtime is the runtime context a started module receives: one per module,
// built by the host, read-only for the module. Optional ports are nil when
// the module did not declare or the host cannot grant them.
type Runtime struct {
	// ModuleName is the module's name.
	ModuleName string
	// IsGuildActive reports whether the bot is active in a guild and, for a
	// module with guild settings, whether its settings there are valid.
	// Events, Discord actions, interactions and tools use this predicate.
	IsGuildActive func(guildID uint64) bool
	// Capabilities advertised by the host.
	Capabilities Capabilities
	// Logger is the module's named logger.
	Logger *slog.Logger

	// Events publishes under the module's namespace and subscribes to
	// declared topics.
	Events EventBus
	// Scheduler runs durable jobs.
	Scheduler Scheduler
	// Storage is the module's view of the database.
	Storage Storage
	// Health reports the module's state.
	Health Health
	// Discord performs the declared Discord actions.
	Discord DiscordActions
	// Interactions registers commands and components.
	Interactions Interactions
	// HTTP reaches the declared hosts.
	HTTP HTTP
	// Services provides and consumes declared services.
	Services Services
	// Trust looks up members' trust tiers.
	Trust Trust
	// GuildSettings is nil unless Spec.GuildSettings is declared.
	GuildSettings GuildSettings
	// Proposals is nil when the host has no proposal service.
	Proposals Proposals
	// ScheduledResults is nil unless Permissions.ScheduledResults is set and
	// the host advertises scheduled_results.v1 (SDK 2.4).
	ScheduledResults ScheduledResults
	// RawDiscord is the host's Discord session (a *discordgo.Session) iff
	// Permissions.RawDiscord. An escape hatch; nil otherwise.
	RawDiscord any
	// RawStorage is the core database iff Permissions.RawStorage. An
	// escape hatch; nil otherwise.
	RawStorage *sql.DB
	// Clock is the host's clock, the one the Scheduler measures jobs
	// against: nil means the wall clock. Read it through Now.
	Clock func() time.Time
}

// Now is the host's present (Clock; the wall clock when the host sets
// none): a module that schedules a job relative to now (RunAt at
// rt.Now().Add(d)) or keeps time windows reads it rather than time.Now, so
// that a host with a controlled clock (kimitest's, sdktest's) moves it
// too.
func (rt *Runtime) Now() time.Time {
	if rt == nil || rt.Clock == nil {
		return time.Now()
	}
	return rt.Clock()
}

// GuildActive calls IsGuildActive, treating a nil predicate as "no guild".
func (rt *Runtime) GuildActive(guildID uint64) bool {
	return rt != nil && rt.IsGuildActive != nil && rt.IsGuildActive(guildID)
}

// MissingPorts returns the names of the required ports that are nil
// ("events", "scheduler", …), in the reference's order. The host refuses to
// start a module with missing required ports.
func (rt *Runtime) MissingPorts() (missing []string) {
	ports := []struct {
		name string
		nilv bool
	}{
		{"events", rt.Events == nil}, {"scheduler", rt.Scheduler == nil}, {"storage", rt.Storage == nil},
		{"health", rt.Health == nil}, {"discord", rt.Discord == nil}, {"interactions", rt.Interactions == nil},
		{"http", rt.HTTP == nil}, {"services", rt.Services == nil}, {"trust", rt.Trust == nil},
	}
	for _, p := range ports {
		if p.nilv {
			missing = append(missing, p.name)
		}
	}
	return missing
}

// LoadContext is what Spec.Create receives. It offers capabilities,
// settings and the load-time tool registry — no storage, services or
// Discord. Tools() is valid only during Create; registering later fails.
type LoadContext interface {
	// ModuleName is the module being created.
	ModuleName() string
	// Capabilities advertised by the host.
	Capabilities() Capabilities
	// Settings are the module's prepared deployment settings (empty when
	// the spec declares none).
	Settings() Settings
	// Tools is the LLM tool registry, sealed after module loading.
	Tools() ToolRegistry
	// RegisterToolLabels sets progress labels ("Giving kudos") by tool name.
	RegisterToolLabels(labels map[string]string)
	// DeclareSurfaceTools declares which tools an evaluation surface uses.
	DeclareSurfaceTools(surface string, names []string)
	// Logger is the module's named logger.
	Logger() *slog.Logger
}

// Clone returns a deep copy of the spec's declarations (slices and the
// settings and guild-settings definitions), so a host can keep a spec that
// the module's code can no longer change. Functions are shared.
func (s Spec) Clone() Spec {
	c := s
	c.Dependencies = slices.Clone(s.Dependencies)
	c.RequiresCapabilities = slices.Clone(s.RequiresCapabilities)
	c.ActivationCapabilities = slices.Clone(s.ActivationCapabilities)
	c.Permissions = s.Permissions.Clone()
	c.Provides = slices.Clone(s.Provides)
	c.Consumes = slices.Clone(s.Consumes)
	if s.Settings != nil {
		def := *s.Settings
		def.Fields = slices.Clone(s.Settings.Fields)
		for i := range def.Fields {
			def.Fields[i].Choices = slices.Clone(def.Fields[i].Choices)
		}
		c.Settings = &def
	}
	if s.GuildSettings != nil {
		schema := *s.GuildSettings
		schema.Fields = slices.Clone(s.GuildSettings.Fields)
		for i := range schema.Fields {
			schema.Fields[i].Choices = slices.Clone(schema.Fields[i].Choices)
			schema.Fields[i].Default = settingvalue.Clone(schema.Fields[i].Default)
		}
		c.GuildSettings = &schema
	}
	return c
}

// Clone returns a deep copy of the permissions.
func (p Permissions) Clone() Permissions {
	c := p
	c.DiscordActions = slices.Clone(p.DiscordActions)
	c.EventTopics = slices.Clone(p.EventTopics)
	c.ScheduledResults = slices.Clone(p.ScheduledResults)
	c.HTTPHosts = slices.Clone(p.HTTPHosts)
	for i := range c.HTTPHosts {
		c.HTTPHosts[i].Schemes = slices.Clone(p.HTTPHosts[i].Schemes)
		c.HTTPHosts[i].Ports = slices.Clone(p.HTTPHosts[i].Ports)
	}
	return c
}
