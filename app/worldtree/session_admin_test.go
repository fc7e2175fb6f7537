package worldtree

import (
	"context"
	"net/http"
	"reflect"
	"testing"
)

// TestGetSessionTools ports TestGetSessionTools.
func TestGetSessionTools(t *testing.T) {
	call := func(id string) func(context.Context, *Client) (any, error) {
		return func(ctx context.Context, c *Client) (any, error) { return c.GetSessionTools(ctx, id) }
	}
	runContractCases(t, []contractCase{
		{
			seed: "TestGetSessionTools::test_happy",
			stub: stub{body: `{"agent_id":"alice:wizard","builtin_tools":[],"bifrost_tools":[{"name":"bifrost.alice.set_field","description":"d","parameters":{}}]}`},
			call: call("s1"),
			want: wantRequest{method: "GET", path: "/sessions/s1/tools", auth: bearer(canaryKey)},
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				want := map[string]any{"agent_id": "alice:wizard", "builtin_tools": []any{}, "bifrost_tools": []any{
					map[string]any{"name": "bifrost.alice.set_field", "description": "d", "parameters": map[string]any{}}}}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %v, want %v", got, want)
				}
			},
		},
		{
			seed:  "TestGetSessionTools::test_cross_owner_404_raises",
			stub:  stub{status: 404, body: `{"error_code":"session_not_found"}`},
			call:  call("s1"),
			want:  wantRequest{method: "GET", path: "/sessions/s1/tools", auth: bearer(canaryKey)},
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 404) },
		},
		{
			seed:  "TestGetSessionTools::test_empty_session_id_asserts",
			call:  call(""),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "extra::dot_dot_session_id_refused",
			call:  call(".."),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			// A "/" in an id stays inside its segment instead of addressing /admin/...
			seed:  "extra::slash_in_session_id_escaped",
			stub:  stub{body: `{}`},
			call:  call("x/../../admin/sessions/s1/bifrost"),
			want:  wantRequest{method: "GET", path: "/sessions/x%2F..%2F..%2Fadmin%2Fsessions%2Fs1%2Fbifrost/tools", auth: bearer(canaryKey)},
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
	})
}

// TestGetSessionBifrost ports TestGetSessionBifrost.
func TestGetSessionBifrost(t *testing.T) {
	call := func(id, key string) func(context.Context, *Client) (any, error) {
		return func(ctx context.Context, c *Client) (any, error) { return c.GetSessionBifrost(ctx, id, key) }
	}
	adminReq := wantRequest{method: "GET", path: "/admin/sessions/s1/bifrost", auth: bearer(adminKey)}
	runContractCases(t, []contractCase{
		{
			seed: "TestGetSessionBifrost::test_happy_uses_admin_bearer",
			stub: stub{body: `{"endpoint_url":"https://bifrost.example/mcp","consumer_id":"alice","connected":true,"capabilities_granted":["tools:call","tools:read"],"tools":[{"name":"bifrost.alice.echo","description":"echo"}]}`},
			call: call("s1", adminKey),
			want: adminReq, // the admin key replaces the default for this request
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				m := got.(map[string]any)
				if m["connected"] != true || m["tools"].([]any)[0].(map[string]any)["name"] != "bifrost.alice.echo" {
					t.Errorf("got %v", m)
				}
			},
		},
		{
			// Deliberately the generic error, not AuthScopeDenied.
			seed:  "TestGetSessionBifrost::test_403_scope_denied",
			stub:  stub{status: 403, body: `{"error_code":"auth_scope_denied"}`},
			call:  call("s1", adminKey),
			want:  adminReq,
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 403) },
		},
		{
			seed:  "TestGetSessionBifrost::test_404_not_bound",
			stub:  stub{status: 404, body: `{"error_code":"session_not_bifrost_bound"}`},
			call:  call("s1", adminKey),
			want:  adminReq,
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 404) },
		},
		{
			seed:  "TestGetSessionBifrost::test_empty_admin_key_asserts",
			call:  call("s1", ""),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "extra::empty_session_id_with_admin_key",
			call:  call("", adminKey),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "extra::unsendable_admin_key",
			call:  call("s1", "admin\x00key"),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
	})
}

// TestSetPersonaState ports TestSetPersonaState.
func TestSetPersonaState(t *testing.T) {
	call := func(id string, snap map[string]any) func(context.Context, *Client) (any, error) {
		return func(ctx context.Context, c *Client) (any, error) { return nil, c.SetPersonaState(ctx, id, snap) }
	}
	req := wantRequest{method: "POST", path: "/sessions/s1/persona_state", auth: bearer(canaryKey)}
	withBody := func(b string) wantRequest { r := req; r.body = b; return r }
	runContractCases(t, []contractCase{
		{
			seed:  "TestSetPersonaState::test_happy_204",
			stub:  stub{status: http.StatusNoContent},
			call:  call("s1", map[string]any{"pad": []any{0.4, 0.1, -0.2}}),
			want:  withBody(`{"pad":[0.4,0.1,-0.2]}`),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "TestSetPersonaState::test_non_204_raises",
			stub:  stub{status: 422, body: `{"error_code":"validation_failed"}`},
			call:  call("s1", map[string]any{"pad": []any{1, 2, 3}}),
			want:  withBody(`{"pad":[1,2,3]}`),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 422) },
		},
		{
			seed:  "extra::set_persona_200_is_not_204",
			stub:  stub{status: 200, body: `{}`},
			call:  call("s1", map[string]any{}),
			want:  withBody(`{}`),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 200) },
		},
		{
			seed:  "extra::set_persona_empty_session_id",
			call:  call("", map[string]any{}),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "extra::set_persona_nil_snapshot",
			call:  call("s1", nil),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
	})
}
