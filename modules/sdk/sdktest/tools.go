package sdktest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// RecordingToolRegistry is an sdk.ToolRegistry that validates and remembers
// every registration. Seal makes later registrations fail as the host's
// sealed registry does.
type RecordingToolRegistry struct {
	mu     sync.Mutex
	tools  map[string]sdk.Tool
	order  []string
	sealed bool
	// module and declared are set by Declare: then only declared names
	// register, as in the host.
	module   string
	declared []string
	owned    bool
}

var _ sdk.ToolRegistry = (*RecordingToolRegistry)(nil)

// NewRecordingToolRegistry returns an empty, open registry.
func NewRecordingToolRegistry() *RecordingToolRegistry {
	return &RecordingToolRegistry{tools: map[string]sdk.Tool{}}
}

// Declare makes the registry module's, owning only the declared tool
// names (its spec's Tools; NewRuntime calls it): registering any other name
// then fails with "module 'm' did not declare tool 'x'", as in the host.
func (r *RecordingToolRegistry) Declare(module string, names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.module, r.declared, r.owned = module, slices.Clone(names), true
}

// Register validates and records a tool; a duplicate name, an undeclared
// one (after Declare) or a sealed registry fails.
func (r *RecordingToolRegistry) Register(tool sdk.Tool) error {
	if err := hostkit.ValidateTool(tool); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owned {
		if err := hostkit.CheckToolDeclared(r.module, r.declared, tool.Name); err != nil {
			return err
		}
	}
	if r.sealed {
		return hostkit.NewToolsSealed(tool.Name)
	}
	if _, dup := r.tools[tool.Name]; dup {
		return &sdk.ModuleContractError{Message: "tool " + hostkit.Repr(tool.Name) + " is already registered"}
	}
	tool.Parameters = maps.Clone(tool.Parameters)
	tool.GuildIDs = slices.Clone(tool.GuildIDs)
	r.tools[tool.Name] = tool
	r.order = append(r.order, tool.Name)
	return nil
}

// Seal refuses further registrations.
func (r *RecordingToolRegistry) Seal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sealed = true
}

// Tool returns a registered tool.
func (r *RecordingToolRegistry) Tool(name string) (sdk.Tool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tools[name]
	return t, ok
}

// Names returns the registered tool names in registration order.
func (r *RecordingToolRegistry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// Call runs a registered tool's handler with args marshalled to JSON (nil
// means {}), under the caller context tc.
func (r *RecordingToolRegistry) Call(ctx context.Context, name string, args any, tc sdk.ToolContext) (string, error) {
	tool, ok := r.Tool(name)
	if !ok {
		return "", &sdk.ModuleContractError{Message: "tool " + hostkit.Repr(name) + " is not registered"}
	}
	raw := json.RawMessage("{}")
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return "", &sdk.ModuleContractError{Message: "tool arguments must be JSON-serializable: " + err.Error(), Err: err}
		}
		raw = b
	}
	return tool.Handler(ctx, tc, raw)
}

// LoadRecorder is what a fake load context captured during Create.
type LoadRecorder struct {
	Registry *RecordingToolRegistry

	mu       sync.Mutex
	labels   map[string]string
	surfaces map[string][]string
}

// Labels returns the registered tool labels.
func (r *LoadRecorder) Labels() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.labels)
}

// Surfaces returns the declared evaluation surfaces and their tools.
func (r *LoadRecorder) Surfaces() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]string, len(r.surfaces))
	for k, v := range r.surfaces {
		out[k] = slices.Clone(v)
	}
	return out
}

// LoadOptions configure NewLoadContext; zero values mean the reference
// kit's defaults.
type LoadOptions struct {
	// Capabilities default to hostkit.BaselineCapabilities without intents.
	Capabilities *sdk.Capabilities
	// Settings are the prepared settings (empty by default).
	Settings sdk.Settings
	// Registry defaults to a new RecordingToolRegistry.
	Registry *RecordingToolRegistry
	// Logger defaults to one that discards.
	Logger *slog.Logger
}

type fakeLoadContext struct {
	module string
	opts   LoadOptions
	rec    *LoadRecorder
}

var _ sdk.LoadContext = (*fakeLoadContext)(nil)

// NewLoadContext builds an sdk.LoadContext for calling Spec.Create in a
// test, and the recorder of what Create registered.
func NewLoadContext(module string, opts LoadOptions) (sdk.LoadContext, *LoadRecorder) {
	if opts.Registry == nil {
		opts.Registry = NewRecordingToolRegistry()
	}
	if opts.Capabilities == nil {
		caps := sdk.NewCapabilities(hostkit.BaselineCapabilities(), false, false)
		opts.Capabilities = &caps
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rec := &LoadRecorder{Registry: opts.Registry, labels: map[string]string{}, surfaces: map[string][]string{}}
	return &fakeLoadContext{module: module, opts: opts, rec: rec}, rec
}

func (c *fakeLoadContext) ModuleName() string             { return c.module }
func (c *fakeLoadContext) Capabilities() sdk.Capabilities { return *c.opts.Capabilities }
func (c *fakeLoadContext) Settings() sdk.Settings         { return c.opts.Settings }
func (c *fakeLoadContext) Tools() sdk.ToolRegistry        { return c.opts.Registry }
func (c *fakeLoadContext) Logger() *slog.Logger           { return c.opts.Logger }

func (c *fakeLoadContext) RegisterToolLabels(labels map[string]string) {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	maps.Copy(c.rec.labels, labels)
}

func (c *fakeLoadContext) DeclareSurfaceTools(surface string, names []string) {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	c.rec.surfaces[surface] = slices.Clone(names)
}
