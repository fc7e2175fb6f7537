package worldtree

import "fmt"

// SessionInfo is one Worldtree session (the contract's SessionInfo). Timestamps are kept as the
// server's ISO-8601 strings.
type SessionInfo struct {
	SessionID string `json:"session_id"`
	AgentID   string `json:"agent_id"`
	// MessageCount is set only by CreateSession; list items do not carry it (nil).
	MessageCount *int           `json:"message_count"`
	CreatedAt    string         `json:"created_at"`
	LastActive   string         `json:"last_active"`
	Metadata     map[string]any `json:"metadata"`
	// Name is nullable; a created session has none.
	Name     *string  `json:"name"`
	Archived bool     `json:"archived"`
	Tags     []string `json:"tags"`
}

// SessionPage is one page of ListSessions. NextCursor is nil on the last page; it is opaque and
// must be passed back unchanged (WithCursor).
type SessionPage struct {
	Items      []SessionInfo `json:"items"`
	NextCursor *string       `json:"next_cursor"`
}

// AgentInfo is one entry of ListAgents. AgentID, Name and Description are required; the optional
// fields default to nil / empty (never nil slices or maps).
type AgentInfo struct {
	AgentID         string         `json:"agent_id"`
	Name            string         `json:"name"`
	Description     string         `json:"description"`
	Version         *string        `json:"version"`
	Capabilities    []string       `json:"capabilities"`
	SupportedModels []string       `json:"supported_models"`
	PersonaTraits   map[string]any `json:"persona_traits"`
	UIHints         map[string]any `json:"ui_hints"`
}

// BifrostBinding binds a new session to a Bifrost tool server. It always serializes both keys:
// {"endpoint_url": "...", "scope": null}.
type BifrostBinding struct {
	// EndpointURL is the Worldtree-visible Bifrost URL (see EndpointForPlane).
	EndpointURL string `json:"endpoint_url"`
	// Scope is sent as null when nil; its semantics are not pinned by the contract.
	Scope *string `json:"scope"`
}

// wireSession is a session as sent by the server, with pointers to tell a missing or null field
// from a zero value.
type wireSession struct {
	SessionID    *string        `json:"session_id"`
	AgentID      *string        `json:"agent_id"`
	MessageCount *int           `json:"message_count"`
	CreatedAt    string         `json:"created_at"`
	LastActive   string         `json:"last_active"`
	Metadata     map[string]any `json:"metadata"`
	Name         *string        `json:"name"`
	Archived     *bool          `json:"archived"`
	Tags         []string       `json:"tags"`
}

// info converts to SessionInfo, applying the null defaults (archived null -> false, tags null ->
// [], metadata null -> {}). The server's id in an error passes rd.
func (w wireSession) info(rd redactor) (SessionInfo, error) {
	if w.SessionID == nil || *w.SessionID == "" {
		return SessionInfo{}, fmt.Errorf("%w: session without session_id", ErrMalformedResponse)
	}
	if w.AgentID == nil {
		return SessionInfo{}, fmt.Errorf("%w: session %q without agent_id", ErrMalformedResponse, rd.Field(*w.SessionID, 128))
	}
	s := SessionInfo{
		SessionID:    *w.SessionID,
		AgentID:      *w.AgentID,
		MessageCount: w.MessageCount,
		CreatedAt:    w.CreatedAt,
		LastActive:   w.LastActive,
		Metadata:     w.Metadata,
		Name:         w.Name,
		Tags:         w.Tags,
	}
	if w.Archived != nil {
		s.Archived = *w.Archived
	}
	if s.Metadata == nil {
		s.Metadata = map[string]any{}
	}
	if s.Tags == nil {
		s.Tags = []string{}
	}
	return s, nil
}

// wireAgent is an agent as sent by the server.
type wireAgent struct {
	AgentID         *string        `json:"agent_id"`
	Name            *string        `json:"name"`
	Description     *string        `json:"description"`
	Version         *string        `json:"version"`
	Capabilities    []string       `json:"capabilities"`
	SupportedModels []string       `json:"supported_models"`
	PersonaTraits   map[string]any `json:"persona_traits"`
	UIHints         map[string]any `json:"ui_hints"`
}

// info converts to AgentInfo, checking the required fields and applying the defaults. The
// server's id in an error passes rd.
func (w wireAgent) info(i int, rd redactor) (AgentInfo, error) {
	switch {
	case w.AgentID == nil:
		return AgentInfo{}, fmt.Errorf("%w: agent %d without agent_id", ErrMalformedResponse, i)
	case w.Name == nil:
		return AgentInfo{}, fmt.Errorf("%w: agent %q without name", ErrMalformedResponse, rd.Field(*w.AgentID, 128))
	case w.Description == nil:
		return AgentInfo{}, fmt.Errorf("%w: agent %q without description", ErrMalformedResponse, rd.Field(*w.AgentID, 128))
	}
	a := AgentInfo{
		AgentID:         *w.AgentID,
		Name:            *w.Name,
		Description:     *w.Description,
		Version:         w.Version,
		Capabilities:    w.Capabilities,
		SupportedModels: w.SupportedModels,
		PersonaTraits:   w.PersonaTraits,
		UIHints:         w.UIHints,
	}
	if a.Capabilities == nil {
		a.Capabilities = []string{}
	}
	if a.SupportedModels == nil {
		a.SupportedModels = []string{}
	}
	if a.PersonaTraits == nil {
		a.PersonaTraits = map[string]any{}
	}
	if a.UIHints == nil {
		a.UIHints = map[string]any{}
	}
	return a, nil
}
