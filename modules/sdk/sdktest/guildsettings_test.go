package sdktest

import (
	"context"
	"slices"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func testSchema() *sdk.GuildSettingsSchema {
	return &sdk.GuildSettingsSchema{
		Fields: []sdk.GuildSettingField{
			{Name: "channel", Kind: sdk.GuildSettingID},
			{Name: "tier", Kind: sdk.GuildSettingEnum, Choices: []string{"member", "staff"}, Default: "member"},
		},
		Validate: func(v map[string]any) []string {
			if v["tier"] == "staff" && v["channel"] != nil {
				return []string{"no channel for staff"}
			}
			return nil
		},
	}
}

func TestGuildSettingsEvaluateDocumentsLikeTheHost(t *testing.T) {
	ctx := context.Background()
	g := NewFakeGuildSettings(testSchema())
	g.Set(100, map[string]any{"channel": 900})

	snap, err := g.Get(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if snap.ID("channel") != 900 || snap.String("tier") != "member" || !snap.Valid || len(snap.Revision) != 16 {
		t.Errorf("snapshot = %+v: want the id coerced to uint64 and the default applied", snap)
	}
	if missing, _ := g.Get(ctx, 300); missing.Revision != "" || !missing.Valid || missing.String("tier") != "member" {
		t.Errorf("guild without a document = %+v", missing)
	}

	g.Set(100, map[string]any{"tier": "staff"})
	snap, _ = g.Get(ctx, 100)
	if snap.Valid || !slices.Equal(snap.Errors, []string{"no channel for staff"}) || g.IsEnabled(ctx, 100) {
		t.Errorf("cross-field error not applied: %+v", snap)
	}
	g.Set(100, map[string]any{"tier": nil, "bogus": true})
	if snap, _ := g.Get(ctx, 100); !slices.Equal(snap.Errors, []string{"unknown setting 'bogus'"}) {
		t.Errorf("unknown key = %+v", snap.Errors)
	}
	if doc := g.Document(100); doc["channel"] != 900 || doc["bogus"] != true {
		t.Errorf("document = %v", doc)
	}
}

func TestGuildSettingsOnChangeAndEnablement(t *testing.T) {
	ctx := context.Background()
	g := NewFakeGuildSettings(nil) // raw values without a schema
	var changed []uint64
	reg := g.OnChange(func(id uint64) { changed = append(changed, id) })

	g.Set(200, nil)
	g.Set(100, map[string]any{"x": 1})
	if !slices.Equal(changed, []uint64{200, 100}) {
		t.Errorf("changes = %v", changed)
	}
	if got := g.GuildIDs(); !slices.Equal(got, []uint64{100, 200}) {
		t.Errorf("guild ids = %v, want sorted", got)
	}
	if snap, _ := g.Get(ctx, 100); snap.Values["x"] != 1 {
		t.Errorf("raw values = %v", snap.Values)
	}
	reg.Close()
	g.Set(100, nil)
	if len(changed) != 2 || g.Callbacks() != 0 {
		t.Errorf("a closed callback still fired: %v", changed)
	}

	if !g.IsEnabled(ctx, 100) {
		t.Fatal("a valid guild is not enabled")
	}
	g.SetErrors(100, "broken")
	if g.IsEnabled(ctx, 100) {
		t.Error("a guild with errors is enabled")
	}
	g.SetErrors(100)
	g.SetEnabled(false)
	if g.IsEnabled(ctx, 100) {
		t.Error("a disabled module is enabled")
	}
	g.SetEnabled(true)
	g.SetActive(func(id uint64) bool { return id == 200 })
	if g.IsEnabled(ctx, 100) || !g.IsEnabled(ctx, 200) || !slices.Equal(g.GuildIDs(), []uint64{200}) {
		t.Error("the active-guild predicate is not applied")
	}
}

// Documents are copied in and out: the caller's slice given to Set, a
// snapshot's values and Document's result are all independent.
func TestGuildSettingsValuesAreCopies(t *testing.T) {
	ctx := context.Background()
	for _, schema := range []*sdk.GuildSettingsSchema{nil, {Fields: []sdk.GuildSettingField{{Name: "ids", Kind: sdk.GuildSettingIDList}}}} {
		g := NewFakeGuildSettings(schema)
		ids := []uint64{1}
		g.Set(100, map[string]any{"ids": ids})
		ids[0] = 9
		snap, _ := g.Get(ctx, 100)
		snap.Values["ids"].([]uint64)[0] = 8
		g.Document(100)["ids"].([]uint64)[0] = 7
		snap, _ = g.Get(ctx, 100)
		if got := snap.Values["ids"].([]uint64); got[0] != 1 {
			t.Errorf("schema %v: ids = %v, want [1]", schema != nil, got)
		}
		if got := g.Document(100)["ids"].([]uint64); got[0] != 1 {
			t.Errorf("schema %v: stored document ids = %v, want [1]", schema != nil, got)
		}
	}
}
