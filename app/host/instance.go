package host

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/modules/sdk"
)

// instance is one incarnation of a module, from create to close. Every
// port view holds it and refuses to act once it is revoked.
type instance struct {
	h        *Host
	name     string
	spec     sdk.Spec
	log      *slog.Logger
	settings sdk.Settings
	ctx      context.Context
	cancel   context.CancelFunc
	mod      sdk.Module
	storage  storagePort
	events   eventsPort
	http     *revocableHTTP
	jobs     *scheduler.Binding
	results  *revocableResults // nil unless the module has the port

	closedFlag  atomic.Bool
	runningFlag atomic.Bool
	starting    atomic.Bool

	cbMu     sync.Mutex
	cbNext   int
	onChange map[int]func(context.Context, uint64)

	changeMu      sync.Mutex
	changeQueue   []func()
	changeRunning bool
}

func (h *Host) newInstance(spec sdk.Spec, settings sdk.Settings) *instance {
	ctx, cancel := context.WithCancel(withModule(context.Background(), spec.Name))
	return &instance{h: h, name: spec.Name, spec: spec, log: h.moduleLogger(spec.Name), settings: settings,
		ctx: ctx, cancel: cancel, onChange: map[int]func(context.Context, uint64){}}
}

func (i *instance) revoked() bool { return i.closedFlag.Load() }

// running is true from a successful Start until Close begins.
func (i *instance) running() bool { return i.runningFlag.Load() && !i.closedFlag.Load() }

func (i *instance) revokedErr(port string) error { return &errRevoked{module: i.name, port: port} }

// guildActive is the module's guild predicate: the guild is active and,
// for a module with guild settings, its settings there are valid.
func (i *instance) guildActive(guildID uint64) bool {
	g := i.h.guilds
	if g == nil || i.revoked() {
		return false
	}
	if i.spec.GuildSettings != nil {
		return g.ModuleEnabled(guildID, i.name)
	}
	return g.Active(guildID)
}

func (i *instance) addOnChange(fn func(context.Context, uint64)) sdk.Registration {
	i.cbMu.Lock()
	defer i.cbMu.Unlock()
	if i.revoked() || fn == nil {
		return registration(func() {})
	}
	id := i.cbNext
	i.cbNext++
	i.onChange[id] = fn
	return once(func() {
		i.cbMu.Lock()
		delete(i.onChange, id)
		i.cbMu.Unlock()
	})
}

func (i *instance) onChangeFuncs() []func(context.Context, uint64) {
	i.cbMu.Lock()
	defer i.cbMu.Unlock()
	out := make([]func(context.Context, uint64), 0, len(i.onChange))
	for k := 0; k < i.cbNext; k++ {
		if fn, ok := i.onChange[k]; ok {
			out = append(out, fn)
		}
	}
	return out
}

// loadContext is what Create receives.
type loadContext struct {
	inst *instance
	reg  *loadRegistry
	h    *Host
}

var _ sdk.LoadContext = (*loadContext)(nil)

func (c *loadContext) ModuleName() string                     { return c.inst.name }
func (c *loadContext) Capabilities() sdk.Capabilities         { return c.h.capabilities() }
func (c *loadContext) Settings() sdk.Settings                 { return c.inst.settings }
func (c *loadContext) Tools() sdk.ToolRegistry                { return c.reg }
func (c *loadContext) Logger() *slog.Logger                   { return c.inst.log }
func (c *loadContext) RegisterToolLabels(l map[string]string) { c.h.tools.labels(c.inst, l) }
func (c *loadContext) DeclareSurfaceTools(surface string, names []string) {
	c.h.tools.declareSurface(c.inst.name, surface, names)
}
