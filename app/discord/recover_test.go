package discord

import (
	"context"
	"testing"
)

// TestCrashCleanup: what start-up does to an interrupted turn's leftovers
// through the connected bot — its own ⏳ removed from the trigger (the
// member's stays), its status message deleted; a status message already
// gone is done, not a failure; missing ids are refused.
func TestCrashCleanup(t *testing.T) {
	w := newAsstWorld(t, asstOpts{noAssistant: true})
	ctx := context.Background()
	trig, err := w.f.PostMessage(w.general, w.alice, "a question the crash cut short")
	if err != nil {
		t.Fatal(err)
	}
	rest := w.f.Session()
	if err := rest.MessageReactionAdd(w.general, trig.ID, "⏳"); err != nil {
		t.Fatal(err)
	}
	if err := w.f.React(w.general, trig.ID, w.bob, "⏳"); err != nil {
		t.Fatal(err)
	}
	status, err := rest.ChannelMessageSend(w.general, "Thinking...")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := rest.ChannelMessageSend(w.general, "Thinking...")
	if err != nil {
		t.Fatal(err)
	}
	if err := rest.ChannelMessageDelete(w.general, gone.ID); err != nil {
		t.Fatal(err)
	}
	channel := parseID(w.general)
	for _, c := range []struct {
		name    string
		run     func() error
		wantErr bool
	}{
		{"the bot's ⏳ removed", func() error { return w.b.RemoveOwnReaction(ctx, channel, parseID(trig.ID), "⏳") }, false},
		{"the status message deleted", func() error { return w.b.DeleteOwnMessage(ctx, channel, parseID(status.ID)) }, false},
		{"a status message already gone", func() error { return w.b.DeleteOwnMessage(ctx, channel, parseID(gone.ID)) }, false},
		{"no message id", func() error { return w.b.DeleteOwnMessage(ctx, channel, 0) }, true},
		{"no channel id", func() error { return w.b.DeleteOwnMessage(ctx, 0, parseID(status.ID)) }, true},
		{"a channel the bot cannot see", func() error { return w.b.DeleteOwnMessage(ctx, 1, parseID(status.ID)) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(); (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want an error: %t", err, c.wantErr)
			}
		})
	}
	for _, m := range w.f.Messages(w.general) {
		switch m.ID {
		case status.ID, gone.ID:
			t.Errorf("message %s (%q) still there", m.ID, m.Content)
		case trig.ID:
			if len(m.Reactions) != 1 || m.Reactions[0].Count != 1 || m.Reactions[0].Me {
				t.Errorf("the trigger's reactions %+v, want the member's ⏳ alone", m.Reactions)
			}
		}
	}
}
