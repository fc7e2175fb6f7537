package admin

// The Worldtree page's data: several client calls gathered concurrently, each section with its
// own error. It lives here, not in app/worldtree (the client alone) nor in app/settings (what the
// operator stores): it is this page's view of the server, and keeping it beside the page keeps
// worldtreePage a thin handler that calls loadWorldtreeOverview once and maps the result.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kimiapp/kimi/app/worldtree"
)

// worldtreeMaxPersonaAgents bounds how many agents the overview reads persona state for, so a server
// with many agents cannot turn one page view into hundreds of requests.
const worldtreeMaxPersonaAgents = 25

// worldtreePersonaFetchers is how many persona-state requests the overview runs at once.
const worldtreePersonaFetchers = 4

// overviewOptions selects what loadWorldtreeOverview gathers.
type overviewOptions struct {
	// Cursor is the session page to show; "" is the first page.
	Cursor string
	// Limit is the session page size, 1..worldtree.MaxSessionsLimit; 0 leaves it to the server.
	Limit int
	// IncludeArchived lists archived sessions too.
	IncludeArchived bool
	// MaxPersonaAgents bounds the persona-state reads (0 = worldtreeMaxPersonaAgents; negative =
	// none). Agents beyond it are listed without persona state.
	MaxPersonaAgents int
}

// overviewIdentity is the typed view of GET /me.
type overviewIdentity struct {
	UserID   string
	Tier     string
	KeyID    string
	KeyLabel string
	Scopes   []string
}

// HasScope reports whether the key has scope.
func (i overviewIdentity) HasScope(scope string) bool { return slices.Contains(i.Scopes, scope) }

// overviewTemplate is one entry of GET /capabilities "ephemeral_templates".
type overviewTemplate struct {
	Name                 string
	AllowedModels        []string
	DefaultModel         string
	SystemPromptMaxBytes int
}

// padReading is a pleasure/arousal/dominance reading.
type padReading struct {
	Pleasure, Arousal, Dominance float64
}

// personaReading is the typed view of an agent's persona snapshot; State keeps the snapshot verbatim.
type personaReading struct {
	State           map[string]any
	PAD             *padReading // nil when the snapshot has no well-formed pad object
	BaselinePAD     *padReading
	DominantEmotion string
	LastUpdatedAt   string
}

// agentOverview is one agent with its persona state where configured.
type agentOverview struct {
	Agent worldtree.AgentInfo
	// Persona is the live persona state; nil when not configured, not read, or failed.
	Persona *personaReading
	// PersonaConfigured is false when Worldtree answered persona_not_configured.
	PersonaConfigured bool
	// PersonaSkipped is true when the agent was beyond overviewOptions.MaxPersonaAgents.
	PersonaSkipped bool
	// PersonaErr is the failure of the persona read (not persona_not_configured); show it with
	// worldtree.DescribeError.
	PersonaErr error
}

// overviewData is everything the admin Worldtree page shows. Each section carries its own error
// so one failing endpoint (a missing scope, say) does not blank the page.
type overviewData struct {
	Me       map[string]any
	Identity overviewIdentity
	MeErr    error

	Capabilities    map[string]any
	Templates       []overviewTemplate // sorted by name
	CapabilitiesErr error

	Agents    []agentOverview
	AgentsErr error

	Sessions    worldtree.SessionPage
	SessionsErr error
}

// loadWorldtreeOverview gathers /me, /capabilities, the agents with their persona state, and one session page,
// concurrently. Section failures are reported in the data; the error is non-nil only for invalid
// options or a done ctx.
func loadWorldtreeOverview(ctx context.Context, c *worldtree.Client, opts overviewOptions) (overviewData, error) {
	var data overviewData
	if c == nil {
		return data, fmt.Errorf("admin: worldtree overview: %w: client is nil", worldtree.ErrInvalidArgument)
	}
	var listOpts []worldtree.ListSessionsOption
	if opts.IncludeArchived {
		listOpts = append(listOpts, worldtree.WithIncludeArchived())
	}
	if opts.Cursor != "" {
		listOpts = append(listOpts, worldtree.WithCursor(opts.Cursor))
	}
	if opts.Limit != 0 {
		if opts.Limit < 1 || opts.Limit > worldtree.MaxSessionsLimit {
			return data, fmt.Errorf("admin: worldtree overview: %w: limit must be 1..%d, got %d",
				worldtree.ErrInvalidArgument, worldtree.MaxSessionsLimit, opts.Limit)
		}
		listOpts = append(listOpts, worldtree.WithLimit(opts.Limit))
	}
	maxPersona := opts.MaxPersonaAgents
	if maxPersona == 0 {
		maxPersona = worldtreeMaxPersonaAgents
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		data.Me, data.MeErr = c.GetMe(ctx)
		if data.MeErr == nil {
			data.Identity = identityFromMe(data.Me)
		}
	})
	wg.Go(func() {
		data.Capabilities, data.CapabilitiesErr = c.GetCapabilities(ctx)
		if data.CapabilitiesErr == nil {
			data.Templates = templatesFromCapabilities(data.Capabilities)
		}
	})
	wg.Go(func() {
		data.Sessions, data.SessionsErr = c.ListSessions(ctx, listOpts...)
	})
	wg.Go(func() {
		var agents []worldtree.AgentInfo
		agents, data.AgentsErr = c.ListAgents(ctx)
		if data.AgentsErr == nil {
			data.Agents = readPersonas(ctx, c, agents, maxPersona)
		}
	})
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return data, fmt.Errorf("admin: worldtree overview: %w", err)
	}
	return data, nil
}

// personathe overview reads persona state for the first limit agents, a few at a time. Once the key is
// known to lack persona.read, the remaining reads are not sent: they would all be denied.
func readPersonas(ctx context.Context, c *worldtree.Client, agents []worldtree.AgentInfo, limit int) []agentOverview {
	out := make([]agentOverview, len(agents))
	var (
		mu     sync.Mutex
		denied error
		wg     sync.WaitGroup
		sem    = make(chan struct{}, worldtreePersonaFetchers)
	)
	for i, a := range agents {
		out[i] = agentOverview{Agent: a, PersonaConfigured: true}
		if i >= limit {
			out[i].PersonaSkipped = true
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			mu.Lock()
			prior := denied
			mu.Unlock()
			if prior != nil {
				out[i].PersonaErr = prior
				return
			}
			state, err := c.GetPersonaState(ctx, a.AgentID)
			var notConfigured *worldtree.PersonaNotConfiguredError
			var scope *worldtree.AuthScopeDeniedError
			switch {
			case err == nil:
				out[i].Persona = newPersonaReading(state)
			case errors.As(err, &notConfigured):
				out[i].PersonaConfigured = false
			default:
				out[i].PersonaErr = err
				if errors.As(err, &scope) {
					mu.Lock()
					denied = err
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return out
}

// identityFromMe reads the typed fields of a /me answer; absent or mistyped fields stay zero.
func identityFromMe(me map[string]any) overviewIdentity {
	return overviewIdentity{
		UserID:   stringField(me, "user_id"),
		Tier:     stringField(me, "tier"),
		KeyID:    stringField(me, "key_id"),
		KeyLabel: stringField(me, "key_label"),
		Scopes:   stringList(me["scopes"]),
	}
}

// templatesFromCapabilities reads "ephemeral_templates", sorted by name.
func templatesFromCapabilities(caps map[string]any) []overviewTemplate {
	raw, _ := caps["ephemeral_templates"].(map[string]any)
	out := make([]overviewTemplate, 0, len(raw))
	for name, v := range raw {
		m, _ := v.(map[string]any)
		t := overviewTemplate{
			Name:          name,
			DefaultModel:  stringField(m, "default_model"),
			AllowedModels: stringList(m["allowed_models"]),
		}
		if n, ok := m["system_prompt_max_bytes"].(float64); ok {
			t.SystemPromptMaxBytes = int(n)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b overviewTemplate) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// personaView reads the typed fields of a persona snapshot.
func newPersonaReading(state map[string]any) *personaReading {
	return &personaReading{
		State:           state,
		PAD:             padFromAny(state["pad"]),
		BaselinePAD:     padFromAny(state["baseline_pad"]),
		DominantEmotion: stringField(state, "dominant_emotion"),
		LastUpdatedAt:   stringField(state, "last_updated_at"),
	}
}

// padFromAny reads {"pleasure": p, "arousal": a, "dominance": d}; anything else is nil.
func padFromAny(v any) *padReading {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	p, ok1 := m["pleasure"].(float64)
	a, ok2 := m["arousal"].(float64)
	d, ok3 := m["dominance"].(float64)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	return &padReading{Pleasure: p, Arousal: a, Dominance: d}
}

// stringList returns the strings of a JSON array, skipping other elements; nil for anything
// that is not an array.
func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, s := range list {
		if str, ok := s.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

// stringField returns m[key] if it is a string, else "".
func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
