package sdktest

import (
	"context"
	"errors"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestActivationCapabilitiesSoftDisable runs a module on a host without its
// activation capabilities: it is disabled with the reference's reason, never
// created nor migrated, and Start refuses. With the capabilities it runs.
func TestActivationCapabilitiesSoftDisable(t *testing.T) {
	tests := []struct {
		name   string
		opts   []Option
		reason string
	}{
		{"all advertised", []Option{WithCapabilities(sdk.CapToolFiles)}, ""},
		{"one missing", nil, "missing activation capability tools.files.v1"},
		{"two missing", []Option{WithoutCapabilities(sdk.CapDiscordHistory)}, "missing activation capability discord.history.v1, tools.files.v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var created, migrated int
			spec := sdk.Spec{
				Name: "probe", Version: "1", APIVersion: sdk.APIVersion,
				ActivationCapabilities: []string{sdk.CapDiscordHistory, sdk.CapToolFiles},
				Create: func(sdk.LoadContext) (sdk.Module, error) {
					created++
					return &probe{migrations: []sdk.Migration{{Name: "001", Up: func(context.Context, sdk.MigrationContext) error {
						migrated++
						return nil
					}}}}, nil
				},
			}
			rt, err := TryNewRuntime(t, spec, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if rt.Disabled != tt.reason {
				t.Fatalf("Disabled = %q, want %q", rt.Disabled, tt.reason)
			}
			if tt.reason == "" {
				if created != 1 || migrated != 1 {
					t.Fatalf("created %d migrated %d, want 1 and 1", created, migrated)
				}
				rt.Start(context.Background())
				return
			}
			if created != 0 || migrated != 0 || rt.Module != nil || rt.RT != nil {
				t.Fatalf("a disabled module was created %d / migrated %d times (module %v)", created, migrated, rt.Module)
			}
			if err := rt.StartErr(context.Background()); err == nil {
				t.Fatal("a disabled module started")
			}
		})
	}
}

// TestWithoutCapabilitiesFailsRequired: a required capability the host does
// not advertise fails preflight with the reference's message, returned by
// TryNewRuntime instead of failing the test.
func TestWithoutCapabilitiesFailsRequired(t *testing.T) {
	spec := sdk.Spec{
		Name: "probe", Version: "1", APIVersion: sdk.APIVersion,
		RequiresCapabilities: []string{sdk.CapProposals},
		Create:               func(sdk.LoadContext) (sdk.Module, error) { return &probe{}, nil },
	}
	_, err := TryNewRuntime(t, spec, WithoutCapabilities(sdk.CapProposals))
	var mce *sdk.ModuleContractError
	if !errors.As(err, &mce) || err.Error() != "Kimi module 'probe' requires unavailable capability 'proposals.v2'" {
		t.Fatalf("err = %v", err)
	}
}

// TestTryNewRuntimeReturnsErrors: preflight, settings and create failures
// come back as errors (the test goes on).
func TestTryNewRuntimeReturnsErrors(t *testing.T) {
	base := func() sdk.Spec {
		return sdk.Spec{
			Name: "probe", Version: "1", APIVersion: sdk.APIVersion,
			Settings: &sdk.SettingsDefinition{Fields: []sdk.SettingField{{Name: "limit", Kind: sdk.SettingInt, Default: 1, Max: 5, HasMax: true}}},
			Create:   func(sdk.LoadContext) (sdk.Module, error) { return &probe{}, nil },
		}
	}
	preflight := base()
	preflight.APIVersion = 1
	create := base()
	create.Create = func(sdk.LoadContext) (sdk.Module, error) { return nil, errors.New("no token") }
	tests := []struct {
		name string
		spec sdk.Spec
		opts []Option
		want string
	}{
		{"preflight", preflight, nil, "Kimi module 'probe' requires module API 1; core provides 2"},
		{"settings", base(), []Option{WithSettings(map[string]any{"limit": 6})}, "module 'probe' setting 'limit': must be at most 5"},
		{"create", create, nil, "create probe: no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, err := TryNewRuntime(t, tt.spec, tt.opts...)
			if err == nil || err.Error() != tt.want || rt != nil {
				t.Fatalf("err = %v (runtime %v), want %q", err, rt, tt.want)
			}
		})
	}
}
