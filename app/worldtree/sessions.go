package worldtree

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// MaxSessionsLimit is the largest page size ListSessions accepts. The contract proves only that
// 10 is accepted and 300 refused; 200 is the client's bound until the server's OpenAPI pins it
// (a larger server-side limit is still reachable by paging).
const MaxSessionsLimit = 200

// createSessionParams collects CreateSessionOption values.
type createSessionParams struct {
	endUserID   *string
	bifrost     *BifrostBinding // set by WithBifrost, with consumerKey
	consumerKey string
}

// CreateSessionOption adds an optional part to CreateSession.
type CreateSessionOption func(*createSessionParams)

// WithEndUserID sends "end_user_id" (issue #5). Without it the key is absent from the body; an
// empty id is refused before any request.
func WithEndUserID(id string) CreateSessionOption {
	return func(p *createSessionParams) { p.endUserID = &id }
}

// WithBifrost binds the session to a Bifrost tool server. The request then carries
// "Authorization: Bearer <consumerKey>" instead of the client's default key; an empty
// consumerKey, or one equal to the default key, fails with ErrBifrostConsumerKeyMissing before
// any request.
func WithBifrost(binding BifrostBinding, consumerKey string) CreateSessionOption {
	return func(p *createSessionParams) {
		b := binding // a copy per application: a reused option shares nothing
		p.bifrost, p.consumerKey = &b, consumerKey
	}
}

// createSessionBody is the exact POST /sessions body: end_user_id and bifrost are omitted when
// unset (never null); a binding always carries both of its keys.
type createSessionBody struct {
	AgentID   string          `json:"agent_id"`
	EndUserID *string         `json:"end_user_id,omitempty"`
	Bifrost   *BifrostBinding `json:"bifrost,omitempty"`
}

// CreateSession creates a session with agentID (POST /sessions, 201). The result has the
// create-origin defaults: Name nil, Archived false, Tags empty.
//
// Errors: 404 -> *AgentNotFoundError; 502 with detail.bifrost_error ->
// *BifrostHandshakeFailedError; anything else, including 422
// ephemeral_does_not_accept_bifrost -> *SessionAPIFailedError.
func (c *Client) CreateSession(ctx context.Context, agentID string, opts ...CreateSessionOption) (SessionInfo, error) {
	const action = "create session"
	var p createSessionParams
	for _, opt := range opts {
		if opt != nil {
			opt(&p)
		}
	}
	if agentID == "" {
		return SessionInfo{}, fmt.Errorf("worldtree: %s: %w: agent id is empty", action, ErrInvalidArgument)
	}
	if p.endUserID != nil && *p.endUserID == "" {
		return SessionInfo{}, fmt.Errorf("worldtree: %s: %w: end user id is empty", action, ErrInvalidArgument)
	}
	cl := call{
		action:   action,
		method:   http.MethodPost,
		segments: []string{"sessions"},
		body:     createSessionBody{AgentID: agentID, EndUserID: p.endUserID, Bifrost: p.bifrost},
	}
	if p.bifrost != nil {
		if p.consumerKey == "" {
			return SessionInfo{}, fmt.Errorf("worldtree: %s: %w", action, ErrBifrostConsumerKeyMissing)
		}
		if p.consumerKey == c.key {
			// INV-001: the default key never goes out on a bound create; Bifrost would answer
			// bifrost.auth_rejected anyway.
			return SessionInfo{}, fmt.Errorf("worldtree: %s: %w: the consumer key is the client's default key",
				action, ErrBifrostConsumerKeyMissing)
		}
		if err := checkKey(p.consumerKey); err != nil {
			return SessionInfo{}, fmt.Errorf("worldtree: %s: consumer key: %w", action, err)
		}
		if p.bifrost.EndpointURL == "" {
			return SessionInfo{}, fmt.Errorf("worldtree: %s: %w: bifrost endpoint URL is empty", action, ErrInvalidArgument)
		}
		cl.auth = auth{override: true, key: p.consumerKey}
	}

	r, err := c.do(ctx, cl)
	if err != nil {
		return SessionInfo{}, err
	}
	if r.status != http.StatusCreated {
		return SessionInfo{}, c.failure(cl, r, func(status int, info errorInfo) error {
			switch {
			case status == http.StatusNotFound:
				// The server answers {"error":"unknown_agent_id"}: keyed on status, not code.
				return &AgentNotFoundError{AgentID: agentID}
			case status == http.StatusBadGateway && info.bifrostError != "":
				return &BifrostHandshakeFailedError{BifrostError: info.bifrostError}
			}
			return nil
		})
	}
	var w wireSession
	if err := c.decodeJSON(cl, r, &w); err != nil {
		return SessionInfo{}, err
	}
	s, err := w.info(c.redactor(cl))
	if err != nil {
		return SessionInfo{}, fmt.Errorf("worldtree: %s: %w", action, err)
	}
	// Create-origin defaults (INV-001): whatever the server adds, a new session has no name,
	// is not archived and has no tags.
	s.Name, s.Archived, s.Tags = nil, false, []string{}
	return s, nil
}

// listSessionsParams collects ListSessionsOption values.
type listSessionsParams struct {
	includeArchived bool
	cursor          *string
	limit           *int
}

// ListSessionsOption adds an optional query parameter to ListSessions.
type ListSessionsOption func(*listSessionsParams)

// WithIncludeArchived sends include_archived=true. Without it the parameter is absent.
func WithIncludeArchived() ListSessionsOption {
	return func(p *listSessionsParams) { p.includeArchived = true }
}

// WithCursor asks for the page after cursor, an opaque SessionPage.NextCursor. An empty cursor is
// refused before any request; omit the option for the first page.
func WithCursor(cursor string) ListSessionsOption {
	return func(p *listSessionsParams) { p.cursor = &cursor }
}

// WithLimit sets the page size, 1..MaxSessionsLimit (checked before any request).
func WithLimit(n int) ListSessionsOption {
	return func(p *listSessionsParams) { p.limit = &n }
}

// wireSessionPage is GET /sessions as sent by the server.
type wireSessionPage struct {
	Items      *[]wireSession `json:"items"`
	NextCursor *string        `json:"next_cursor"`
}

// ListSessions lists the caller's sessions (GET /sessions, 200). List items carry no
// message_count (nil); a null archived is false and null tags are empty.
//
// Errors: 422 cursor_invalid -> *InvalidCursorError; anything else -> *SessionAPIFailedError.
func (c *Client) ListSessions(ctx context.Context, opts ...ListSessionsOption) (SessionPage, error) {
	const action = "list sessions"
	var p listSessionsParams
	for _, opt := range opts {
		if opt != nil {
			opt(&p)
		}
	}
	q := url.Values{}
	if p.includeArchived {
		q.Set("include_archived", "true")
	}
	if p.cursor != nil {
		if *p.cursor == "" {
			return SessionPage{}, fmt.Errorf("worldtree: %s: %w: cursor is empty", action, ErrInvalidArgument)
		}
		q.Set("cursor", *p.cursor)
	}
	if p.limit != nil {
		if *p.limit < 1 || *p.limit > MaxSessionsLimit {
			return SessionPage{}, fmt.Errorf("worldtree: %s: %w: limit must be 1..%d, got %d",
				action, ErrInvalidArgument, MaxSessionsLimit, *p.limit)
		}
		q.Set("limit", strconv.Itoa(*p.limit))
	}
	cl := call{action: action, method: http.MethodGet, segments: []string{"sessions"}, query: q}

	r, err := c.do(ctx, cl)
	if err != nil {
		return SessionPage{}, err
	}
	if r.status != http.StatusOK {
		return SessionPage{}, c.failure(cl, r, func(status int, info errorInfo) error {
			if status == http.StatusUnprocessableEntity && info.code == "cursor_invalid" {
				raw := ""
				if p.cursor != nil {
					raw = *p.cursor
				}
				return &InvalidCursorError{Raw: raw}
			}
			return nil
		})
	}
	var w wireSessionPage
	if err := c.decodeJSON(cl, r, &w); err != nil {
		return SessionPage{}, err
	}
	page, err := w.page(c.redactor(cl))
	if err != nil {
		return SessionPage{}, fmt.Errorf("worldtree: %s: %w", action, err)
	}
	return page, nil
}

// page checks a decoded GET /sessions body and converts it: items are required, a list item
// never has a message count whatever the server sends (INV-002), and an empty next_cursor ends
// the paging like null. Server ids in its errors pass rd.
func (w wireSessionPage) page(rd redactor) (SessionPage, error) {
	if w.Items == nil {
		return SessionPage{}, fmt.Errorf("%w: page without items", ErrMalformedResponse)
	}
	if w.NextCursor != nil && *w.NextCursor == "" {
		// "" cannot be passed back (WithCursor refuses it): like null, it ends the paging.
		w.NextCursor = nil
	}
	page := SessionPage{Items: make([]SessionInfo, 0, len(*w.Items)), NextCursor: w.NextCursor}
	for _, ws := range *w.Items {
		ws.MessageCount = nil
		s, err := ws.info(rd)
		if err != nil {
			return SessionPage{}, err
		}
		page.Items = append(page.Items, s)
	}
	return page, nil
}

// GetSessionTools returns the session's merged tool inventory verbatim
// (GET /sessions/{id}/tools, 200). A 404 session_not_found, also for another owner's session,
// is a *SessionAPIFailedError.
func (c *Client) GetSessionTools(ctx context.Context, sessionID string) (map[string]any, error) {
	const action = "get session tools"
	if err := requireID(action, "session id", sessionID); err != nil {
		return nil, err
	}
	return c.getObject(ctx, call{
		action: action, method: http.MethodGet, segments: []string{"sessions", sessionID, "tools"},
	}, http.StatusOK, nil)
}

// GetSessionBifrost returns the session's Bifrost binding as the admin view sees it
// (GET /admin/sessions/{id}/bifrost, 200), verbatim. The request carries
// "Authorization: Bearer <adminKey>" instead of the default key. A 403 (the key lacks
// admin.sessions.read) and a 404 session_not_bifrost_bound are *SessionAPIFailedError.
func (c *Client) GetSessionBifrost(ctx context.Context, sessionID, adminKey string) (map[string]any, error) {
	const action = "get session bifrost"
	if err := requireID(action, "session id", sessionID); err != nil {
		return nil, err
	}
	if adminKey == "" {
		return nil, fmt.Errorf("worldtree: %s: %w: admin key is empty", action, ErrInvalidArgument)
	}
	if err := checkKey(adminKey); err != nil {
		return nil, fmt.Errorf("worldtree: %s: admin key: %w", action, err)
	}
	return c.getObject(ctx, call{
		action:   action,
		method:   http.MethodGet,
		segments: []string{"admin", "sessions", sessionID, "bifrost"},
		auth:     auth{override: true, key: adminKey},
	}, http.StatusOK, nil)
}

// SetPersonaState writes a persona snapshot to a session (POST /sessions/{id}/persona_state,
// 204). The body is snapshot verbatim (freeform; note that "pad" is an array [p, a, d] here).
// Any status other than 204 is a *SessionAPIFailedError.
func (c *Client) SetPersonaState(ctx context.Context, sessionID string, snapshot map[string]any) error {
	const action = "set persona state"
	if err := requireID(action, "session id", sessionID); err != nil {
		return err
	}
	if snapshot == nil {
		return fmt.Errorf("worldtree: %s: %w: snapshot is nil", action, ErrInvalidArgument)
	}
	return c.expectNoContent(ctx, call{
		action:   action,
		method:   http.MethodPost,
		segments: []string{"sessions", sessionID, "persona_state"},
		body:     snapshot,
	}, http.StatusNoContent)
}
