package sdktest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

func nopCommand(context.Context, sdk.Interaction) error { return nil }

func TestInteractionsRefuseDuplicateRegistrations(t *testing.T) {
	f := NewFakeInteractions("mod")
	spec := sdk.CommandSpec{Name: "give", Description: "d", Group: "kudos"}
	reg, err := f.AddCommand(spec, nopCommand, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddCommand(spec, nopCommand, nil); err == nil || err.Error() != "module 'mod' command 'kudos.give' is already registered" {
		t.Errorf("duplicate command = %v", err)
	}
	if _, err := f.RegisterComponent(sdk.ComponentButton, "thank", nopCommand, sdk.ComponentOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RegisterComponent(sdk.ComponentButton, "thank", nopCommand, sdk.ComponentOptions{}); err == nil ||
		err.Error() != "module 'mod' component button/'thank' is already registered" {
		t.Errorf("duplicate component = %v", err)
	}
	// The same key under another kind is a different component.
	if _, err := f.RegisterComponent(sdk.ComponentSelect, "thank", nopCommand, sdk.ComponentOptions{}); err != nil {
		t.Errorf("select with a button's key = %v", err)
	}

	reg.Close()
	if _, ok := f.Command("kudos.give"); ok {
		t.Error("closed command is still registered")
	}
	if _, err := f.AddCommand(spec, nopCommand, nil); err != nil {
		t.Errorf("re-registering after close = %v", err)
	}
}

func TestInteractionsValidateRegistrations(t *testing.T) {
	f := NewFakeInteractions("mod")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"no description", second(f.AddCommand(sdk.CommandSpec{Name: "x"}, nopCommand, nil)), "a command description must contain 1 to 100 characters"},
		{"no name", second(f.AddCommand(sdk.CommandSpec{Description: "d"}, nopCommand, nil)), "names must be between 1-32 characters and contain only lower-case letters, numbers, hyphens, or underscores."},
		{"upper-case name", second(f.AddCommand(sdk.CommandSpec{Name: "Give", Description: "d"}, nopCommand, nil)), "'Give' must be all lower-case"},
		{"no handler", second(f.AddCommand(sdk.CommandSpec{Name: "x", Description: "d"}, nil, nil)), "command 'x' has no handler"},
		{"bad kind", second(f.RegisterComponent("link", "k", nopCommand, sdk.ComponentOptions{})), "unsupported component kind 'link'"},
		{"bad key", second(f.RegisterComponent(sdk.ComponentButton, "Bad", nopCommand, sdk.ComponentOptions{})), "invalid component key 'Bad'"},
		{"no component handler", second(f.RegisterComponent(sdk.ComponentButton, "k", nil, sdk.ComponentOptions{})), "component button/'k' has no handler"},
		{"bad tier", second(f.RegisterComponent(sdk.ComponentButton, "k", nopCommand, sdk.ComponentOptions{MinTier: 9})), "component button/'k' has an invalid min_tier"},
	}
	for _, tt := range tests {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: err = %v, want %q", tt.name, tt.err, tt.want)
		}
	}
	if n := len(f.CommandNames()) + len(f.Components()); n != 0 {
		t.Errorf("invalid registrations were kept: %d", n)
	}
}

func second[T any](_ T, err error) error { return err }

func TestInteractionsComponentTiersCustomIDsAndRouting(t *testing.T) {
	ctx := context.Background()
	f := NewFakeInteractions("mod")
	pressed := ""
	_, _ = f.RegisterComponent(sdk.ComponentButton, "open", func(_ context.Context, in sdk.Interaction) error {
		pressed = in.CustomID()
		return nil
	}, sdk.ComponentOptions{})
	_, _ = f.RegisterComponent(sdk.ComponentModal, "form", nopCommand, sdk.ComponentOptions{MinTier: sdk.TierStaff})

	if c, _ := f.Component(sdk.ComponentButton, "open"); c.MinTier() != sdk.TierMember {
		t.Errorf("default component tier = %v, want member", c.MinTier())
	}
	if c, _ := f.Component(sdk.ComponentModal, "form"); c.MinTier() != sdk.TierStaff {
		t.Errorf("modal tier = %v", c.MinTier())
	}
	if got := f.Components(); !slices.Equal(got, []ComponentID{{sdk.ComponentButton, "open"}, {sdk.ComponentModal, "form"}}) {
		t.Errorf("components = %v", got)
	}
	id, err := f.CustomID("open", "42", "x")
	if err != nil || id != "m:mod:open:42:x" {
		t.Errorf("custom id = %q, %v", id, err)
	}
	if _, err := f.CustomID("open", "a:b"); err == nil {
		t.Error("a part with ':' was accepted")
	}

	if err := f.Press(ctx, sdk.ComponentButton, NewInteraction(InteractionInput{CustomID: id})); err != nil || pressed != id {
		t.Errorf("press = %v, handler saw %q", err, pressed)
	}
	if err := f.Press(ctx, sdk.ComponentButton, NewInteraction(InteractionInput{CustomID: "m:other:open"})); err == nil {
		t.Error("another module's custom id was routed")
	}
	stale := NewInteraction(InteractionInput{CustomID: id})
	if err := f.Press(ctx, sdk.ComponentSelect, stale); err != nil {
		t.Fatal(err)
	}
	if r, _ := stale.Last(); r.Content != ReplyControlInactive || !r.Ephemeral {
		t.Errorf("unregistered kind replied %+v", r)
	}
	if err := f.RunCommand(ctx, "nope", NewInteraction(InteractionInput{})); err == nil {
		t.Error("running an unknown command succeeded")
	}
}

func TestInteractionsGuildCommands(t *testing.T) {
	ctx := context.Background()
	f := NewFakeInteractions("mod")
	cmds := []sdk.GuildCommand{{Spec: sdk.CommandSpec{Name: "a", Description: "d"}, Handler: nopCommand}}

	if err := f.ReplaceGuildCommands(ctx, 100, cmds); err != nil {
		t.Fatal(err)
	}
	if got := f.GuildCommands(100); len(got) != 1 || got[0].Spec.Name != "a" {
		t.Errorf("guild commands = %+v", got)
	}
	if err := f.ReplaceGuildCommands(ctx, 100, nil); err != nil || len(f.GuildCommands(100)) != 0 {
		t.Errorf("an empty set must remove the guild's commands: %v %v", err, f.GuildCommands(100))
	}
	if err := f.ReplaceGuildCommands(ctx, 100, []sdk.GuildCommand{{Spec: sdk.CommandSpec{Name: "b"}}}); err == nil {
		t.Error("an invalid guild command was accepted")
	}
	if err := f.ReplaceGuildCommands(ctx, 100, cmds); err != nil {
		t.Fatal(err)
	}
	syncErr := &sdk.CommandSyncError{}
	f.SyncError = syncErr
	other := []sdk.GuildCommand{{Spec: sdk.CommandSpec{Name: "other", Description: "d"}, Handler: nopCommand}}
	if err := f.ReplaceGuildCommands(ctx, 100, other); !errors.As(err, &syncErr) {
		t.Errorf("failed sync = %v", err)
	}
	if got := f.GuildCommands(100); len(got) != 1 || got[0].Spec.Name != "a" {
		t.Errorf("a set Discord rejected was staged: guild commands = %+v, want the previous set [a]", got)
	}
}

func TestInteractionRecordsReplies(t *testing.T) {
	ctx := context.Background()
	ref := &sdk.MessageRef{GuildID: 1, ChannelID: 2, MessageID: 3}
	in := NewInteraction(InteractionInput{
		Module: "mod", GuildID: 1, ChannelID: 2, UserID: 3, GuildName: "G",
		Options: sdk.Options{"n": int64(4)}, CustomID: "m:mod:k", Values: []string{"v"},
		TextValues: map[string]string{"t": "x"}, Message: ref,
	})
	if in.GuildID() != 1 || in.ChannelID() != 2 || in.UserID() != 3 || in.GuildName() != "G" || in.CustomID() != "m:mod:k" ||
		in.Message() != ref || in.Values()[0] != "v" || in.TextValues()["t"] != "x" {
		t.Error("the interaction does not report its input")
	}
	if n, _ := in.Options().Int("n"); n != 4 {
		t.Errorf("option = %d", n)
	}
	if _, ok := in.Last(); ok {
		t.Error("Last on a fresh interaction")
	}
	if called, _ := in.Deferred(); called {
		t.Error("Deferred on a fresh interaction")
	}

	_ = in.Defer(ctx, true)
	_ = in.Respond(ctx, sdk.Response{Content: "first", Ephemeral: true, Components: []sdk.Component{sdk.ButtonSpec{Key: "k", Label: "K"}}})
	_ = in.EditOriginal(ctx, sdk.Response{Content: "edited", Ephemeral: true})
	_ = in.FollowUp(ctx, sdk.Response{Content: "more", Components: []sdk.Component{sdk.ButtonSpec{Key: "k", Label: "K"}}})

	kinds := []ResponseKind{}
	for _, r := range in.Responses() {
		kinds = append(kinds, r.Kind)
	}
	if !slices.Equal(kinds, []ResponseKind{ResponseRespond, ResponseEdit, ResponseFollowUp}) {
		t.Errorf("kinds = %v", kinds)
	}
	if r := in.Responses()[1]; r.Ephemeral {
		t.Error("an edit of the original is never ephemeral")
	}
	if last, _ := in.Last(); last.Content != "more" || last.Components != nil {
		t.Errorf("last = %+v: follow-ups carry no controls", last)
	}
	if called, eph := in.Deferred(); !called || !eph {
		t.Errorf("deferred = %v %v", called, eph)
	}

	if err := in.Respond(ctx, sdk.Response{Components: []sdk.Component{sdk.ButtonSpec{Key: "Bad", Label: "x"}}}); err == nil {
		t.Error("a reply with an invalid button was accepted")
	}
	// a modal is the first response: a fresh interaction (after a reply the
	// host refuses it, TestFakeInteractionRefusesWhatTheHostRefuses)
	in = NewInteraction(InteractionInput{GuildID: 1})
	if err := in.ShowModal(ctx, sdk.ModalSpec{Key: "form", Title: "T", Inputs: []sdk.TextInputSpec{{Key: "a", Label: "A"}}}); err != nil {
		t.Errorf("valid modal = %v", err)
	}
	if err := in.ShowModal(ctx, sdk.ModalSpec{Key: "form"}); err == nil {
		t.Error("a modal without a title was accepted")
	}
	if got := in.Modals(); len(got) != 1 {
		t.Errorf("modals = %+v", got)
	}
}

func TestInteractionsGateLikeTheHost(t *testing.T) {
	f := NewFakeInteractions("mod")
	trust := NewFakeTrust()
	trust.Set(100, 1, sdk.TierStaff)
	trust.Set(100, 2, sdk.TierRegular)
	f.SetGate(&Gate{Trust: trust, Active: func(g uint64) bool { return g != 300 }})
	ran := 0
	handler := func(context.Context, sdk.Interaction) error { ran++; return nil }
	_, _ = f.AddCommand(sdk.CommandSpec{Name: "admin", Description: "d"}, handler, nil) // min tier defaults to staff
	_, _ = f.AddCommand(sdk.CommandSpec{Name: "open", Description: "d", MinTier: sdk.TierMember}, handler, nil)
	_, _ = f.AddCommand(sdk.CommandSpec{Name: "fail", Description: "d", MinTier: sdk.TierMember},
		func(context.Context, sdk.Interaction) error { return errors.New("boom") }, nil)
	_, _ = f.RegisterComponent(sdk.ComponentButton, "vip", handler, sdk.ComponentOptions{MinTier: sdk.TierRegular})
	_, _ = f.RegisterComponent(sdk.ComponentButton, "fail", func(context.Context, sdk.Interaction) error { return errors.New("boom") }, sdk.ComponentOptions{})
	vip, _ := f.CustomID("vip")
	failing, _ := f.CustomID("fail")

	tests := []struct {
		name  string
		run   func(in sdk.Interaction) error
		in    InteractionInput
		reply string // "" = the handler ran
	}{
		{"staff runs admin", cmd(f, "admin"), InteractionInput{GuildID: 100, UserID: 1}, ""},
		{"member refused admin", cmd(f, "admin"), InteractionInput{GuildID: 100, UserID: 3}, ReplyStaffOnly},
		{"member runs open", cmd(f, "open"), InteractionInput{GuildID: 100, UserID: 3}, ""},
		{"outside a guild", cmd(f, "open"), InteractionInput{UserID: 3}, ReplyNotAllowed},
		{"inactive guild", cmd(f, "open"), InteractionInput{GuildID: 300, UserID: 1}, ReplyNotAllowed},
		{"failing command", cmd(f, "fail"), InteractionInput{GuildID: 100, UserID: 3}, ReplyCommandFailed},
		{"regular clicks vip", press(f), InteractionInput{GuildID: 100, UserID: 2, CustomID: vip}, ""},
		{"member refused vip", press(f), InteractionInput{GuildID: 100, UserID: 3, CustomID: vip}, ReplyNotAllowed},
		// Outside a guild the clicker's tier is still checked (fail closed).
		{"vip outside a guild", press(f), InteractionInput{UserID: 3, CustomID: vip}, ReplyNotAllowed},
		{"member control outside a guild", press(f), InteractionInput{UserID: 3, CustomID: failing}, ReplyControlFailed},
		{"failing control", press(f), InteractionInput{GuildID: 100, UserID: 3, CustomID: failing}, ReplyControlFailed},
	}
	for _, tt := range tests {
		before := ran
		in := NewInteraction(tt.in)
		err := tt.run(in)
		r, replied := in.Last()
		switch {
		case tt.reply == "" && (err != nil || ran != before+1):
			t.Errorf("%s: err %v, handler ran %d times", tt.name, err, ran-before)
		case tt.reply != "" && (!replied || r.Content != tt.reply || !r.Ephemeral):
			t.Errorf("%s: reply %+v, want ephemeral %q", tt.name, r, tt.reply)
		case tt.reply != "" && ran != before:
			t.Errorf("%s: the handler ran despite the gate", tt.name)
		}
	}
}

func cmd(f *FakeInteractions, name string) func(sdk.Interaction) error {
	return func(in sdk.Interaction) error { return f.RunCommand(context.Background(), name, in) }
}

func press(f *FakeInteractions) func(sdk.Interaction) error {
	return func(in sdk.Interaction) error { return f.Press(context.Background(), sdk.ComponentButton, in) }
}

func TestInteractionsComponentsExpirePerRegistration(t *testing.T) {
	ctx := context.Background()
	clock := NewClock(epoch)
	f := NewFakeInteractions("mod")
	f.SetClock(clock.Now)
	ran := 0
	_, _ = f.RegisterComponent(sdk.ComponentButton, "once", func(context.Context, sdk.Interaction) error { ran++; return nil },
		sdk.ComponentOptions{ExpiresAfter: time.Minute})
	id, _ := f.CustomID("once")

	clock.Advance(59 * time.Second)
	if err := f.Press(ctx, sdk.ComponentButton, NewInteraction(InteractionInput{CustomID: id})); err != nil || ran != 1 {
		t.Fatalf("before expiry: %v, ran %d", err, ran)
	}
	clock.Advance(time.Second)
	in := NewInteraction(InteractionInput{CustomID: id})
	if err := f.Press(ctx, sdk.ComponentButton, in); err != nil {
		t.Fatal(err)
	}
	if r, _ := in.Last(); r.Content != ReplyControlExpired || ran != 1 {
		t.Errorf("after expiry: reply %+v, ran %d", r, ran)
	}
	if _, ok := f.Component(sdk.ComponentButton, "once"); ok {
		t.Error("an expired registration must be removed")
	}
}

// TestShowModalChecksCustomIDLength: a modal's custom id is bounded like a
// button's (100 characters for m:<module>:<key>[:part…]).
func TestShowModalChecksCustomIDLength(t *testing.T) {
	modal := func(part string) sdk.ModalSpec {
		return sdk.ModalSpec{Key: "note", Title: "Note", Parts: []string{part},
			Inputs: []sdk.TextInputSpec{{Key: "text", Label: "Text", Style: sdk.TextInputShort}}}
	}
	// "m:mod:note:" is 11 characters.
	tests := []struct {
		name, part, want string
	}{
		{"at the limit", strings.Repeat("x", 89), ""},
		{"over", strings.Repeat("x", 90), "custom_id exceeds 100 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := NewInteraction(InteractionInput{Module: "mod", GuildID: 1, UserID: 2})
			err := in.ShowModal(context.Background(), modal(tt.part))
			if (tt.want == "" && err != nil) || (tt.want != "" && (err == nil || err.Error() != tt.want)) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if shown := len(in.Modals()); (tt.want == "") != (shown == 1) {
				t.Fatalf("%d modals recorded", shown)
			}
		})
	}
}

// TestInteractionLayoutRules: a message that uses a layout (the component's
// message, or the first response) must stay a layout when edited, and content
// or an embed never travels with a layout — with the host's messages; a
// refused reply is not recorded.
func TestInteractionLayoutRules(t *testing.T) {
	layout := &sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutText{Content: "card"}}}
	const combined = "layout cannot be combined with content or embed"
	const keep = "a Components V2 message must continue to use layout when edited"
	type step struct {
		kind ResponseKind // or "defer"
		r    sdk.Response
		want string // "" = accepted
	}
	text := sdk.Response{Content: "plain"}
	card := sdk.Response{Layout: layout}
	tests := []struct {
		name  string
		in    InteractionInput
		steps []step
	}{
		{"component on a layout message: text edit refused", InteractionInput{MessageUsesLayout: true},
			[]step{{ResponseEdit, text, keep}, {ResponseEdit, sdk.Response{}, keep}, {ResponseEdit, card, ""}}},
		{"component on a plain message: text edit accepted", InteractionInput{},
			[]step{{ResponseEdit, text, ""}}},
		{"layout first response: later text edit refused", InteractionInput{},
			[]step{{ResponseRespond, card, ""}, {ResponseEdit, text, keep}, {ResponseEdit, card, ""}}},
		{"plain first response edited into a layout, then stays one", InteractionInput{},
			[]step{{ResponseRespond, text, ""}, {ResponseEdit, card, ""}, {ResponseEdit, text, keep}}},
		{"a follow-up layout does not make the original one", InteractionInput{},
			[]step{{ResponseRespond, text, ""}, {ResponseRespond, card, ""}, {ResponseEdit, text, ""}}},
		{"deferred, then a layout follow-up: the original is not a layout", InteractionInput{},
			[]step{{"defer", sdk.Response{}, ""}, {ResponseRespond, card, ""}, {ResponseEdit, text, ""}}},
		{"deferred on a layout message: the message still is one", InteractionInput{MessageUsesLayout: true},
			[]step{{"defer", sdk.Response{}, ""}, {ResponseEdit, text, keep}}},
		{"a new response on a layout message becomes the original", InteractionInput{MessageUsesLayout: true},
			[]step{{ResponseRespond, text, ""}, {ResponseEdit, text, ""}}},
		{"content with a layout refused", InteractionInput{},
			[]step{{ResponseRespond, sdk.Response{Content: "x", Layout: layout}, combined}, {ResponseEdit, sdk.Response{Content: "x", Layout: layout}, combined}}},
		{"embed with a layout refused", InteractionInput{Module: "mod"},
			[]step{{ResponseRespond, sdk.Response{Embed: &sdk.OutgoingEmbed{Title: "t"}, Layout: layout}, combined}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			in := NewInteraction(tt.in)
			recorded := 0
			for i, s := range tt.steps {
				var err error
				switch s.kind {
				case "defer":
					err = in.Defer(ctx, false)
				case ResponseEdit:
					err = in.EditOriginal(ctx, s.r)
				default:
					err = in.Respond(ctx, s.r)
				}
				if s.want == "" && err != nil {
					t.Fatalf("step %d (%s): %v, want accepted", i, s.kind, err)
				}
				if s.want != "" && (err == nil || err.Error() != s.want || !errors.Is(err, sdk.ErrContract)) {
					t.Fatalf("step %d (%s): %v, want %q", i, s.kind, err, s.want)
				}
				if s.want == "" && s.kind != "defer" {
					recorded++
				}
			}
			if got := len(in.Responses()); got != recorded {
				t.Errorf("%d responses recorded, want %d (refused replies are not recorded)", got, recorded)
			}
		})
	}
}

// TestInteractionsGuildCommandsAndAutocompleteShareTheGate: a guild command
// (ReplaceGuildCommands) runs through RunCommand like a global one, only from
// its guild, behind the same tier and guild-active gate; RunAutocomplete
// resolves both the same way and applies the gate silently (no suggestions).
func TestInteractionsGuildCommandsAndAutocompleteShareTheGate(t *testing.T) {
	ctx := context.Background()
	f := NewFakeInteractions("mod")
	trust := NewFakeTrust()
	for _, g := range []uint64{100, 300} {
		trust.Set(g, 1, sdk.TierStaff)
	}
	f.SetGate(&Gate{Trust: trust, Active: func(g uint64) bool { return g != 300 }})

	var ran []string
	handler := func(name string) sdk.CommandHandler {
		return func(context.Context, sdk.Interaction) error { ran = append(ran, name); return nil }
	}
	suggest := func(name string, n int) sdk.AutocompleteHandler {
		return func(_ context.Context, _ sdk.Interaction, option, current string) ([]sdk.Choice, error) {
			ran = append(ran, name)
			out := make([]sdk.Choice, n)
			for i := range out {
				out[i] = sdk.Choice{Name: current + option, Value: int64(i)}
			}
			return out, nil
		}
	}
	failing := func(context.Context, sdk.Interaction, string, string) ([]sdk.Choice, error) {
		ran = append(ran, "broken")
		return nil, errors.New("boom")
	}
	auto := []sdk.CommandOption{{Name: "q", Kind: sdk.OptionString, Description: "d", Autocomplete: true}}
	if _, err := f.AddCommand(sdk.CommandSpec{Name: "find", Description: "d", MinTier: sdk.TierMember, Options: auto},
		handler("find"), suggest("find", 30)); err != nil {
		t.Fatal(err)
	}
	local := []sdk.GuildCommand{
		{Spec: sdk.CommandSpec{Name: "tag", Group: "local", Description: "d", Options: auto}, Handler: handler("local.tag"), Autocomplete: suggest("local.tag", 2)},
		{Spec: sdk.CommandSpec{Name: "open", Group: "local", Description: "d", MinTier: sdk.TierMember, Options: auto}, Handler: handler("local.open"), Autocomplete: failing},
	}
	for _, g := range []uint64{100, 300} {
		if err := f.ReplaceGuildCommands(ctx, g, local); err != nil {
			t.Fatal(err)
		}
	}

	const staff, member = 1, 2
	tests := []struct {
		name      string
		command   string
		option    string // "" runs the command, else its autocomplete
		guild     uint64
		user      uint64
		wantRan   []string
		wantReply string // the gate's ephemeral reply
		choices   int
		err       string
	}{
		{"guild command from its guild", "local.tag", "", 100, staff, []string{"local.tag"}, "", 0, ""},
		{"guild command below its tier", "local.tag", "", 100, member, nil, ReplyStaffOnly, 0, ""},
		// The refusal names the command's tier, whatever the cause.
		{"guild command in an inactive guild", "local.tag", "", 300, staff, nil, ReplyStaffOnly, 0, ""},
		{"member guild command in an inactive guild", "local.open", "", 300, member, nil, ReplyNotAllowed, 0, ""},
		{"guild command from another guild", "local.tag", "", 200, staff, nil, "", 0, "command 'local.tag' is not registered globally or in guild 200"},
		{"guild command outside a guild", "local.tag", "", 0, staff, nil, "", 0, "command 'local.tag' is not registered"},
		{"global command still runs", "find", "", 200, member, []string{"find"}, "", 0, ""},
		{"global autocomplete is capped at 25", "find", "q", 200, member, []string{"find"}, "", 25, ""},
		{"global autocomplete outside a guild", "find", "q", 0, member, nil, "", 0, ""},
		{"guild autocomplete", "local.tag", "q", 100, staff, []string{"local.tag"}, "", 2, ""},
		{"guild autocomplete below its tier", "local.tag", "q", 100, member, nil, "", 0, ""},
		{"guild autocomplete in an inactive guild", "local.tag", "q", 300, staff, nil, "", 0, ""},
		{"guild autocomplete from another guild", "local.tag", "q", 200, staff, nil, "", 0, "command 'local.tag' is not registered globally or in guild 200"},
		{"autocomplete error", "local.open", "q", 100, member, []string{"broken"}, "", 0, "boom"},
		{"option without autocomplete", "local.tag", "nope", 100, staff, nil, "", 0, "command 'local.tag' option 'nope' has no autocomplete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran = nil
			in := NewInteraction(InteractionInput{GuildID: tt.guild, UserID: tt.user})
			var err error
			var choices []sdk.Choice
			if tt.option == "" {
				err = f.RunCommand(ctx, tt.command, in)
			} else {
				choices, err = f.RunAutocomplete(ctx, tt.command, tt.option, "x", in)
			}
			if (tt.err == "") != (err == nil) || (err != nil && err.Error() != tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if !slices.Equal(ran, tt.wantRan) {
				t.Errorf("handlers ran %v, want %v", ran, tt.wantRan)
			}
			if len(choices) != tt.choices || (tt.choices > 0 && choices[0].Name != "xq") {
				t.Errorf("choices = %v, want %d", choices, tt.choices)
			}
			r, replied := in.Last()
			if tt.wantReply == "" && replied {
				t.Errorf("unexpected reply %+v", r)
			}
			if tt.wantReply != "" && (r.Content != tt.wantReply || !r.Ephemeral) {
				t.Errorf("reply = %+v, want ephemeral %q", r, tt.wantReply)
			}
		})
	}
}

// TestInteractionsGuildCommandSetsAreCheckedWhole: as in the host, a guild
// set may not name a command twice nor shadow a global command (nor a global
// command a guild one), and a refused set leaves the staged one in place.
func TestInteractionsGuildCommandSetsAreCheckedWhole(t *testing.T) {
	ctx := context.Background()
	cmd := func(group, name string) sdk.GuildCommand {
		return sdk.GuildCommand{Spec: sdk.CommandSpec{Name: name, Group: group, Description: "d"}, Handler: nopCommand}
	}
	f := NewFakeInteractions("mod")
	if _, err := f.AddCommand(sdk.CommandSpec{Name: "give", Group: "kudos", Description: "d"}, nopCommand, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.ReplaceGuildCommands(ctx, 100, []sdk.GuildCommand{cmd("", "tag")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		set  []sdk.GuildCommand
		want string
	}{
		{"twice", []sdk.GuildCommand{cmd("", "a"), cmd("", "a")}, "module 'mod' guild command 'a' is registered more than once"},
		{"shadows a global group", []sdk.GuildCommand{cmd("kudos", "top")}, "module 'mod' guild command 'kudos' would shadow a global command"},
		{"shadows a global command name", []sdk.GuildCommand{cmd("", "kudos")}, "module 'mod' guild command 'kudos' would shadow a global command"},
		{"no handler", []sdk.GuildCommand{{Spec: sdk.CommandSpec{Name: "x", Description: "d"}}}, "guild command 'x' has no handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.ReplaceGuildCommands(ctx, 100, tt.set)
			if err == nil || err.Error() != tt.want || !errors.Is(err, sdk.ErrContract) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if got := f.GuildCommands(100); len(got) != 1 || got[0].Spec.Name != "tag" {
				t.Errorf("staged = %+v, want the previous set [tag]", got)
			}
		})
	}
	if _, err := f.AddCommand(sdk.CommandSpec{Name: "tag", Description: "d"}, nopCommand, nil); err == nil ||
		err.Error() != "module 'mod' global command 'tag' would shadow a guild command" {
		t.Errorf("global over a guild command = %v", err)
	}
}

// TestFakeInteractionRefusesWhatTheHostRefuses: a modal after a response or
// a deferral, and content over Discord's 2000 characters.
func TestFakeInteractionRefusesWhatTheHostRefuses(t *testing.T) {
	ctx := context.Background()
	modal := sdk.ModalSpec{Key: "m", Title: "T", Inputs: []sdk.TextInputSpec{{Key: "a", Label: "A"}}}
	in := NewInteraction(InteractionInput{GuildID: 1})
	if err := in.Respond(ctx, sdk.Response{Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := in.ShowModal(ctx, modal); !errors.Is(err, ErrModalAfterAnswer) {
		t.Fatalf("modal after respond = %v", err)
	}
	in = NewInteraction(InteractionInput{GuildID: 1})
	_ = in.Defer(ctx, true)
	if err := in.ShowModal(ctx, modal); !errors.Is(err, ErrModalAfterAnswer) {
		t.Fatalf("modal after defer = %v", err)
	}
	in = NewInteraction(InteractionInput{GuildID: 1})
	if err := in.Respond(ctx, sdk.Response{Content: strings.Repeat("x", 2001)}); err == nil || !strings.Contains(err.Error(), "2001 characters") {
		t.Fatalf("over-long content = %v", err)
	}
	if len(in.Responses()) != 0 {
		t.Fatal("a refused reply was recorded")
	}
}
