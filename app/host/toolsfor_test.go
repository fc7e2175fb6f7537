package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// toolsForRig is a host with two modules whose tools cover every gate:
// "gate" (member, regular, staff, owner-only, DM, restricted to guild 1,
// a searchable one), "side" (a member and a staff tool) and "broken" (a
// member tool; its Start fails, so it never runs). Guilds 1 and 3 are
// active, 2 is not; user 9 is the owner.
func toolsForRig(t *testing.T) (*rig, []string) {
	t.Helper()
	ctx := context.Background()
	const owner = 9
	gateTools := []sdk.Tool{
		{Name: "gate_member", Description: "d"},
		{Name: "gate_staff", Description: "d", MinTier: sdk.TierStaff},
		{Name: "gate_regular", Description: "d", MinTier: sdk.TierRegular},
		{Name: "gate_owner", Description: "d", OwnerOnly: true},
		{Name: "gate_dm", Description: "d", AllowOutsideGuilds: true},
		{Name: "gate_restricted", Description: "d", RestrictGuilds: true, GuildIDs: []uint64{1}},
		{Name: "gate_search", Description: "d", Searchable: true},
	}
	sideTools := []sdk.Tool{
		{Name: "side_member", Description: "d"},
		{Name: "side_staff", Description: "d", MinTier: sdk.TierStaff},
	}
	var names []string
	mk := func(name string, tools []sdk.Tool) sdk.Spec {
		mod := &testModule{}
		if name == "broken" {
			mod.start = func(context.Context, *sdk.Runtime) error { return errors.New("broken on purpose") }
		}
		var declared []string
		for i := range tools {
			n := tools[i].Name
			tools[i].Handler = func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) { return n, nil }
			declared = append(declared, n)
		}
		names = append(names, declared...)
		s := spec(name, mod, func(s *sdk.Spec) { s.Tools = declared })
		s.Create = func(c sdk.LoadContext) (sdk.Module, error) {
			for _, tool := range tools {
				if err := c.Tools().Register(tool); err != nil {
					return nil, err
				}
			}
			c.RegisterToolLabels(map[string]string{"gate_member": "Checking the gate"})
			return mod, nil
		}
		return s
	}
	specs := []sdk.Spec{mk("gate", gateTools), mk("side", sideTools), mk("broken", []sdk.Tool{{Name: "broken_member", Description: "d"}})}
	st := openStore(t)
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: specs, Trust: guildcfg.TrustSettings{OwnerUserID: owner}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(guilds.Close)
	r := newRig(t, specs, func(o *Options) { o.Guilds = guilds })
	r.guilds = guilds
	r.start(t)
	r.activate(t, 1)
	r.activate(t, 3)
	return r, append(names, "gate_unknown")
}

// ran is the set of tools RunTool runs for tc, by name.
func ran(t *testing.T, h *Host, tc sdk.ToolContext, names []string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		if _, err := h.RunTool(context.Background(), n, tc, json.RawMessage(`{}`)); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func listed(h *Host, tc sdk.ToolContext) []string {
	var out []string
	for _, ti := range h.ToolsFor(tc) {
		out = append(out, ti.Name)
	}
	return out
}

// TestToolsForListsExactlyWhatRunToolRuns: for every caller (tiers ×
// owner × guild active, inactive, restricted, a DM) and with one module
// failed to start and then all closed, ToolsFor(tc) is exactly the set of tools RunTool(tc) runs, and
// the listing is what the gates say: a member never sees a staff tool,
// owner-only tools only the owner, a DM only AllowOutsideGuilds tools, a
// restricted tool only its guild, a stopped module's tools nobody.
func TestToolsForListsExactlyWhatRunToolRuns(t *testing.T) {
	r, names := toolsForRig(t)
	all := []string{"gate_dm", "gate_member", "gate_owner", "gate_regular", "gate_restricted", "gate_search", "gate_staff", "side_member", "side_staff"}
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(drop, n) })
	}
	cases := []struct {
		name string
		tc   sdk.ToolContext
		want []string
	}{
		{"member", sdk.ToolContext{GuildID: 1, UserID: 5}, without("gate_owner", "gate_regular", "gate_staff", "side_staff")},
		{"explicit member", sdk.ToolContext{GuildID: 1, UserID: 5, TrustTier: sdk.TierMember}, without("gate_owner", "gate_regular", "gate_staff", "side_staff")},
		{"regular", sdk.ToolContext{GuildID: 1, UserID: 5, TrustTier: sdk.TierRegular}, without("gate_owner", "gate_staff", "side_staff")},
		{"staff", sdk.ToolContext{GuildID: 1, UserID: 5, TrustTier: sdk.TierStaff}, without("gate_owner")},
		{"owner as member", sdk.ToolContext{GuildID: 1, UserID: 9}, without("gate_regular", "gate_staff", "side_staff")},
		{"owner as staff", sdk.ToolContext{GuildID: 1, UserID: 9, TrustTier: sdk.TierStaff}, all},
		{"staff outside the restricted guild", sdk.ToolContext{GuildID: 3, UserID: 5, TrustTier: sdk.TierStaff}, without("gate_owner", "gate_restricted")},
		{"inactive guild", sdk.ToolContext{GuildID: 2, UserID: 9, TrustTier: sdk.TierStaff}, nil},
		{"DM member", sdk.ToolContext{UserID: 5}, []string{"gate_dm"}},
		{"DM owner as staff", sdk.ToolContext{UserID: 9, TrustTier: sdk.TierStaff}, []string{"gate_dm"}},
	}
	check := func(t *testing.T, want []string, tc sdk.ToolContext) {
		t.Helper()
		got := listed(r.h, tc)
		if runs := ran(t, r.h, tc, names); !slices.Equal(got, runs) {
			t.Fatalf("ToolsFor = %v, RunTool runs %v", got, runs)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ToolsFor = %v, want %v", got, want)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c.want, c.tc) })
	}
	if st := r.status(t, "broken"); st.State == StateRunning {
		t.Fatalf("broken is %s, want not running", st.State)
	}
	if err := r.h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run("closed/"+c.name, func(t *testing.T) { check(t, nil, c.tc) })
	}
}

// TestToolsForCarriesWhatTheAssistantNeeds: a listing has the module, the
// encoded schema, the flags and the label (the registered one, else the
// title-cased name).
func TestToolsForCarriesWhatTheAssistantNeeds(t *testing.T) {
	r, _ := toolsForRig(t)
	byName := map[string]*ToolInfo{}
	for _, ti := range r.h.ToolsFor(sdk.ToolContext{GuildID: 1, UserID: 9, TrustTier: sdk.TierStaff}) {
		byName[ti.Name] = ti
	}
	for _, c := range []struct {
		name, module, label string
		searchable          bool
	}{
		{"gate_member", "gate", "Checking the gate", false},
		{"gate_search", "gate", "Gate Search", true},
		{"side_staff", "side", "Side Staff", false},
	} {
		ti, ok := byName[c.name]
		if !ok {
			t.Fatalf("%s not listed", c.name)
		}
		if ti.Module != c.module || ti.Label != c.label || ti.Searchable != c.searchable || ti.TrustedOutput || string(ti.Schema) != `{"type":"object","properties":{}}` {
			t.Errorf("%s = %+v (schema %s)", c.name, ti, ti.Schema)
		}
	}
}

func TestTitleLabel(t *testing.T) {
	for in, want := range map[string]string{"give_kudos": "Give Kudos", "hello_member": "Hello Member", "x": "X", "a__b": "A B"} {
		if got := TitleLabel(in); got != want {
			t.Errorf("TitleLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkToolsFor: one caller's visible tools among 200 tools across 20
// modules (three in ten staff-tier, one in ten restricted to another guild: 120 visible),
// beside a baseline in the same run: copying the same 200 listings without
// any gate (the value copies a caller would make of the shared listings).
func BenchmarkToolsFor(b *testing.B) {
	ctx := context.Background()
	var specs []sdk.Spec
	for m := range 20 {
		name := fmt.Sprintf("bench%02d", m)
		var tools []sdk.Tool
		for i := range 10 {
			tool := sdk.Tool{Name: fmt.Sprintf("%s_tool%02d", name, i), Description: "d",
				Parameters: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}},
				Handler:    func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) { return "", nil }}
			switch {
			case i%4 == 0:
				tool.MinTier = sdk.TierStaff
			case i == 9:
				tool.RestrictGuilds, tool.GuildIDs = true, []uint64{77}
			}
			tools = append(tools, tool)
		}
		mod := &testModule{}
		s := spec(name, mod, func(s *sdk.Spec) {
			for _, tool := range tools {
				s.Tools = append(s.Tools, tool.Name)
			}
		})
		s.Create = func(c sdk.LoadContext) (sdk.Module, error) {
			for _, tool := range tools {
				if err := c.Tools().Register(tool); err != nil {
					return nil, err
				}
			}
			return mod, nil
		}
		specs = append(specs, s)
	}
	st := openStore(b)
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: specs})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(guilds.Close)
	var sel []string
	for _, s := range specs {
		sel = append(sel, s.Name)
	}
	h, err := New(ctx, Options{Specs: specs, Store: st, Guilds: guilds, Selection: sel, SelectionSet: true,
		Logger: slog.New(slog.DiscardHandler), storage: &memStorage{fail: map[string]error{}}, events: &memBus{}})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close(ctx) })
	doc, err := guilds.Document(ctx, guildcfg.GuildTarget(1))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := guilds.Write(ctx, guildcfg.GuildTarget(1), "---\nbot_active: true\n---\n", doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
		b.Fatal(err)
	}
	tc := sdk.ToolContext{GuildID: 1, UserID: 5, TrustTier: sdk.TierRegular}
	if n := len(h.ToolsFor(tc)); n != 120 {
		b.Fatalf("visible = %d, want 120 of 200", n)
	}
	all := h.tools.order
	var baseline float64 // ns/op of the copy, for the ratio
	b.Run("baseline_copy200", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := make([]ToolInfo, 0, len(all))
			for _, e := range all {
				out = append(out, *e.info)
			}
			if len(out) != 200 {
				b.Fatal(len(out))
			}
		}
		baseline = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("ToolsFor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(h.ToolsFor(tc)) != 120 {
				b.Fatal("visible changed")
			}
		}
		if baseline > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/baseline, "x_baseline")
		}
	})
}
