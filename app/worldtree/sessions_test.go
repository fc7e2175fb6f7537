package worldtree

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const ts = "2026-04-15T12:00:00+00:00"

// createSession adapts CreateSession to the case table.
func createSession(agent string, opts ...CreateSessionOption) func(context.Context, *Client) (any, error) {
	return func(ctx context.Context, c *Client) (any, error) { return c.CreateSession(ctx, agent, opts...) }
}

// listSessions adapts ListSessions to the case table.
func listSessions(opts ...ListSessionsOption) func(context.Context, *Client) (any, error) {
	return func(ctx context.Context, c *Client) (any, error) { return c.ListSessions(ctx, opts...) }
}

var bind = BifrostBinding{EndpointURL: "http://10.100.10.50:8391"}

// unboundCreate is the request of an unbound create of agent with the default key.
func unboundCreate(body string) wantRequest {
	return wantRequest{method: "POST", path: "/sessions", auth: bearer(canaryKey), body: body}
}

// TestCreateSession ports TestCreateSession and TestCreateSessionBifrostBind.
func TestCreateSession(t *testing.T) {
	big := strings.Repeat("x", 5000)
	runContractCases(t, []contractCase{
		{
			seed: "TestCreateSession::test_happy_create",
			stub: stub{status: 201, body: sessionBody("550e8400-e29b-41d4-a716-446655440000", "mimir", ts, `{}`)},
			call: createSession("mimir"),
			want: unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				zero := 0
				want := SessionInfo{
					SessionID: "550e8400-e29b-41d4-a716-446655440000", AgentID: "mimir", MessageCount: &zero,
					CreatedAt: ts, LastActive: ts, Metadata: map[string]any{},
					Name: nil, Archived: false, Tags: []string{}, // INV-001 create-origin defaults
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v, want %+v", got, want)
				}
			},
		},
		{
			seed: "TestCreateSession::test_happy_create_with_metadata",
			stub: stub{status: 201, body: sessionBody("s1", "mimir", ts, `{"model":"glm5-turbo"}`)},
			call: createSession("mimir"),
			want: unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if m := got.(SessionInfo).Metadata; !reflect.DeepEqual(m, map[string]any{"model": "glm5-turbo"}) {
					t.Errorf("Metadata = %v", m)
				}
			},
		},
		{
			// The body is compared byte for byte by the harness.
			seed:  "TestCreateSession::test_request_body_shape",
			stub:  stub{status: 201, body: sessionBody("s1", "mimir", ts, `{}`)},
			call:  createSession("mimir"),
			want:  unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed: "TestCreateSession::test_unknown_agent_id",
			stub: stub{status: 404, body: `{"error":"unknown_agent_id"}`},
			call: createSession("mimir"),
			want: unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, _ any, err error) {
				var nf *AgentNotFoundError
				if !errors.As(err, &nf) || nf.AgentID != "mimir" {
					t.Fatalf("err = %v, want AgentNotFound(mimir)", err)
				}
			},
		},
		{
			seed: "TestCreateSession::test_validation_failed",
			stub: stub{status: 422, body: `{"error_code":"validation_failed","message":"missing agent_id"}`},
			call: createSession("mimir"),
			want: unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, _ any, err error) {
				f := wantAPIFailed(t, err, 422)
				if f.Code != "validation_failed" {
					t.Errorf("Code = %q", f.Code)
				}
			},
		},
		{
			seed: "TestCreateSession::test_unexpected_status_truncates",
			stub: stub{status: 500, body: big, contentType: "-"},
			call: createSession("mimir"),
			want: unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, _ any, err error) {
				f := wantAPIFailed(t, err, 500)
				if string(f.Body) != big[:1024] {
					t.Errorf("Body has %d bytes, want the first 1024", len(f.Body))
				}
			},
		},
		{
			seed:  "TestCreateSession::test_empty_agent_id",
			stub:  stub{status: 201, body: `{}`},
			call:  createSession(""),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed: "TestCreateSession::test_happy_create_with_end_user_id",
			stub: stub{status: 201, body: sessionBody("s-new", "lofn", "2026-05-22T12:00:00+00:00", `{}`)},
			call: createSession("lofn", WithEndUserID("alice")),
			want: unboundCreate(`{"agent_id":"lofn","end_user_id":"alice"}`),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if s := got.(SessionInfo); s.SessionID != "s-new" || s.AgentID != "lofn" {
					t.Errorf("got %+v", s)
				}
			},
		},
		{
			// INV-002: without WithEndUserID the key is absent, not null.
			seed:  "TestCreateSession::test_default_omits_end_user_id",
			stub:  stub{status: 201, body: sessionBody("s-new", "mimir", ts, `{}`)},
			call:  createSession("mimir"),
			want:  unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "TestCreateSession::test_empty_end_user_id",
			stub:  stub{status: 201, body: `{}`},
			call:  createSession("mimir", WithEndUserID("")),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed: "TestCreateSessionBifrostBind::test_bind_happy_consumer_key_and_body",
			stub: stub{status: 201, body: sessionBody("s-bound", "ratatoskr:sindra", "2026-06-18T12:00:00+00:00", `{}`)},
			call: createSession("ratatoskr:sindra", WithEndUserID("smoke-user"), WithBifrost(bind, consumerKey)),
			want: wantRequest{
				method: "POST", path: "/sessions",
				auth: bearer(consumerKey), // INV-001: never the canary default
				body: `{"agent_id":"ratatoskr:sindra","end_user_id":"smoke-user","bifrost":{"endpoint_url":"http://10.100.10.50:8391","scope":null}}`,
			},
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if s := got.(SessionInfo); s.SessionID != "s-bound" || s.AgentID != "ratatoskr:sindra" {
					t.Errorf("got %+v", s)
				}
			},
		},
		{
			// Go has no None: a missing key is the empty string.
			seed: "TestCreateSessionBifrostBind::test_bind_without_consumer_key_raises_before_http",
			stub: stub{status: 201, body: `{}`},
			call: createSession("ratatoskr:sindra", WithBifrost(bind, "")),
			want: wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) {
				var missing *BifrostConsumerKeyMissingError
				if !errors.Is(err, ErrBifrostConsumerKeyMissing) || !errors.As(err, &missing) {
					t.Fatalf("err = %v, want BifrostConsumerKeyMissing", err)
				}
			},
		},
		{
			seed: "TestCreateSessionBifrostBind::test_bind_with_empty_consumer_key_raises_before_http",
			stub: stub{status: 201, body: `{}`},
			call: createSession("ratatoskr:sindra", WithEndUserID("u"), WithBifrost(bind, "")),
			want: wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) {
				if !errors.Is(err, ErrBifrostConsumerKeyMissing) {
					t.Fatalf("err = %v, want BifrostConsumerKeyMissing", err)
				}
			},
		},
		{
			seed: "TestCreateSessionBifrostBind::test_bind_handshake_failure_maps_to_502",
			stub: stub{status: 502, body: `{"error_code":"bifrost_handshake_failed","detail":{"bifrost_error":"bifrost.auth_rejected"}}`},
			call: createSession("ratatoskr:sindra", WithBifrost(bind, consumerKey)),
			want: wantRequest{method: "POST", path: "/sessions", auth: bearer(consumerKey),
				body: `{"agent_id":"ratatoskr:sindra","bifrost":{"endpoint_url":"http://10.100.10.50:8391","scope":null}}`},
			check: func(t *testing.T, _ any, err error) {
				var hs *BifrostHandshakeFailedError
				if !errors.As(err, &hs) {
					t.Fatalf("err = %v, want BifrostHandshakeFailed", err)
				}
				if hs.BifrostError != "bifrost.auth_rejected" {
					t.Errorf("BifrostError = %q", hs.BifrostError)
				}
				if !bytes.Contains(hs.Body, []byte("bifrost_handshake_failed")) {
					t.Errorf("Body = %q, want the raw 502 body", hs.Body)
				}
			},
		},
		{
			seed: "TestCreateSessionBifrostBind::test_bind_ephemeral_rejection_is_session_api_failed",
			stub: stub{status: 422, body: `{"error_code":"ephemeral_does_not_accept_bifrost"}`},
			call: createSession("echo", WithBifrost(bind, consumerKey)),
			want: wantRequest{method: "POST", path: "/sessions", auth: bearer(consumerKey),
				body: `{"agent_id":"echo","bifrost":{"endpoint_url":"http://10.100.10.50:8391","scope":null}}`},
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 422) },
		},
		{
			seed:  "TestCreateSessionBifrostBind::test_unbound_create_unchanged_no_auth_override",
			stub:  stub{status: 201, body: sessionBody("s1", "mimir", ts, `{}`)},
			call:  createSession("mimir"),
			want:  unboundCreate(`{"agent_id":"mimir"}`), // default bearer unchanged
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		// Beyond the seed.
		{
			seed: "extra::bind_with_scope_and_502_without_bifrost_error_is_generic",
			stub: stub{status: 502, body: `<html>bad gateway</html>`, contentType: "text/html"},
			call: createSession("a", WithBifrost(BifrostBinding{EndpointURL: "http://h:8390", Scope: ptr("tools")}, consumerKey)),
			want: wantRequest{method: "POST", path: "/sessions", auth: bearer(consumerKey),
				body: `{"agent_id":"a","bifrost":{"endpoint_url":"http://h:8390","scope":"tools"}}`},
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 502) },
		},
		{
			// The same 502 inside FastAPI's {"detail": {...}} envelope, as the real server sends
			// its other errors.
			seed: "extra::bind_handshake_failure_in_detail_envelope",
			stub: stub{status: 502, body: `{"detail":{"error_code":"bifrost_handshake_failed","detail":{"bifrost_error":"bifrost.unreachable"}}}`},
			call: createSession("ratatoskr:sindra", WithBifrost(bind, consumerKey)),
			want: wantRequest{method: "POST", path: "/sessions", auth: bearer(consumerKey),
				body: `{"agent_id":"ratatoskr:sindra","bifrost":{"endpoint_url":"http://10.100.10.50:8391","scope":null}}`},
			check: func(t *testing.T, _ any, err error) {
				var hs *BifrostHandshakeFailedError
				if !errors.As(err, &hs) || hs.BifrostError != "bifrost.unreachable" {
					t.Fatalf("err = %v, want BifrostHandshakeFailed(bifrost.unreachable)", err)
				}
				if !bytes.Contains(hs.Body, []byte("bifrost_handshake_failed")) {
					t.Errorf("Body = %q, want the raw 502 body", hs.Body)
				}
			},
		},
		{
			// INV-001: the default key is never sent on a bound create, not even when a caller
			// passes it as the consumer key.
			seed: "extra::bind_with_default_key_as_consumer_key",
			stub: stub{status: 201, body: sessionBody("s1", "a", ts, `{}`)},
			call: createSession("a", WithBifrost(bind, canaryKey)),
			want: wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) {
				if !errors.Is(err, ErrBifrostConsumerKeyMissing) {
					t.Fatalf("err = %v, want BifrostConsumerKeyMissing", err)
				}
			},
		},
		{
			seed: "extra::bind_502_with_string_detail_is_generic",
			stub: stub{status: 502, body: `{"detail":"Bad Gateway"}`},
			call: createSession("a", WithBifrost(bind, consumerKey)),
			want: wantRequest{method: "POST", path: "/sessions", auth: bearer(consumerKey),
				body: `{"agent_id":"a","bifrost":{"endpoint_url":"http://10.100.10.50:8391","scope":null}}`},
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 502) },
		},
		{
			seed:  "extra::bind_with_empty_endpoint_url",
			call:  createSession("a", WithBifrost(BifrostBinding{}, consumerKey)),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "extra::bind_with_unsendable_consumer_key",
			call:  createSession("a", WithBifrost(bind, "bad key\n")),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			// Bytes as the seed's client sends them: no HTML escaping of &, < and > (Go's default
			// would send \u0026, \u003c, \u003e).
			seed:  "extra::body_bytes_not_html_escaped",
			stub:  stub{status: 201, body: sessionBody("s1", "R&D <team>", ts, `{}`)},
			call:  createSession("R&D <team>", WithEndUserID("a>b")),
			want:  unboundCreate(`{"agent_id":"R&D <team>","end_user_id":"a>b"}`),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "extra::create_200_is_not_201",
			stub:  stub{status: 200, body: sessionBody("s1", "mimir", ts, `{}`)},
			call:  createSession("mimir"),
			want:  unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 200) },
		},
		{
			seed: "extra::create_ignores_server_name_archived_tags",
			stub: stub{status: 201, body: `{"session_id":"s1","agent_id":"mimir","message_count":3,"created_at":"c","last_active":"l","metadata":null,"name":"n","archived":true,"tags":["t"]}`},
			call: createSession("mimir"),
			want: unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				s := got.(SessionInfo)
				if s.Name != nil || s.Archived || len(s.Tags) != 0 || s.Tags == nil || s.Metadata == nil || *s.MessageCount != 3 {
					t.Errorf("got %+v, want create-origin defaults and message_count 3", s)
				}
			},
		},
		{
			seed: "extra::create_without_session_id_is_malformed",
			stub: stub{status: 201, body: `{"agent_id":"mimir"}`},
			call: createSession("mimir"),
			want: unboundCreate(`{"agent_id":"mimir"}`),
			check: func(t *testing.T, _ any, err error) {
				if !errors.Is(err, ErrMalformedResponse) {
					t.Fatalf("err = %v, want ErrMalformedResponse", err)
				}
			},
		},
	})
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// emptyPage is the body of an empty last page.
const emptyPage = `{"items":[],"next_cursor":null}`

// listItem is a GET /sessions item (the seed's _list_item helper).
const listItem = `{"session_id":"s1","agent_id":"mimir","created_at":"2026-04-15T12:00:00+00:00","last_active":"2026-04-15T12:05:00+00:00","metadata":{},"name":"Research session","archived":false,"tags":["work"]}`

// listReq is the GET /sessions request with query.
func listReq(query string) wantRequest {
	return wantRequest{method: "GET", path: "/sessions", query: query, auth: bearer(canaryKey)}
}

// TestListSessions ports TestListSessions.
func TestListSessions(t *testing.T) {
	big := strings.Repeat("x", 5000)
	runContractCases(t, []contractCase{
		{
			seed: "TestListSessions::test_explicit_null_list_defaults",
			stub: stub{body: `{"items":[{"session_id":"s1","agent_id":"mimir","created_at":"a","last_active":"b","metadata":{},"name":null,"archived":null,"tags":null}],"next_cursor":null}`},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				s := got.(SessionPage).Items[0]
				if s.Archived || s.Tags == nil || len(s.Tags) != 0 || s.Name != nil {
					t.Errorf("got %+v, want archived false, tags [], name nil", s)
				}
			},
		},
		{
			seed: "TestListSessions::test_happy_first_page",
			stub: stub{body: `{"items":[` + listItem + `],"next_cursor":"v1.eyJhYmMifQ"}`},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				want := SessionPage{
					Items: []SessionInfo{{
						SessionID: "s1", AgentID: "mimir", MessageCount: nil, // INV-002
						CreatedAt: "2026-04-15T12:00:00+00:00", LastActive: "2026-04-15T12:05:00+00:00",
						Metadata: map[string]any{}, Name: ptr("Research session"), Archived: false, Tags: []string{"work"},
					}},
					NextCursor: ptr("v1.eyJhYmMifQ"),
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v, want %+v", got, want)
				}
			},
		},
		{
			seed: "TestListSessions::test_happy_last_page",
			stub: stub{body: `{"items":[` + listItem + `],"next_cursor":null}`},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if p := got.(SessionPage); p.NextCursor != nil || len(p.Items) != 1 {
					t.Errorf("got %+v, want one item and no next cursor", p)
				}
			},
		},
		{
			seed: "TestListSessions::test_empty_results",
			stub: stub{body: emptyPage},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if !reflect.DeepEqual(got, SessionPage{Items: []SessionInfo{}, NextCursor: nil}) {
					t.Errorf("got %#v", got)
				}
			},
		},
		{
			// The seed's second call (the default) is "extra::include_archived_default_absent".
			seed:  "TestListSessions::test_include_archived_query",
			stub:  stub{body: emptyPage},
			call:  listSessions(WithIncludeArchived()),
			want:  listReq("include_archived=true"),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "extra::include_archived_default_absent",
			stub:  stub{body: emptyPage},
			call:  listSessions(),
			want:  listReq(""),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "TestListSessions::test_cursor_threaded",
			stub:  stub{body: emptyPage},
			call:  listSessions(WithCursor("opaque-from-prev-page")),
			want:  listReq("cursor=opaque-from-prev-page"),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "TestListSessions::test_limit_query",
			stub:  stub{body: emptyPage},
			call:  listSessions(WithLimit(10)),
			want:  listReq("limit=10"),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed: "TestListSessions::test_invalid_cursor_server",
			stub: stub{status: 422, body: `{"error_code":"cursor_invalid","message":"bad cursor"}`},
			call: listSessions(WithCursor("bogus")),
			want: listReq("cursor=bogus"),
			check: func(t *testing.T, _ any, err error) {
				var ic *InvalidCursorError
				if !errors.As(err, &ic) || ic.Raw != "bogus" {
					t.Fatalf("err = %v, want InvalidCursor(raw=bogus)", err)
				}
			},
		},
		{
			seed:  "TestListSessions::test_other_validation_failed",
			stub:  stub{status: 422, body: `{"error_code":"validation_failed","message":"limit out of range"}`},
			call:  listSessions(),
			want:  listReq(""),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 422) },
		},
		{
			seed: "TestListSessions::test_unexpected_status_truncates",
			stub: stub{status: 500, body: big, contentType: "-"},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, _ any, err error) {
				if f := wantAPIFailed(t, err, 500); string(f.Body) != big[:1024] {
					t.Errorf("Body has %d bytes, want the first 1024", len(f.Body))
				}
			},
		},
		{
			seed:  "TestListSessions::test_limit_below_one",
			call:  listSessions(WithLimit(0)),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "TestListSessions::test_limit_above_max",
			call:  listSessions(WithLimit(300)),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "TestListSessions::test_empty_cursor",
			call:  listSessions(WithCursor("")),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		// Beyond the seed.
		{
			seed:  "extra::limit_bounds_inclusive_and_all_params_sorted",
			stub:  stub{body: emptyPage},
			call:  listSessions(WithLimit(MaxSessionsLimit), WithCursor("v1.a+b/c="), WithIncludeArchived()),
			want:  listReq("cursor=v1.a%2Bb%2Fc%3D&include_archived=true&limit=200"),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "extra::limit_one_accepted",
			stub:  stub{body: emptyPage},
			call:  listSessions(WithLimit(1)),
			want:  listReq("limit=1"),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "extra::limit_above_max_by_one",
			call:  listSessions(WithLimit(MaxSessionsLimit + 1)),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed: "extra::cursor_invalid_without_cursor_passed",
			stub: stub{status: 422, body: `{"detail":{"error_code":"cursor_invalid"}}`},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, _ any, err error) {
				var ic *InvalidCursorError
				if !errors.As(err, &ic) || ic.Raw != "" {
					t.Fatalf("err = %v, want InvalidCursor(raw=\"\")", err)
				}
			},
		},
		{
			seed:  "extra::cursor_invalid_on_400_is_generic",
			stub:  stub{status: 400, body: `{"error_code":"cursor_invalid"}`},
			call:  listSessions(WithCursor("c")),
			want:  listReq("cursor=c"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 400) },
		},
		{
			// An empty next_cursor cannot be passed back (WithCursor refuses ""): it marks the
			// last page like null, instead of a next page that always fails.
			seed: "extra::empty_next_cursor_is_last_page",
			stub: stub{body: `{"items":[],"next_cursor":""}`},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if p := got.(SessionPage); p.NextCursor != nil {
					t.Errorf("NextCursor = %q, want nil", *p.NextCursor)
				}
			},
		},
		{
			seed:  "extra::cursor_invalid_as_string_detail_is_generic",
			stub:  stub{status: 422, body: `{"detail":"cursor_invalid"}`},
			call:  listSessions(WithCursor("c")),
			want:  listReq("cursor=c"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 422) },
		},
		{
			seed: "extra::page_without_items_is_malformed",
			stub: stub{body: `{"next_cursor":null}`},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, _ any, err error) {
				if !errors.Is(err, ErrMalformedResponse) {
					t.Fatalf("err = %v, want ErrMalformedResponse", err)
				}
			},
		},
		{
			seed: "extra::item_without_agent_id_is_malformed",
			stub: stub{body: `{"items":[{"session_id":"s1"}],"next_cursor":null}`},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, _ any, err error) {
				if !errors.Is(err, ErrMalformedResponse) {
					t.Fatalf("err = %v, want ErrMalformedResponse", err)
				}
			},
		},
		{
			seed: "extra::list_item_message_count_dropped",
			stub: stub{body: `{"items":[{"session_id":"s1","agent_id":"a","message_count":9}],"next_cursor":null}`},
			call: listSessions(),
			want: listReq(""),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if s := got.(SessionPage).Items[0]; s.MessageCount != nil || s.Metadata == nil {
					t.Errorf("got %+v, want nil message count and empty metadata", s)
				}
			},
		},
	})
}
