package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// panicModule registers a command, a button, a modal and an
// autocomplete whose handlers panic, and /afterdefer which defers and then
// panics.
func panicModule() *ixModule {
	return &ixModule{start: func(rt *sdk.Runtime) error {
		ix := rt.Interactions
		boom := func(context.Context, sdk.Interaction) error { panic("module bug") }
		if _, err := ix.AddCommand(sdk.CommandSpec{Name: "explode", Description: "explode", MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{{Name: "what", Kind: sdk.OptionString, Description: "what", Autocomplete: true}}},
			func(ctx context.Context, in sdk.Interaction) error {
				return in.Respond(ctx, sdk.Response{Content: "press", Components: []sdk.Component{sdk.ButtonSpec{Key: "boom", Label: "boom"}}})
			},
			func(context.Context, sdk.Interaction, string, string) ([]sdk.Choice, error) {
				panic("autocomplete bug")
			}); err != nil {
			return err
		}
		if _, err := ix.AddCommand(sdk.CommandSpec{Name: "crash", Description: "crash", MinTier: sdk.TierMember}, boom, nil); err != nil {
			return err
		}
		if _, err := ix.AddCommand(sdk.CommandSpec{Name: "form", Description: "form", MinTier: sdk.TierMember}, func(ctx context.Context, in sdk.Interaction) error {
			return in.ShowModal(ctx, sdk.ModalSpec{Key: "form", Title: "Form", Inputs: []sdk.TextInputSpec{{Key: "text", Label: "Text"}}})
		}, nil); err != nil {
			return err
		}
		if _, err := ix.AddCommand(sdk.CommandSpec{Name: "afterdefer", Description: "afterdefer", MinTier: sdk.TierMember}, func(ctx context.Context, in sdk.Interaction) error {
			if err := in.Defer(ctx, false); err != nil {
				return err
			}
			panic("after defer")
		}, nil); err != nil {
			return err
		}
		if _, err := ix.RegisterComponent(sdk.ComponentButton, "boom", boom, sdk.ComponentOptions{}); err != nil {
			return err
		}
		_, err := ix.RegisterComponent(sdk.ComponentModal, "form", boom, sdk.ComponentOptions{})
		return err
	}}
}

// TestIxPanickingHandlersAreContained: a module handler that panics in
// a command, a button, a modal submit or an autocomplete is recovered by
// the host's containment, the user gets the original's ephemeral reply
// (none for autocomplete: no suggestions), the module's health shows the
// panic, and the bot keeps serving interactions.
func TestIxPanickingHandlersAreContained(t *testing.T) {
	w := newIxWorld(t, panicModule(), ixOptions{})
	ixEventually(t, "READY sync", func() bool { return len(w.f.RequestsTo(globalPUT)) == 1 })

	health := func(want string) {
		t.Helper()
		ixEventually(t, "health shows "+want, func() bool {
			st, ok := w.h.Module("demo")
			return ok && st.HasHealth && st.Health.State == sdk.HealthDegraded && strings.Contains(st.Health.Detail, want)
		})
	}

	id, err := w.f.RunCommand(w.text, w.alice, "crash")
	if err != nil {
		t.Fatal(err)
	}
	if got := ephemeralReply(t, w, id); got != replyCommandFailed {
		t.Errorf("/crash = %q, want %q", got, replyCommandFailed)
	}
	health("panic: module bug")

	id, err = w.f.RunCommand(w.text, w.alice, "explode")
	if err != nil {
		t.Fatal(err)
	}
	orig := ixAnswered(t, w.f, id).Original
	if orig == nil {
		t.Fatal("/explode: no original message")
	}
	cid, err := w.f.ClickButton(w.text, orig.ID, w.alice, "m:demo:boom")
	if err != nil {
		t.Fatal(err)
	}
	if got := ephemeralReply(t, w, cid); got != replyControlFailed {
		t.Errorf("button = %q, want %q", got, replyControlFailed)
	}

	fid, err := w.f.RunCommand(w.text, w.alice, "form")
	if err != nil {
		t.Fatal(err)
	}
	if st := ixAnswered(t, w.f, fid); st.Response.Type != discordgo.InteractionResponseModal {
		t.Fatalf("/form answered %+v", st.Response)
	}
	sub, err := w.f.SubmitModal(fid, map[string]string{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ephemeralReply(t, w, sub); got != replyControlFailed {
		t.Errorf("modal submit = %q, want %q", got, replyControlFailed)
	}

	choices, err := w.f.Autocomplete(w.text, w.alice, "explode", "what", "x")
	if err != nil {
		t.Fatalf("autocomplete: %v (no answer: the panic was not contained)", err)
	}
	if len(choices) != 0 {
		t.Errorf("choices = %+v, want none", choices)
	}
	health("panic: autocomplete bug")

	// A panic after a defer: the reply comes as an ephemeral follow-up.
	did, err := w.f.RunCommand(w.text, w.alice, "afterdefer")
	if err != nil {
		t.Fatal(err)
	}
	ixEventually(t, "the failure's follow-up", func() bool {
		st := w.f.Interaction(did)
		return st != nil && len(st.Followups) == 1
	})
	if fu := w.f.Interaction(did).Followups[0]; fu.Content != replyCommandFailed || fu.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Errorf("follow-up after defer = %q flags %d, want the ephemeral %q", fu.Content, fu.Flags, replyCommandFailed)
	}
	health("panic: after defer")

	// Still serving.
	id, _ = w.f.RunCommand(w.text, w.alice, "crash")
	if got := ephemeralReply(t, w, id); got != replyCommandFailed {
		t.Errorf("second /crash = %q", got)
	}
}
