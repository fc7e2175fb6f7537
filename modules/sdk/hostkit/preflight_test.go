package hostkit

import (
	"context"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestSpecCheckCapabilities(t *testing.T) {
	caps := sdk.NewCapabilities(append(BaselineCapabilities(), sdk.CapToolFiles), false, false)
	tests := []struct {
		requires []string
		want     string
	}{
		{nil, ""},
		{[]string{sdk.CapDiscordHistory, sdk.CapToolFiles}, ""},
		{[]string{sdk.CapToolFiles, "x.v1", "y.v1"}, "Kimi module 'probe' requires unavailable capability 'x.v1'"},
	}
	for _, tt := range tests {
		spec := sdk.Spec{Name: "probe", RequiresCapabilities: tt.requires}
		checkErr(t, CheckCapabilities(spec, caps), tt.want)
	}
}

func TestValidateMigrations(t *testing.T) {
	up := func(context.Context, sdk.MigrationContext) error { return nil }
	tests := []struct {
		ms   []sdk.Migration
		want string
	}{
		{nil, ""},
		{[]sdk.Migration{{Name: "001_a", Up: up}, {Name: "002_b", Up: up}}, ""},
		{[]sdk.Migration{{Name: "", Up: up}}, "module 'm' migration 1 has no name"},
		{[]sdk.Migration{{Name: "a", Up: up}, {Name: "a", Up: up}}, "module 'm' declares migration 'a' twice"},
		{[]sdk.Migration{{Name: "a", Up: nil}}, "module 'm' migration 'a' has no function"},
	}
	for _, tt := range tests {
		checkErr(t, ValidateMigrations("m", tt.ms), tt.want)
	}
}
