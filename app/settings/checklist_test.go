package settings

import (
	"context"
	"testing"
)

// TestReadChecklistFollowsEachSetting: the checklist's read reports each of
// its settings as the saves leave it, from nothing stored to all of them.
func TestReadChecklistFollowsEachSetting(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)
	steps := []struct {
		name string
		save func() error
		want Checklist
	}{
		{"nothing stored", func() error { return nil }, Checklist{}},
		{"a token", func() error { return SaveDiscordToken(ctx, st, "MTA.token.value", who) }, Checklist{Token: true}},
		{"the members intent", func() error { return SaveDiscordIntents(ctx, st, true, false, who) }, Checklist{Token: true, Members: true}},
		{"both intents", func() error { return SaveDiscordIntents(ctx, st, true, true, who) }, Checklist{Token: true, Members: true, MessageContent: true}},
		{"dismissed", func() error { return DismissChecklist(ctx, st, "", who) }, Checklist{Dismissed: true, Token: true, Members: true, MessageContent: true}},
	}
	for _, s := range steps {
		if err := s.save(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for range 2 { // the prepared statement's first use and a later one
			got, err := ReadChecklist(ctx, st)
			if err != nil || got != s.want {
				t.Fatalf("%s: ReadChecklist = %+v, %v; want %+v", s.name, got, err, s.want)
			}
		}
	}
}
