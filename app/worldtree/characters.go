package worldtree

import (
	"context"
	"fmt"
	"net/http"
)

// ListCharacterModels returns the models usable by transient characters verbatim
// (GET /models/available-for-characters, 200; needs character.read), e.g.
// {"items": [{"name": "fast", "thinking": false}]}.
func (c *Client) ListCharacterModels(ctx context.Context) (map[string]any, error) {
	return c.getObject(ctx, call{
		action: "list character models", method: http.MethodGet,
		segments: []string{"models", "available-for-characters"},
	}, http.StatusOK, nil)
}

// createCharacterBody is the exact POST /characters body: "state" is always sent, null when nil.
type createCharacterBody struct {
	Character map[string]any `json:"character"`
	State     map[string]any `json:"state"`
}

// CreateCharacter creates a transient character (POST /characters, 201; needs character.write)
// and returns the server's answer verbatim, e.g. {"character_id": "char_x", "ttl_expires_at":
// "..."}. A nil state is sent as null. Any other status (403 without the scope) is a
// *SessionAPIFailedError.
func (c *Client) CreateCharacter(ctx context.Context, character, state map[string]any) (map[string]any, error) {
	const action = "create character"
	if character == nil {
		return nil, fmt.Errorf("worldtree: %s: %w: character is nil", action, ErrInvalidArgument)
	}
	return c.getObject(ctx, call{
		action: action, method: http.MethodPost, segments: []string{"characters"},
		body: createCharacterBody{Character: character, State: state},
	}, http.StatusCreated, nil)
}

// GetCharacterState returns a character's live state verbatim (GET /characters/{id}/state, 200),
// e.g. {"schema_version": "1", "pad": [0.4, 0.1, -0.2]} (pad is an array here).
func (c *Client) GetCharacterState(ctx context.Context, characterID string) (map[string]any, error) {
	const action = "get character state"
	if err := requireID(action, "character id", characterID); err != nil {
		return nil, err
	}
	return c.getObject(ctx, call{
		action: action, method: http.MethodGet, segments: []string{"characters", characterID, "state"},
	}, http.StatusOK, nil)
}

// DeleteCharacter deletes a transient character (DELETE /characters/{id}, 204). Any other status
// is a *SessionAPIFailedError.
func (c *Client) DeleteCharacter(ctx context.Context, characterID string) error {
	const action = "delete character"
	if err := requireID(action, "character id", characterID); err != nil {
		return err
	}
	return c.expectNoContent(ctx, call{
		action: action, method: http.MethodDelete, segments: []string{"characters", characterID},
	}, http.StatusNoContent)
}
