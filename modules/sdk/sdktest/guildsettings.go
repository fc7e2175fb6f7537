package sdktest

import (
	"context"
	"slices"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/settingvalue"
)

// FakeGuildSettings is an sdk.GuildSettings over per-guild documents that a
// test sets. With a schema (NewRuntime passes the spec's), Get evaluates
// the stored document exactly as the host does (sdk.EvaluateGuildSettings:
// coercion to typed values, defaults, unknown keys, the cross-field
// validator), so a module sees uint64 ids and defaults as in production;
// without a schema the raw values are returned. Set merges values and then
// calls every OnChange callback synchronously, like an approved proposal;
// ReplaceSilently swaps a whole document and calls none, to test what a
// module that caches settings does when it missed a change.
type FakeGuildSettings struct {
	schema *sdk.GuildSettingsSchema

	mu        sync.Mutex
	documents map[uint64]map[string]any
	errors    map[uint64][]string
	enabled   bool
	active    func(uint64) bool
	callbacks []*func(context.Context, uint64)
	ctx       context.Context // given to callbacks (SetContext); nil: Background
}

var _ sdk.GuildSettings = (*FakeGuildSettings)(nil)

// NewFakeGuildSettings returns settings with no guild documents; schema may
// be nil.
func NewFakeGuildSettings(schema *sdk.GuildSettingsSchema) *FakeGuildSettings {
	return &FakeGuildSettings{
		schema:    schema,
		documents: map[uint64]map[string]any{},
		errors:    map[uint64][]string{},
		enabled:   true,
	}
}

// SetActive sets the guild predicate the port is bound to (the host binds
// it to core's active guilds); nil means every guild is active.
func (g *FakeGuildSettings) SetActive(active func(uint64) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active = active
}

// SetEnabled switches the module on or off in every guild (IsEnabled).
func (g *FakeGuildSettings) SetEnabled(enabled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.enabled = enabled
}

// SetErrors marks a guild's document invalid with errors (none clears
// them), on top of any the schema finds.
func (g *FakeGuildSettings) SetErrors(guildID uint64, errs ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(errs) == 0 {
		delete(g.errors, guildID)
		return
	}
	g.errors[guildID] = slices.Clone(errs)
}

// Set merges values into a guild's document (creating it, even with no
// values) and fires the OnChange callbacks. A nil value removes the key.
func (g *FakeGuildSettings) Set(guildID uint64, values map[string]any) {
	g.mu.Lock()
	doc := g.documents[guildID]
	if doc == nil {
		doc = map[string]any{}
		g.documents[guildID] = doc
	}
	for k, v := range values {
		if v == nil {
			delete(doc, k)
			continue
		}
		doc[k] = settingvalue.Clone(v)
	}
	callbacks := slices.Clone(g.callbacks)
	ctx := g.ctx
	g.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	for _, cb := range callbacks {
		(*cb)(ctx, guildID)
	}
}

// ReplaceSilently replaces a guild's whole document with a copy of doc (keys
// absent from doc are gone; a nil doc removes the document, so the guild has
// none) and calls no OnChange callback. Unlike Set, which merges and fires
// the callbacks as an approved change does, it models a change the module
// was never told about — an edit while it was stopped, a notification
// lost — so a test can prove that a module caching settings either re-reads
// them (Get sees the new document at once) or knowingly serves the stale
// copy until the next Set.
func (g *FakeGuildSettings) ReplaceSilently(guildID uint64, doc map[string]any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if doc == nil {
		delete(g.documents, guildID)
		return
	}
	replaced := make(map[string]any, len(doc))
	for k, v := range doc {
		if v != nil {
			replaced[k] = settingvalue.Clone(v)
		}
	}
	g.documents[guildID] = replaced
}

// Document returns a copy of a guild's stored document.
func (g *FakeGuildSettings) Document(guildID uint64) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	return cloneValues(g.documents[guildID])
}

// cloneValues copies a document, list values included, so callers and the
// fake never share a backing array.
func cloneValues(doc map[string]any) map[string]any {
	if doc == nil {
		return nil
	}
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = settingvalue.Clone(v)
	}
	return out
}

// GuildIDs returns the guilds with a document, active ones only, sorted.
func (g *FakeGuildSettings) GuildIDs() []uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := make([]uint64, 0, len(g.documents))
	for id := range g.documents {
		if g.active == nil || g.active(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Get returns the guild's snapshot. Its revision is the first 16 hex
// digits of the sha256 of the rendered document, "" when none is stored.
func (g *FakeGuildSettings) Get(ctx context.Context, guildID uint64) (sdk.GuildSettingsSnapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.snapshot(guildID), nil
}

func (g *FakeGuildSettings) snapshot(guildID uint64) sdk.GuildSettingsSnapshot {
	doc, stored := g.documents[guildID]
	snap := sdk.GuildSettingsSnapshot{Values: cloneValues(doc)}
	if snap.Values == nil {
		snap.Values = map[string]any{}
	}
	if g.schema != nil {
		result := (*g.schema).Evaluate(doc)
		snap.Values, snap.Errors = result.Values, result.Errors
	}
	snap.Errors = append(snap.Errors, g.errors[guildID]...)
	snap.Valid = len(snap.Errors) == 0
	if stored {
		if text, err := sdk.RenderGuildSettings(doc); err == nil {
			snap.Revision = Revision(text)[:16]
		} else {
			snap.Revision = Revision(err.Error())[:16]
		}
	}
	return snap
}

// IsEnabled reports whether the module is enabled, the guild active and
// its settings valid.
func (g *FakeGuildSettings) IsEnabled(ctx context.Context, guildID uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.enabled || (g.active != nil && !g.active(guildID)) {
		return false
	}
	return g.snapshot(guildID).Valid
}

// OnChange registers fn, called after every Set (never after
// ReplaceSilently).
//
// fn gets the context of SetContext (a Runtime's lifetime, cancelled by its
// Close), or context.Background() when none was set.
func (g *FakeGuildSettings) OnChange(fn func(ctx context.Context, guildID uint64)) sdk.Registration {
	cb := &fn
	g.mu.Lock()
	g.callbacks = append(g.callbacks, cb)
	g.mu.Unlock()
	return newRegistration(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.callbacks = slices.DeleteFunc(g.callbacks, func(c *func(context.Context, uint64)) bool { return c == cb })
	})
}

// SetContext sets the context OnChange callbacks receive (sdktest's Runtime
// passes its lifetime, cancelled by Close).
func (g *FakeGuildSettings) SetContext(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ctx = ctx
}

// Callbacks returns how many OnChange callbacks are registered.
func (g *FakeGuildSettings) Callbacks() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.callbacks)
}
