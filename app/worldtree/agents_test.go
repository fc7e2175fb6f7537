package worldtree

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
)

// getReq is a GET of path with the default key.
func getReq(path string) wantRequest {
	return wantRequest{method: "GET", path: path, auth: bearer(canaryKey)}
}

// wantMalformed checks err is ErrMalformedResponse.
func wantMalformed(t *testing.T, _ any, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("err = %v, want ErrMalformedResponse", err)
	}
}

// TestListAgents ports TestListAgents.
func TestListAgents(t *testing.T) {
	call := func(ctx context.Context, c *Client) (any, error) { return c.ListAgents(ctx) }
	req := getReq("/agents")
	runContractCases(t, []contractCase{
		{
			seed: "TestListAgents::test_happy_full_shape",
			stub: stub{body: `[{"agent_id":"mimir","name":"Mimir","description":"Keeper of the Well of Knowledge.","version":"0.2.0",` +
				`"capabilities":["knowledge_base","semantic_search"],"supported_models":["default","heavy"],` +
				`"persona_traits":{"ocean":{"openness":0.7,"conscientiousness":0.9,"extraversion":0.1,"agreeableness":0.5,"neuroticism":0.3},"vibe":"contemplative"},` +
				`"ui_hints":{"icon":"well","color_hint":"#5b8aa3"}}]`},
			call: call,
			want: req,
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				want := []AgentInfo{{
					AgentID: "mimir", Name: "Mimir", Description: "Keeper of the Well of Knowledge.", Version: ptr("0.2.0"),
					Capabilities: []string{"knowledge_base", "semantic_search"}, SupportedModels: []string{"default", "heavy"},
					PersonaTraits: map[string]any{"ocean": map[string]any{"openness": 0.7, "conscientiousness": 0.9,
						"extraversion": 0.1, "agreeableness": 0.5, "neuroticism": 0.3}, "vibe": "contemplative"},
					UIHints: map[string]any{"icon": "well", "color_hint": "#5b8aa3"},
				}}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v\nwant %+v", got, want)
				}
			},
		},
		{
			seed: "TestListAgents::test_happy_minimum_shape",
			stub: stub{body: `[{"agent_id":"minimal","name":"Minimal Agent","description":"Just a sketch."}]`},
			call: call,
			want: req,
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				want := []AgentInfo{{AgentID: "minimal", Name: "Minimal Agent", Description: "Just a sketch.",
					Capabilities: []string{}, SupportedModels: []string{}, PersonaTraits: map[string]any{}, UIHints: map[string]any{}}}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %#v\nwant %#v", got, want)
				}
			},
		},
		{
			seed: "TestListAgents::test_happy_multi_agent",
			stub: stub{body: `[{"agent_id":"a","name":"A","description":"x"},{"agent_id":"b","name":"B","description":"y"},{"agent_id":"c","name":"C","description":"z"}]`},
			call: call,
			want: req,
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				var ids []string
				for _, a := range got.([]AgentInfo) {
					ids = append(ids, a.AgentID)
				}
				if !reflect.DeepEqual(ids, []string{"a", "b", "c"}) {
					t.Errorf("order = %v", ids)
				}
			},
		},
		{
			seed: "TestListAgents::test_happy_empty",
			stub: stub{body: `[]`},
			call: call,
			want: req,
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if a := got.([]AgentInfo); a == nil || len(a) != 0 {
					t.Errorf("got %#v, want empty non-nil", a)
				}
			},
		},
		{
			seed: "TestListAgents::test_omit_capabilities_empty_list",
			stub: stub{body: `[{"agent_id":"a","name":"A","description":"x","capabilities":[]}]`},
			call: call,
			want: req,
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if c := got.([]AgentInfo)[0].Capabilities; c == nil || len(c) != 0 {
					t.Errorf("Capabilities = %#v", c)
				}
			},
		},
		{
			seed:  "TestListAgents::test_500_raises_session_api_failed",
			stub:  stub{status: 500, body: "oops", contentType: "-"},
			call:  call,
			want:  req,
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 500) },
		},
		{
			seed:  "TestListAgents::test_401_raises_session_api_failed",
			stub:  stub{status: 401, body: `{"error":"unauthorized"}`, contentType: "-"},
			call:  call,
			want:  req,
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 401) },
		},
		// Beyond the seed.
		{seed: "extra::agents_object_not_array", stub: stub{body: `{"agents":[]}`}, call: call, want: req, check: wantMalformed},
		{seed: "extra::agents_null", stub: stub{body: `null`}, call: call, want: req, check: wantMalformed},
		{seed: "extra::agent_without_agent_id", stub: stub{body: `[{"name":"A","description":"x"}]`}, call: call, want: req, check: wantMalformed},
		{seed: "extra::agent_without_name", stub: stub{body: `[{"agent_id":"a","description":"x"}]`}, call: call, want: req, check: wantMalformed},
		{seed: "extra::agent_without_description", stub: stub{body: `[{"agent_id":"a","name":"A"}]`}, call: call, want: req, check: wantMalformed},
		{seed: "extra::agent_capabilities_wrong_type", stub: stub{body: `[{"agent_id":"a","name":"A","description":"x","capabilities":"all"}]`}, call: call, want: req, check: wantMalformed},
	})
}

// TestGetPersonaState ports TestGetPersonaState.
func TestGetPersonaState(t *testing.T) {
	call := func(id string) func(context.Context, *Client) (any, error) {
		return func(ctx context.Context, c *Client) (any, error) { return c.GetPersonaState(ctx, id) }
	}
	wantScope := func(t *testing.T, _ any, err error) {
		var sd *AuthScopeDeniedError
		if !errors.As(err, &sd) || sd.Scope != "persona.read" {
			t.Fatalf("err = %v, want AuthScopeDenied(persona.read)", err)
		}
	}
	wantNotConfigured := func(t *testing.T, _ any, err error) {
		var pnc *PersonaNotConfiguredError
		if !errors.As(err, &pnc) || pnc.AgentID != "domari" {
			t.Fatalf("err = %v, want PersonaNotConfigured(domari)", err)
		}
	}
	snapshot := `{"agent_id":"mimir","pad":{"pleasure":0.52,"arousal":0.47,"dominance":0.50},"dominant_emotion":"curiosity",` +
		`"emotions_active":[{"type":"curiosity","intensity":0.6,"decay_remaining_s":202.7}],` +
		`"baseline_pad":{"pleasure":0.50,"arousal":0.40,"dominance":0.50},"mood_drift":{"valence_delta":0.02,"arousal_delta":0.07},` +
		`"last_updated_at":"2026-05-25T22:30:18+00:00"}`
	runContractCases(t, []contractCase{
		{
			seed: "TestGetPersonaState::test_happy_full_snapshot",
			stub: stub{body: snapshot},
			call: call("mimir"),
			want: getReq("/agents/mimir/persona_state"),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				want := map[string]any{
					"agent_id": "mimir", "pad": map[string]any{"pleasure": 0.52, "arousal": 0.47, "dominance": 0.50},
					"dominant_emotion": "curiosity",
					"emotions_active":  []any{map[string]any{"type": "curiosity", "intensity": 0.6, "decay_remaining_s": 202.7}},
					"baseline_pad":     map[string]any{"pleasure": 0.50, "arousal": 0.40, "dominance": 0.50},
					"mood_drift":       map[string]any{"valence_delta": 0.02, "arousal_delta": 0.07},
					"last_updated_at":  "2026-05-25T22:30:18+00:00",
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %v\nwant %v", got, want)
				}
			},
		},
		{
			seed:  "TestGetPersonaState::test_persona_not_configured_404",
			stub:  stub{status: 404, body: `{"error_code":"persona_not_configured","message":"no persona"}`},
			call:  call("domari"),
			want:  getReq("/agents/domari/persona_state"),
			check: wantNotConfigured,
		},
		{
			seed: "TestGetPersonaState::test_agent_not_available_404",
			stub: stub{status: 404, body: `{"error_code":"agent_not_available","message":"unknown agent"}`},
			call: call("bogus"),
			want: getReq("/agents/bogus/persona_state"),
			check: func(t *testing.T, _ any, err error) {
				var ana *AgentNotAvailableError
				if !errors.As(err, &ana) || ana.AgentID != "bogus" {
					t.Fatalf("err = %v, want AgentNotAvailable(bogus)", err)
				}
			},
		},
		{
			seed:  "TestGetPersonaState::test_auth_scope_denied_403",
			stub:  stub{status: 403, body: `{"error_code":"auth_scope_denied","message":"missing persona.read"}`},
			call:  call("mimir"),
			want:  getReq("/agents/mimir/persona_state"),
			check: wantScope,
		},
		{
			seed:  "TestGetPersonaState::test_404_unknown_error_code_falls_through",
			stub:  stub{status: 404, body: `{"error_code":"novel_404"}`},
			call:  call("mimir"),
			want:  getReq("/agents/mimir/persona_state"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 404) },
		},
		{
			seed:  "TestGetPersonaState::test_500_unexpected_status",
			stub:  stub{status: 500, body: "boom", contentType: "-"},
			call:  call("mimir"),
			want:  getReq("/agents/mimir/persona_state"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 500) },
		},
		{
			seed:  "TestGetPersonaState::test_auth_scope_denied_detail_envelope",
			stub:  stub{status: 403, body: `{"detail":{"error_code":"auth_scope_denied","message":"Missing required scope: persona.read"}}`},
			call:  call("mimir"),
			want:  getReq("/agents/mimir/persona_state"),
			check: wantScope,
		},
		{
			seed:  "TestGetPersonaState::test_persona_not_configured_detail_envelope",
			stub:  stub{status: 404, body: `{"detail":{"error_code":"persona_not_configured"}}`},
			call:  call("domari"),
			want:  getReq("/agents/domari/persona_state"),
			check: wantNotConfigured,
		},
		// Beyond the seed.
		{
			seed:  "extra::owner_namespaced_agent_id_path",
			stub:  stub{body: `{}`},
			call:  call("alice:wizard"),
			want:  getReq("/agents/alice:wizard/persona_state"),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "extra::scope_denied_code_on_401_falls_through",
			stub:  stub{status: 401, body: `{"error_code":"auth_scope_denied"}`},
			call:  call("mimir"),
			want:  getReq("/agents/mimir/persona_state"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 401) },
		},
		{
			seed:  "extra::persona_not_configured_on_403_falls_through",
			stub:  stub{status: 403, body: `{"detail":{"error_code":"persona_not_configured"}}`},
			call:  call("mimir"),
			want:  getReq("/agents/mimir/persona_state"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 403) },
		},
		{
			seed:  "extra::string_detail_tolerated",
			stub:  stub{status: 404, body: `{"detail":"Not Found"}`},
			call:  call("mimir"),
			want:  getReq("/agents/mimir/persona_state"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 404) },
		},
		{
			seed: "extra::agent_not_available_detail_envelope",
			stub: stub{status: 404, body: `{"detail":{"error_code":"agent_not_available","message":"unknown agent"}}`},
			call: call("bogus"),
			want: getReq("/agents/bogus/persona_state"),
			check: func(t *testing.T, _ any, err error) {
				var ana *AgentNotAvailableError
				if !errors.As(err, &ana) || ana.AgentID != "bogus" {
					t.Fatalf("err = %v, want AgentNotAvailable(bogus)", err)
				}
			},
		},
		{
			seed:  "extra::scope_denied_as_string_detail_is_generic",
			stub:  stub{status: 403, body: `{"detail":"auth_scope_denied"}`},
			call:  call("mimir"),
			want:  getReq("/agents/mimir/persona_state"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 403) },
		},
		{
			seed:  "extra::empty_agent_id",
			call:  call(""),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{seed: "extra::persona_state_array", stub: stub{body: `[1,2]`}, call: call("mimir"), want: getReq("/agents/mimir/persona_state"), check: wantMalformed},
		{seed: "extra::persona_state_null", stub: stub{body: `null`}, call: call("mimir"), want: getReq("/agents/mimir/persona_state"), check: wantMalformed},
	})
}

// TestGetMe ports TestGetMe.
func TestGetMe(t *testing.T) {
	call := func(ctx context.Context, c *Client) (any, error) { return c.GetMe(ctx) }
	runContractCases(t, []contractCase{
		{
			seed: "TestGetMe::test_happy_authenticated",
			stub: stub{body: `{"user_id":"alice","scopes":["conversations.read","conversations.write"],"tier":"user","key_id":"a1b2c3d4","key_label":"alice phone"}`},
			call: call,
			want: getReq("/me"),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				want := map[string]any{"user_id": "alice", "scopes": []any{"conversations.read", "conversations.write"},
					"tier": "user", "key_id": "a1b2c3d4", "key_label": "alice phone"}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %v", got)
				}
			},
		},
		{
			seed: "TestGetMe::test_anonymous_dev_mode",
			stub: stub{body: `{"user_id":"anonymous","scopes":["conversations.read"],"tier":"anonymous"}`},
			call: call,
			want: getReq("/me"),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				m := got.(map[string]any)
				if _, ok := m["key_id"]; ok || m["tier"] != "anonymous" {
					t.Errorf("got %v, want tier anonymous and no key_id", m)
				}
			},
		},
		{
			seed:  "TestGetMe::test_401_raises_session_api_failed",
			stub:  stub{status: 401, body: `{"detail":"auth_invalid"}`},
			call:  call,
			want:  getReq("/me"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 401) },
		},
	})
}

// TestGetCapabilities ports TestGetCapabilities.
func TestGetCapabilities(t *testing.T) {
	call := func(ctx context.Context, c *Client) (any, error) { return c.GetCapabilities(ctx) }
	runContractCases(t, []contractCase{
		{
			seed: "TestGetCapabilities::test_happy",
			stub: stub{body: `{"ephemeral_templates":{"echo":{"allowed_models":["glm5-turbo","glm4.7"],"default_model":"glm5-turbo","system_prompt_max_bytes":32768}}}`},
			call: call,
			want: getReq("/capabilities"),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				echo := got.(map[string]any)["ephemeral_templates"].(map[string]any)["echo"].(map[string]any)
				if echo["default_model"] != "glm5-turbo" || echo["system_prompt_max_bytes"] != float64(32768) {
					t.Errorf("echo = %v", echo)
				}
			},
		},
		{
			seed:  "TestGetCapabilities::test_non_200_raises",
			stub:  stub{status: 500, body: "boom", contentType: "-"},
			call:  call,
			want:  getReq("/capabilities"),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 500) },
		},
	})
}

// TestTransientCharacters ports TestTransientCharacters.
func TestTransientCharacters(t *testing.T) {
	create := func(ch, st map[string]any) func(context.Context, *Client) (any, error) {
		return func(ctx context.Context, c *Client) (any, error) { return c.CreateCharacter(ctx, ch, st) }
	}
	createReq := func(body string) wantRequest {
		return wantRequest{method: "POST", path: "/characters", auth: bearer(canaryKey), body: body}
	}
	getState := func(id string) func(context.Context, *Client) (any, error) {
		return func(ctx context.Context, c *Client) (any, error) { return c.GetCharacterState(ctx, id) }
	}
	del := func(id string) func(context.Context, *Client) (any, error) {
		return func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteCharacter(ctx, id) }
	}
	runContractCases(t, []contractCase{
		{
			seed: "TestTransientCharacters::test_list_models",
			stub: stub{body: `{"items":[{"name":"fast","thinking":false}]}`},
			call: func(ctx context.Context, c *Client) (any, error) { return c.ListCharacterModels(ctx) },
			want: getReq("/models/available-for-characters"),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				want := map[string]any{"items": []any{map[string]any{"name": "fast", "thinking": false}}}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %v", got)
				}
			},
		},
		{
			// "state" is sent as null, not omitted.
			seed: "TestTransientCharacters::test_create_body_and_response",
			stub: stub{status: 201, body: `{"character_id":"char_x","ttl_expires_at":"t"}`},
			call: create(map[string]any{"schema_version": "1", "name": "H"}, nil),
			want: createReq(`{"character":{"name":"H","schema_version":"1"},"state":null}`),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if got.(map[string]any)["character_id"] != "char_x" {
					t.Errorf("got %v", got)
				}
			},
		},
		{
			seed: "TestTransientCharacters::test_get_state",
			stub: stub{body: `{"schema_version":"1","pad":[0.4,0.1,-0.2]}`},
			call: getState("char_x"),
			want: getReq("/characters/char_x/state"),
			check: func(t *testing.T, got any, err error) {
				wantOK(t, err)
				if pad := got.(map[string]any)["pad"]; !reflect.DeepEqual(pad, []any{0.4, 0.1, -0.2}) {
					t.Errorf("pad = %v", pad)
				}
			},
		},
		{
			seed:  "TestTransientCharacters::test_delete_204",
			stub:  stub{status: http.StatusNoContent},
			call:  del("char_x"),
			want:  wantRequest{method: "DELETE", path: "/characters/char_x", auth: bearer(canaryKey)},
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "TestTransientCharacters::test_create_403_scope",
			stub:  stub{status: 403, body: `{"error_code":"auth_scope_denied"}`},
			call:  create(map[string]any{"name": "H"}, nil),
			want:  createReq(`{"character":{"name":"H"},"state":null}`),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 403) },
		},
		// Beyond the seed.
		{
			seed:  "extra::create_character_with_state",
			stub:  stub{status: 201, body: `{"character_id":"c"}`},
			call:  create(map[string]any{"name": "H"}, map[string]any{"pad": []any{0.1, 0.2, 0.3}}),
			want:  createReq(`{"character":{"name":"H"},"state":{"pad":[0.1,0.2,0.3]}}`),
			check: func(t *testing.T, _ any, err error) { wantOK(t, err) },
		},
		{
			seed:  "extra::create_character_200_is_not_201",
			stub:  stub{status: 200, body: `{"character_id":"c"}`},
			call:  create(map[string]any{"name": "H"}, nil),
			want:  createReq(`{"character":{"name":"H"},"state":null}`),
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 200) },
		},
		{
			seed:  "extra::create_character_nil",
			call:  create(nil, nil),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "extra::delete_404",
			stub:  stub{status: 404, body: `{"detail":{"error_code":"character_not_found"}}`},
			call:  del("char_x"),
			want:  wantRequest{method: "DELETE", path: "/characters/char_x", auth: bearer(canaryKey)},
			check: func(t *testing.T, _ any, err error) { wantAPIFailed(t, err, 404) },
		},
		{
			seed:  "extra::delete_empty_id",
			call:  del(""),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
		{
			seed:  "extra::get_state_empty_id",
			call:  getState("."),
			want:  wantRequest{none: true},
			check: func(t *testing.T, _ any, err error) { wantInvalidArgument(t, err) },
		},
	})
}

// TestEndpointForPlane ports TestEndpointForPlane (a pure function, no server).
func TestEndpointForPlane(t *testing.T) {
	tests := []struct {
		seed, plane, host, want string
		wantErr                 error
	}{
		{seed: "TestEndpointForPlane::test_memory_plane_maps_to_8391", plane: "memory", host: "10.100.10.50", want: "http://10.100.10.50:8391"},
		{seed: "TestEndpointForPlane::test_affect_plane_maps_to_8390", plane: "affect", host: "10.100.10.50", want: "http://10.100.10.50:8390"},
		{seed: "TestEndpointForPlane::test_combined_plane_maps_to_8392", plane: "combined", host: "10.100.10.50", want: "http://10.100.10.50:8392"},
		{seed: "TestEndpointForPlane::test_unknown_plane_raises_value_error", plane: "persona", host: "10.100.10.50", wantErr: ErrUnknownPlane},
		{seed: "extra::hostname", plane: "memory", host: "bifrost.lan", want: "http://bifrost.lan:8391"},
		{seed: "extra::ipv6_bracketed", plane: "affect", host: "fd00::1", want: "http://[fd00::1]:8390"},
		{seed: "extra::empty_plane", plane: "", host: "h", wantErr: ErrUnknownPlane},
		{seed: "extra::case_matters", plane: "Memory", host: "h", wantErr: ErrUnknownPlane},
		{seed: "extra::empty_host", plane: "memory", host: "", wantErr: ErrInvalidArgument},
		{seed: "extra::host_with_port", plane: "memory", host: "h:1", wantErr: ErrInvalidArgument},
		{seed: "extra::host_with_path", plane: "memory", host: "h/x", wantErr: ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.seed, func(t *testing.T) {
			got, err := EndpointForPlane(tt.plane, tt.host)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
