package worldtree

import (
	"context"
	"fmt"
	"net/http"
)

// PersonaReadScope is the API key scope GetPersonaState needs.
const PersonaReadScope = "persona.read"

// ListAgents lists the agents the key can see (GET /agents, 200), in server order. The body is a
// bare JSON array; [] is an empty result. Any other status is a *SessionAPIFailedError.
func (c *Client) ListAgents(ctx context.Context) ([]AgentInfo, error) {
	const action = "list agents"
	cl := call{action: action, method: http.MethodGet, segments: []string{"agents"}}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK {
		return nil, c.failure(cl, r, nil)
	}
	var wire *[]wireAgent
	if err := c.decodeJSON(cl, r, &wire); err != nil {
		return nil, err
	}
	if wire == nil {
		return nil, fmt.Errorf("worldtree: %s: %w: expected a JSON array, got null", action, ErrMalformedResponse)
	}
	agents := make([]AgentInfo, 0, len(*wire))
	for i, w := range *wire {
		a, err := w.info(i, c.redactor(cl))
		if err != nil {
			return nil, fmt.Errorf("worldtree: %s: %w", action, err)
		}
		agents = append(agents, a)
	}
	return agents, nil
}

// GetPersonaState returns the agent's live persona snapshot verbatim
// (GET /agents/{id}/persona_state, 200; Worldtree #204, v0.28.0): pad, dominant_emotion,
// emotions_active, baseline_pad, mood_drift, last_updated_at.
//
// Errors: 404 persona_not_configured -> *PersonaNotConfiguredError; 404 agent_not_available ->
// *AgentNotAvailableError; 403 auth_scope_denied -> *AuthScopeDeniedError{Scope:
// "persona.read"}; anything else, including a 404 with another code -> *SessionAPIFailedError.
func (c *Client) GetPersonaState(ctx context.Context, agentID string) (map[string]any, error) {
	const action = "get persona state"
	if err := requireID(action, "agent id", agentID); err != nil {
		return nil, err
	}
	return c.getObject(ctx, call{
		action: action, method: http.MethodGet, segments: []string{"agents", agentID, "persona_state"},
	}, http.StatusOK, func(status int, info errorInfo) error {
		switch {
		case status == http.StatusNotFound && info.code == "persona_not_configured":
			return &PersonaNotConfiguredError{AgentID: agentID}
		case status == http.StatusNotFound && info.code == "agent_not_available":
			return &AgentNotAvailableError{AgentID: agentID}
		case status == http.StatusForbidden && info.code == "auth_scope_denied":
			return &AuthScopeDeniedError{Scope: PersonaReadScope}
		}
		return nil
	})
}

// GetMe returns the caller's identity verbatim (GET /me, 200): user_id, scopes, tier, and for a
// real key key_id and key_label (omitted, not null, in anonymous dev mode). A 401 is a
// *SessionAPIFailedError.
func (c *Client) GetMe(ctx context.Context) (map[string]any, error) {
	return c.getObject(ctx, call{action: "get me", method: http.MethodGet, segments: []string{"me"}},
		http.StatusOK, nil)
}

// GetCapabilities returns the server capabilities verbatim (GET /capabilities, 200), e.g.
// {"ephemeral_templates": {"echo": {...}}}. Any other status is a *SessionAPIFailedError.
func (c *Client) GetCapabilities(ctx context.Context) (map[string]any, error) {
	return c.getObject(ctx, call{action: "get capabilities", method: http.MethodGet, segments: []string{"capabilities"}},
		http.StatusOK, nil)
}
