package sdktest

import (
	"context"
	"maps"
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
	reg := g.OnChange(func(_ context.Context, id uint64) { changed = append(changed, id) })

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

// TestGuildSettingsReplaceSilently: ReplaceSilently swaps the whole document
// without calling OnChange, so a module's cache built from callbacks goes
// stale while Get already sees the new document.
func TestGuildSettingsReplaceSilently(t *testing.T) {
	tests := []struct {
		name     string
		doc      map[string]any
		want     map[string]any // the stored document afterwards; nil: none
		wantTier string         // what Get reports (schema default when unset)
	}{
		{"replaces, not merges", map[string]any{"tier": "staff"}, map[string]any{"tier": "staff"}, "staff"},
		{"empty document", map[string]any{}, map[string]any{}, "member"},
		{"nil values are dropped", map[string]any{"channel": 901, "tier": nil}, map[string]any{"channel": 901}, "member"},
		{"nil removes the document", nil, nil, "member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			g := NewFakeGuildSettings(&sdk.GuildSettingsSchema{Fields: []sdk.GuildSettingField{
				{Name: "channel", Kind: sdk.GuildSettingID},
				{Name: "tier", Kind: sdk.GuildSettingEnum, Choices: []string{"member", "staff"}, Default: "member"},
			}})
			g.Set(100, map[string]any{"channel": 900})
			before, _ := g.Get(ctx, 100)

			// A module that caches the channel and refreshes it on OnChange.
			cached := before.ID("channel")
			fired := 0
			g.OnChange(func(_ context.Context, guildID uint64) {
				fired++
				snap, _ := g.Get(ctx, guildID)
				cached = snap.ID("channel")
			})

			g.ReplaceSilently(100, tt.doc)

			if fired != 0 {
				t.Errorf("OnChange fired %d times; ReplaceSilently must not notify", fired)
			}
			if cached != 900 {
				t.Errorf("cache = %d, want the stale 900 (no callback ran)", cached)
			}
			if got := g.Document(100); !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("document = %v, want %v", got, tt.want)
			}
			snap, _ := g.Get(ctx, 100)
			if snap.String("tier") != tt.wantTier || snap.ID("channel") == 900 {
				t.Errorf("Get = %+v, want the replaced document (tier %q, channel not 900)", snap.Values, tt.wantTier)
			}
			if snap.Revision == before.Revision {
				t.Errorf("revision unchanged (%q) after a replace", snap.Revision)
			}
			if ids := g.GuildIDs(); slices.Contains(ids, 100) == (tt.want == nil) {
				t.Errorf("guild ids = %v", ids)
			}

			// The next notified change refreshes the cache as usual.
			g.Set(100, map[string]any{"channel": 902})
			if fired != 1 || cached != 902 {
				t.Errorf("after Set: fired %d, cache %d; want 1 and 902", fired, cached)
			}
		})
	}
}
