package worldtree

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
)

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
