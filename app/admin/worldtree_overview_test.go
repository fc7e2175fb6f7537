package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kimiapp/kimi/app/worldtree"
)

// The overview tests' fake Worldtree: a recording server answering each path with a stub.

// canaryKey is the default key of the overview tests' client.
const canaryKey = "canary-key-0123456789abcdef"

// listItem is a GET /sessions item.
const listItem = `{"session_id":"s1","agent_id":"mimir","created_at":"2026-04-15T12:00:00+00:00","last_active":"2026-04-15T12:05:00+00:00","metadata":{},"name":"Research session","archived":false,"tags":["work"]}`

// stub is the fake server's answer.
type stub struct {
	status      int
	body        string
	contentType string // "" = application/json when body is set; "-" = no Content-Type header
}

// recorded is one request the fake server saw.
type recorded struct {
	Path, Query string
	Header      http.Header
}

// fakeServer records every request and answers with its handler.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFakeServerFunc(t *testing.T, h http.HandlerFunc) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		fs.reqs = append(fs.reqs, recorded{Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone()})
		fs.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func newFakeServer(t *testing.T, s stub) *fakeServer {
	return newFakeServerFunc(t, func(w http.ResponseWriter, _ *http.Request) { writeStub(w, s) })
}

func (fs *fakeServer) requests() []recorded {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]recorded(nil), fs.reqs...)
}

func writeStub(w http.ResponseWriter, s stub) {
	switch {
	case s.contentType == "-":
		w.Header()["Content-Type"] = nil
	case s.contentType != "":
		w.Header().Set("Content-Type", s.contentType)
	case s.body != "":
		w.Header().Set("Content-Type", "application/json")
	}
	if s.status == 0 {
		s.status = http.StatusOK
	}
	w.WriteHeader(s.status)
	_, _ = io.WriteString(w, s.body)
}

func newTestClient(t *testing.T, base string) *worldtree.Client {
	t.Helper()
	c, err := worldtree.New(base, worldtree.WithKey(canaryKey))
	if err != nil {
		t.Fatalf("New(%q): %v", base, err)
	}
	return c
}

func bearer(key string) string { return "Bearer " + key }

func wantOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantAPIFailed checks err is the generic error with status.
func wantAPIFailed(t *testing.T, err error, status int) {
	t.Helper()
	var failed *worldtree.SessionAPIFailedError
	if !errors.As(err, &failed) || failed.Status != status {
		t.Fatalf("err = %v (%T), want *SessionAPIFailedError with status %d", err, err, status)
	}
}

func wantInvalidArgument(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, worldtree.ErrInvalidArgument) {
		t.Fatalf("err = %v, want ErrInvalidArgument", err)
	}
}

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
	data, err := loadWorldtreeOverview(t.Context(), c, overviewOptions{Cursor: "v1.prev", Limit: 20, IncludeArchived: true})
	wantOK(t, err)

	for _, e := range []error{data.MeErr, data.CapabilitiesErr, data.AgentsErr, data.SessionsErr} {
		wantOK(t, e)
	}
	wantID := overviewIdentity{UserID: "alice", Tier: "user", KeyID: "a1b2c3d4", KeyLabel: "alice phone",
		Scopes: []string{"conversations.read", "persona.read"}}
	if !reflect.DeepEqual(data.Identity, wantID) {
		t.Errorf("overviewIdentity = %+v", data.Identity)
	}
	if !data.Identity.HasScope("persona.read") || data.Identity.HasScope("admin.sessions.read") {
		t.Error("HasScope wrong")
	}
	wantTemplates := []overviewTemplate{
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
	if *mimir.Persona.PAD != (padReading{Pleasure: 0.52, Arousal: 0.47, Dominance: 0.5}) ||
		*mimir.Persona.BaselinePAD != (padReading{Pleasure: 0.5, Arousal: 0.4, Dominance: 0.5}) ||
		mimir.Persona.DominantEmotion != "curiosity" || mimir.Persona.LastUpdatedAt != "2026-05-25T22:30:18+00:00" ||
		mimir.Persona.State["agent_id"] != "mimir" {
		t.Errorf("mimir persona = %+v", mimir.Persona)
	}
	if domari.PersonaConfigured || domari.Persona != nil || domari.PersonaErr != nil {
		t.Errorf("domari = %+v, want not configured and no error", domari)
	}
	var ana *worldtree.AgentNotAvailableError
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
	data, err := loadWorldtreeOverview(t.Context(), newTestClient(t, fs.URL), overviewOptions{Cursor: "stale"})
	wantOK(t, err)
	wantAPIFailed(t, data.MeErr, 401)
	wantAPIFailed(t, data.CapabilitiesErr, 500)
	wantAPIFailed(t, data.AgentsErr, 503)
	var ic *worldtree.InvalidCursorError
	if !errors.As(data.SessionsErr, &ic) || ic.Raw != "stale" {
		t.Errorf("SessionsErr = %v", data.SessionsErr)
	}
	if data.Me != nil || data.Templates != nil || data.Agents != nil || data.Sessions.Items != nil {
		t.Errorf("failed sections carry data: %+v", data)
	}
	for _, e := range []error{data.MeErr, data.CapabilitiesErr, data.AgentsErr, data.SessionsErr} {
		if worldtree.DescribeError(e) == "" {
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
	data, err := loadWorldtreeOverview(t.Context(), newTestClient(t, fs.URL), overviewOptions{})
	wantOK(t, err)
	if len(data.Agents) != 12 {
		t.Fatalf("%d agents", len(data.Agents))
	}
	for _, a := range data.Agents {
		var sd *worldtree.AuthScopeDeniedError
		if !errors.As(a.PersonaErr, &sd) || sd.Scope != "persona.read" {
			t.Errorf("%s: PersonaErr = %v", a.Agent.AgentID, a.PersonaErr)
		}
		if !strings.Contains(worldtree.DescribeError(a.PersonaErr), `"persona.read"`) {
			t.Errorf("description does not name the scope: %q", worldtree.DescribeError(a.PersonaErr))
		}
	}
	if n := personaReads.Load(); n < 1 || n > worldtreePersonaFetchers {
		t.Errorf("%d persona reads, want 1..%d", n, worldtreePersonaFetchers)
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
			data, err := loadWorldtreeOverview(t.Context(), newTestClient(t, fs.URL), overviewOptions{MaxPersonaAgents: tt.max})
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
	for _, limit := range []int{-1, worldtree.MaxSessionsLimit + 1} {
		_, err := loadWorldtreeOverview(t.Context(), c, overviewOptions{Limit: limit})
		wantInvalidArgument(t, err)
	}
	_, err := loadWorldtreeOverview(t.Context(), nil, overviewOptions{})
	wantInvalidArgument(t, err)
	if n := len(fs.requests()); n != 0 {
		t.Errorf("%d requests for invalid options", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	data, err := loadWorldtreeOverview(ctx, c, overviewOptions{})
	if !errors.Is(err, context.Canceled) || !errors.Is(data.MeErr, context.Canceled) {
		t.Errorf("err = %v, MeErr = %v, want context.Canceled", err, data.MeErr)
	}
}

func TestOverviewLenientShapes(t *testing.T) {
	me := identityFromMe(map[string]any{"user_id": 5, "scopes": []any{"a", 3, "b"}})
	if !reflect.DeepEqual(me, overviewIdentity{Scopes: []string{"a", "b"}}) {
		t.Errorf("identity = %+v", me)
	}
	tpl := templatesFromCapabilities(map[string]any{"ephemeral_templates": map[string]any{"x": "not an object"}})
	if !reflect.DeepEqual(tpl, []overviewTemplate{{Name: "x"}}) {
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
