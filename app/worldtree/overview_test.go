package worldtree

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

// overviewRoutes answers an Overview's requests from a path -> stub map (404 otherwise).
func overviewRoutes(routes map[string]stub) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := routes[r.URL.Path]
		if !ok {
			s = stub{status: 404, body: `{"detail":"Not Found"}`}
		}
		writeStub(w, s)
	}
}

// happyRoutes is a server with three agents: mimir (persona), domari (no persona), bogus (gone).
func happyRoutes() map[string]stub {
	return map[string]stub{
		"/me":           {body: `{"user_id":"alice","scopes":["conversations.read","persona.read"],"tier":"user","key_id":"a1b2c3d4","key_label":"alice phone"}`},
		"/capabilities": {body: `{"ephemeral_templates":{"zeta":{"allowed_models":["m"],"default_model":"m","system_prompt_max_bytes":10},"echo":{"allowed_models":["glm5-turbo","glm4.7"],"default_model":"glm5-turbo","system_prompt_max_bytes":32768}}}`},
		"/agents": {body: `[{"agent_id":"mimir","name":"Mimir","description":"d","persona_traits":{"vibe":"contemplative"}},` +
			`{"agent_id":"domari","name":"Domari","description":"d"},{"agent_id":"bogus","name":"B","description":"d"}]`},
		"/agents/mimir/persona_state": {body: `{"agent_id":"mimir","pad":{"pleasure":0.52,"arousal":0.47,"dominance":0.5},` +
			`"baseline_pad":{"pleasure":0.5,"arousal":0.4,"dominance":0.5},"dominant_emotion":"curiosity","last_updated_at":"2026-05-25T22:30:18+00:00"}`},
		"/agents/domari/persona_state": {status: 404, body: `{"detail":{"error_code":"persona_not_configured"}}`},
		"/agents/bogus/persona_state":  {status: 404, body: `{"error_code":"agent_not_available"}`},
		"/sessions":                    {body: `{"items":[` + listItem + `],"next_cursor":"v1.next"}`},
	}
}

func TestOverviewHappy(t *testing.T) {
	fs := newFakeServerFunc(t, overviewRoutes(happyRoutes()))
	c := newTestClient(t, fs.URL)
	data, err := Overview(t.Context(), c, OverviewOptions{Cursor: "v1.prev", Limit: 20, IncludeArchived: true})
	wantOK(t, err)

	for _, e := range []error{data.MeErr, data.CapabilitiesErr, data.AgentsErr, data.SessionsErr} {
		wantOK(t, e)
	}
	wantID := Identity{UserID: "alice", Tier: "user", KeyID: "a1b2c3d4", KeyLabel: "alice phone",
		Scopes: []string{"conversations.read", "persona.read"}}
	if !reflect.DeepEqual(data.Identity, wantID) {
		t.Errorf("Identity = %+v", data.Identity)
	}
	if !data.Identity.HasScope("persona.read") || data.Identity.HasScope("admin.sessions.read") {
		t.Error("HasScope wrong")
	}
	wantTemplates := []EphemeralTemplate{
		{Name: "echo", AllowedModels: []string{"glm5-turbo", "glm4.7"}, DefaultModel: "glm5-turbo", SystemPromptMaxBytes: 32768},
		{Name: "zeta", AllowedModels: []string{"m"}, DefaultModel: "m", SystemPromptMaxBytes: 10},
	}
	if !reflect.DeepEqual(data.Templates, wantTemplates) {
		t.Errorf("Templates = %+v", data.Templates)
	}
	if len(data.Agents) != 3 {
		t.Fatalf("%d agents", len(data.Agents))
	}
	mimir, domari, bogus := data.Agents[0], data.Agents[1], data.Agents[2]
	if mimir.Agent.AgentID != "mimir" || domari.Agent.AgentID != "domari" || bogus.Agent.AgentID != "bogus" {
		t.Errorf("agent order changed")
	}
	if mimir.Persona == nil || !mimir.PersonaConfigured || mimir.PersonaErr != nil {
		t.Fatalf("mimir = %+v", mimir)
	}
	if *mimir.Persona.PAD != (PAD{Pleasure: 0.52, Arousal: 0.47, Dominance: 0.5}) ||
		*mimir.Persona.BaselinePAD != (PAD{Pleasure: 0.5, Arousal: 0.4, Dominance: 0.5}) ||
		mimir.Persona.DominantEmotion != "curiosity" || mimir.Persona.LastUpdatedAt != "2026-05-25T22:30:18+00:00" ||
		mimir.Persona.State["agent_id"] != "mimir" {
		t.Errorf("mimir persona = %+v", mimir.Persona)
	}
	if domari.PersonaConfigured || domari.Persona != nil || domari.PersonaErr != nil {
		t.Errorf("domari = %+v, want not configured and no error", domari)
	}
	var ana *AgentNotAvailableError
	if bogus.Persona != nil || !errors.As(bogus.PersonaErr, &ana) {
		t.Errorf("bogus = %+v, want AgentNotAvailable", bogus)
	}
	if data.Sessions.NextCursor == nil || *data.Sessions.NextCursor != "v1.next" || len(data.Sessions.Items) != 1 {
		t.Errorf("Sessions = %+v", data.Sessions)
	}
	for _, r := range fs.requests() {
		if r.Path == "/sessions" && r.Query != "cursor=v1.prev&include_archived=true&limit=20" {
			t.Errorf("sessions query = %q", r.Query)
		}
		if r.Header.Get("Authorization") != bearer(canaryKey) {
			t.Errorf("%s sent %q", r.Path, r.Header.Get("Authorization"))
		}
	}
	if n := len(fs.requests()); n != 7 {
		t.Errorf("%d requests, want 7", n)
	}
}

func TestOverviewSectionErrors(t *testing.T) {
	routes := map[string]stub{
		"/me":           {status: 401, body: `{"detail":"auth_invalid"}`},
		"/capabilities": {status: 500, body: "boom", contentType: "-"},
		"/agents":       {status: 503, body: "down", contentType: "-"},
		"/sessions":     {status: 422, body: `{"detail":{"error_code":"cursor_invalid"}}`},
	}
	fs := newFakeServerFunc(t, overviewRoutes(routes))
	data, err := Overview(t.Context(), newTestClient(t, fs.URL), OverviewOptions{Cursor: "stale"})
	wantOK(t, err)
	wantAPIFailed(t, data.MeErr, 401)
	wantAPIFailed(t, data.CapabilitiesErr, 500)
	wantAPIFailed(t, data.AgentsErr, 503)
	var ic *InvalidCursorError
	if !errors.As(data.SessionsErr, &ic) || ic.Raw != "stale" {
		t.Errorf("SessionsErr = %v", data.SessionsErr)
	}
	if data.Me != nil || data.Templates != nil || data.Agents != nil || data.Sessions.Items != nil {
		t.Errorf("failed sections carry data: %+v", data)
	}
	for _, e := range []error{data.MeErr, data.CapabilitiesErr, data.AgentsErr, data.SessionsErr} {
		if DescribeError(e) == "" {
			t.Errorf("no description for %v", e)
		}
	}
}

// TestOverviewScopeDeniedStopsPersonaReads checks that a key without persona.read costs at most
// one round of concurrent persona reads, and every agent reports the scope.
func TestOverviewScopeDeniedStopsPersonaReads(t *testing.T) {
	var agents []string
	for i := range 12 {
		agents = append(agents, fmt.Sprintf(`{"agent_id":"a%d","name":"A","description":"d"}`, i))
	}
	var personaReads atomic.Int32
	fs := newFakeServerFunc(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/agents":
			writeStub(w, stub{body: "[" + strings.Join(agents, ",") + "]"})
		case strings.HasSuffix(r.URL.Path, "/persona_state"):
			personaReads.Add(1)
			writeStub(w, stub{status: 403, body: `{"detail":{"error_code":"auth_scope_denied","message":"Missing required scope: persona.read"}}`})
		default:
			writeStub(w, stub{body: `{"items":[],"next_cursor":null}`})
		}
	})
	data, err := Overview(t.Context(), newTestClient(t, fs.URL), OverviewOptions{})
	wantOK(t, err)
	if len(data.Agents) != 12 {
		t.Fatalf("%d agents", len(data.Agents))
	}
	for _, a := range data.Agents {
		var sd *AuthScopeDeniedError
		if !errors.As(a.PersonaErr, &sd) || sd.Scope != "persona.read" {
			t.Errorf("%s: PersonaErr = %v", a.Agent.AgentID, a.PersonaErr)
		}
		if !strings.Contains(DescribeError(a.PersonaErr), `"persona.read"`) {
			t.Errorf("description does not name the scope: %q", DescribeError(a.PersonaErr))
		}
	}
	if n := personaReads.Load(); n < 1 || n > personaFetchers {
		t.Errorf("%d persona reads, want 1..%d", n, personaFetchers)
	}
}

func TestOverviewPersonaBound(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		wantReads int
	}{
		{name: "one", max: 1, wantReads: 1},
		{name: "none", max: -1, wantReads: 0},
		{name: "default covers all three", max: 0, wantReads: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServerFunc(t, overviewRoutes(happyRoutes()))
			data, err := Overview(t.Context(), newTestClient(t, fs.URL), OverviewOptions{MaxPersonaAgents: tt.max})
			wantOK(t, err)
			reads := 0
			for _, r := range fs.requests() {
				if strings.HasSuffix(r.Path, "/persona_state") {
					reads++
				}
			}
			if reads != tt.wantReads {
				t.Errorf("%d persona reads, want %d", reads, tt.wantReads)
			}
			for i, a := range data.Agents {
				if skipped := i >= tt.wantReads; a.PersonaSkipped != skipped {
					t.Errorf("agent %d PersonaSkipped = %t", i, a.PersonaSkipped)
				}
			}
		})
	}
}

func TestOverviewInvalid(t *testing.T) {
	fs := newFakeServer(t, stub{body: `{}`})
	c := newTestClient(t, fs.URL)
	for _, limit := range []int{-1, MaxSessionsLimit + 1} {
		_, err := Overview(t.Context(), c, OverviewOptions{Limit: limit})
		wantInvalidArgument(t, err)
	}
	_, err := Overview(t.Context(), nil, OverviewOptions{})
	wantInvalidArgument(t, err)
	if n := len(fs.requests()); n != 0 {
		t.Errorf("%d requests for invalid options", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	data, err := Overview(ctx, c, OverviewOptions{})
	if !errors.Is(err, context.Canceled) || !errors.Is(data.MeErr, context.Canceled) {
		t.Errorf("err = %v, MeErr = %v, want context.Canceled", err, data.MeErr)
	}
}

func TestOverviewLenientShapes(t *testing.T) {
	me := identityFromMe(map[string]any{"user_id": 5, "scopes": []any{"a", 3, "b"}})
	if !reflect.DeepEqual(me, Identity{Scopes: []string{"a", "b"}}) {
		t.Errorf("identity = %+v", me)
	}
	tpl := templatesFromCapabilities(map[string]any{"ephemeral_templates": map[string]any{"x": "not an object"}})
	if !reflect.DeepEqual(tpl, []EphemeralTemplate{{Name: "x"}}) {
		t.Errorf("templates = %+v", tpl)
	}
	if got := templatesFromCapabilities(map[string]any{}); got == nil || len(got) != 0 {
		t.Errorf("no templates = %#v", got)
	}
	for _, v := range []any{nil, []any{0.1, 0.2, 0.3}, map[string]any{"pleasure": 0.1, "arousal": 0.2}, map[string]any{"pleasure": "x", "arousal": 0.2, "dominance": 0.3}} {
		if padFromAny(v) != nil {
			t.Errorf("padFromAny(%v) != nil", v)
		}
	}
}

func TestDescribeError(t *testing.T) {
	api := func(method, path string, status int, code string) error {
		return fmt.Errorf("worldtree: x: %w", &SessionAPIFailedError{Method: method, Path: path, Status: status, Code: code})
	}
	apiBody := func(method, path string, status int, body string) error {
		return fmt.Errorf("worldtree: x: %w", &SessionAPIFailedError{Method: method, Path: path, Status: status,
			Code: parseErrorInfo([]byte(body)).code, Body: []byte(body)})
	}
	tests := []struct {
		name string
		err  error
		want string // substring
	}{
		{"nil", nil, ""},
		{"403 names the scope from the server's message", apiBody("GET", "/me", 403,
			`{"detail":{"error_code":"auth_scope_denied","message":"Missing required scope: conversations.read"}}`), `lacks the "conversations.read" scope`},
		{"403 flat message names the scope", apiBody("GET", "/capabilities", 403,
			`{"error_code":"auth_scope_denied","message":"missing scope persona.read"}`), `lacks the "persona.read" scope`},
		{"403 list sessions names conversations.read", api("GET", "/sessions", 403, "auth_scope_denied"), `lacks the "conversations.read" scope`},
		{"403 create session names conversations.write", api("POST", "/sessions", 403, "auth_scope_denied"), `lacks the "conversations.write" scope`},
		{"403 session tools names conversations.read", api("GET", "/sessions/s1/tools", 403, ""), `lacks the "conversations.read" scope`},
		{"403 message echoing a dotted token is not a scope", apiBody("GET", "/me", 403,
			`{"detail":{"error_code":"auth_scope_denied","message":"Missing required scope: eyJhbGci.OiJIUz1"}}`), "403, error code auth_scope_denied): the key lacks a scope"},
		{"403 message without a scope-shaped word", apiBody("GET", "/me", 403,
			`{"detail":{"error_code":"auth_scope_denied","message":"Missing required scope: <b>x</b>"}}`), "403, error code auth_scope_denied): the key lacks a scope"},
		{"scope denied names the scope", &AuthScopeDeniedError{Scope: "persona.read"}, `lacks the "persona.read" scope`},
		{"persona not configured", &PersonaNotConfiguredError{AgentID: "domari"}, `Agent "domari" has no persona configured`},
		{"agent not available", &AgentNotAvailableError{AgentID: "bogus"}, `Agent "bogus" is not available`},
		{"agent not found", &AgentNotFoundError{AgentID: "mimir"}, `Worldtree has no agent "mimir"`},
		{"invalid cursor", &InvalidCursorError{Raw: "c"}, "Start again from the first page"},
		{"consumer key missing", fmt.Errorf("w: %w", ErrBifrostConsumerKeyMissing), "needs a consumer key"},
		{"handshake auth rejected", &BifrostHandshakeFailedError{BifrostError: "bifrost.auth_rejected"}, "rejected the consumer key"},
		{"handshake other", &BifrostHandshakeFailedError{BifrostError: "bifrost.timeout"}, "(bifrost.timeout)"},
		{"handshake unprintable", &BifrostHandshakeFailedError{BifrostError: "a b\nc"}, "(no detail)"},
		{"redirect", api("GET", "/me", 302, ""), "redirect (status 302)"},
		{"401 default key", api("GET", "/me", 401, ""), "rejected the API key (401). Check the Worldtree default key"},
		{"401 admin key", api("GET", "/admin/sessions/s/bifrost", 401, ""), "rejected the admin key"},
		{"401 admin key under a base path", api("GET", "/wt/admin/sessions/s/bifrost", 401, ""), "rejected the admin key"},
		// A base URL under an /admin/ prefix does not make every request an admin one.
		{"401 default key under an /admin/ base path", api("GET", "/admin/wt/me", 401, ""), "Check the Worldtree default key"},
		{"403 under an /admin/ base path", api("GET", "/admin/wt/sessions", 403, ""), `"conversations.read"`},
		{"403 admin names scope", api("GET", "/admin/sessions/s/bifrost", 403, "auth_scope_denied"), `"admin.sessions.read"`},
		{"403 create character names scope", api("POST", "/characters", 403, "auth_scope_denied"), `"character.write"`},
		{"403 delete character names scope", api("DELETE", "/characters/c", 403, ""), `"character.write"`},
		{"403 character state names scope", api("GET", "/characters/c/state", 403, ""), `"character.read"`},
		{"403 models names scope", api("GET", "/models/available-for-characters", 403, ""), `"character.read"`},
		{"403 persona names scope", api("GET", "/agents/x/persona_state", 403, "other"), `"persona.read"`},
		{"403 unknown scope", api("GET", "/me", 403, "auth_scope_denied"), "403, error code auth_scope_denied): the key lacks a scope"},
		{"404 session", api("GET", "/sessions/s/tools", 404, "session_not_found"), "session was not found"},
		{"404 not bound", api("GET", "/admin/sessions/s/bifrost", 404, "session_not_bifrost_bound"), "not bound to a Bifrost"},
		{"404 other", api("DELETE", "/characters/c", 404, ""), "no such resource: DELETE /characters/c (404)"},
		{"422 ephemeral", api("POST", "/sessions", 422, "ephemeral_does_not_accept_bifrost"), "Ephemeral templates cannot be bound"},
		{"422 other", api("POST", "/sessions", 422, "validation_failed"), "invalid (422, error code validation_failed)"},
		{"429", api("GET", "/me", 429, ""), "rate-limiting"},
		{"502", api("GET", "/me", 502, ""), "unavailable (status 502)"},
		{"500", api("GET", "/me", 500, ""), "server error (status 500)"},
		{"other status", api("GET", "/me", 418, ""), "GET /me with status 418"},
		{"too large", fmt.Errorf("w: %w", ErrResponseTooLarge), "larger than this client accepts"},
		{"content type", fmt.Errorf("w: %w", ErrUnexpectedContentType), "other than JSON"},
		{"malformed", fmt.Errorf("w: %w", ErrMalformedResponse), "cannot read"},
		{"plane", fmt.Errorf("w: %w", ErrUnknownPlane), "memory, affect or combined"},
		{"invalid argument", fmt.Errorf("worldtree: x: %w: agent id is empty", ErrInvalidArgument), "refused before it was sent: worldtree: x: invalid argument: agent id is empty."},
		{"deadline", &url.Error{Op: "Get", URL: "https://w", Err: context.DeadlineExceeded}, "did not answer in time"},
		{"canceled", fmt.Errorf("w: %w", context.Canceled), "cancelled"},
		{"dns", &url.Error{Op: "Get", URL: "https://w", Err: &net.DNSError{Err: "no such host", Name: "w"}}, "(host not found)"},
		{"refused", &url.Error{Op: "Get", URL: "https://w", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}, "(connection refused)"},
		{"other network", &url.Error{Op: "Get", URL: "https://w", Err: errors.New("tls: bad")}, "(network error)"},
		{"unknown", errors.New("odd"), "The Worldtree request failed: odd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DescribeError(tt.err)
			if tt.want == "" {
				if got != "" {
					t.Errorf("got %q, want empty", got)
				}
				return
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}
}
