package discord

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ixRecorder keeps what handlers saw.
type ixRecorder struct {
	mu   sync.Mutex
	opts []sdk.Options
	text []map[string]string
	errs []error
}

func (r *ixRecorder) add(o sdk.Options, t map[string]string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts, r.text, r.errs = append(r.opts, o), append(r.text, t), append(r.errs, err)
}

func (r *ixRecorder) last() (sdk.Options, map[string]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.opts) == 0 {
		return nil, nil, nil
	}
	n := len(r.opts) - 1
	return r.opts[n], r.text[n], r.errs[n]
}

func (r *ixRecorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.opts) }

// ixKudos registers /kudos give (member, options), /note (a modal), /twice
// (respond then a modal), /slow (waits for release) and buttons of every
// gate.
func ixKudos(rec *ixRecorder, release chan struct{}, releaseBtn ...chan struct{}) *ixModule {
	btn := release
	if len(releaseBtn) > 0 {
		btn = releaseBtn[0]
	}
	return &ixModule{start: func(rt *sdk.Runtime) error {
		ix := rt.Interactions
		give := sdk.CommandSpec{Group: "kudos", GroupDescription: "kudos", Name: "give", Description: "give kudos", MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{
				{Name: "reason", Kind: sdk.OptionString, Description: "why"},
				{Name: "member", Kind: sdk.OptionUser, Description: "who", Required: true},
				{Name: "amount", Kind: sdk.OptionInteger, Description: "how many", MinValue: new(int64(1)), MaxValue: new(int64(5))},
			}}
		if _, err := ix.AddCommand(give, func(ctx context.Context, in sdk.Interaction) error {
			rec.add(in.Options(), nil, nil)
			return in.Respond(ctx, sdk.Response{Content: "kudos given <@1>", Components: []sdk.Component{
				sdk.ButtonSpec{Key: "thank", Label: "thank"}, sdk.ButtonSpec{Key: "staffbtn", Label: "staff"},
				sdk.ButtonSpec{Key: "regular", Label: "regular"}, sdk.ButtonSpec{Key: "gone", Label: "gone"},
				sdk.ButtonSpec{Key: "short", Label: "short"}, sdk.ButtonSpec{Key: "fails", Label: "fails"},
				sdk.ButtonSpec{Key: "slowbtn", Label: "slow"},
			}})
		}, nil); err != nil {
			return err
		}
		if _, err := ix.AddCommand(sdk.CommandSpec{Name: "note", Description: "note", MinTier: sdk.TierMember}, func(ctx context.Context, in sdk.Interaction) error {
			return in.ShowModal(ctx, sdk.ModalSpec{Key: "note", Title: "Note", Inputs: []sdk.TextInputSpec{{Key: "text", Label: "Text"}}})
		}, nil); err != nil {
			return err
		}
		if _, err := ix.AddCommand(sdk.CommandSpec{Name: "twice", Description: "twice", MinTier: sdk.TierMember}, func(ctx context.Context, in sdk.Interaction) error {
			if err := in.Respond(ctx, sdk.Response{Content: "first"}); err != nil {
				return err
			}
			err := in.ShowModal(ctx, sdk.ModalSpec{Key: "note", Title: "Note", Inputs: []sdk.TextInputSpec{{Key: "text", Label: "Text"}}})
			rec.add(nil, nil, err)
			return nil
		}, nil); err != nil {
			return err
		}
		if _, err := ix.AddCommand(sdk.CommandSpec{Name: "staffonly", Description: "staff"}, func(ctx context.Context, in sdk.Interaction) error {
			return in.Respond(ctx, sdk.Response{Content: "staff ran"})
		}, nil); err != nil {
			return err
		}
		if _, err := ix.AddCommand(sdk.CommandSpec{Name: "slow", Description: "slow", MinTier: sdk.TierMember}, func(ctx context.Context, in sdk.Interaction) error {
			<-release
			err := in.Respond(ctx, sdk.Response{Content: "slow done"})
			rec.add(nil, nil, err)
			return err
		}, nil); err != nil {
			return err
		}
		reply := func(text string) sdk.ComponentHandler {
			return func(ctx context.Context, in sdk.Interaction) error {
				return in.Respond(ctx, sdk.Response{Content: text, Ephemeral: true})
			}
		}
		for _, c := range []struct {
			key  string
			h    sdk.ComponentHandler
			opts sdk.ComponentOptions
		}{
			{"thank", reply("thanked"), sdk.ComponentOptions{}},
			{"staffbtn", reply("staff ok"), sdk.ComponentOptions{MinTier: sdk.TierStaff}},
			{"regular", reply("regular ok"), sdk.ComponentOptions{MinTier: sdk.TierRegular}},
			{"short", reply("too late"), sdk.ComponentOptions{ExpiresAfter: time.Millisecond}},
			{"fails", func(context.Context, sdk.Interaction) error { return errors.New("boom") }, sdk.ComponentOptions{}},
			{"slowbtn", func(ctx context.Context, in sdk.Interaction) error {
				<-btn
				return in.EditOriginal(ctx, sdk.Response{Content: "edited late"})
			}, sdk.ComponentOptions{}},
		} {
			if _, err := ix.RegisterComponent(sdk.ComponentButton, c.key, c.h, c.opts); err != nil {
				return err
			}
		}
		_, err := ix.RegisterComponent(sdk.ComponentModal, "note", func(ctx context.Context, in sdk.Interaction) error {
			rec.add(nil, in.TextValues(), nil)
			return in.Respond(ctx, sdk.Response{Content: "noted " + in.TextValues()["text"]})
		}, sdk.ComponentOptions{})
		return err
	}}
}

func ixGive(t *testing.T, w *ixWorld) (id string, original *discordgo.Message) {
	t.Helper()
	id, err := w.f.RunCommand(w.text, w.alice, "kudos", &discordgo.ApplicationCommandInteractionDataOption{
		Name: "give", Type: discordgo.ApplicationCommandOptionSubCommand, Options: []*discordgo.ApplicationCommandInteractionDataOption{
			{Name: "member", Type: discordgo.ApplicationCommandOptionUser, Value: w.bob},
			{Name: "amount", Type: discordgo.ApplicationCommandOptionInteger, Value: 3},
		}})
	if err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	st := ixAnswered(t, w.f, id)
	return id, st.Original
}

// ephemeralReply is a callback's ephemeral content ("" when not one).
func ephemeralReply(t *testing.T, w *ixWorld, id string) string {
	t.Helper()
	st := ixAnswered(t, w.f, id)
	r := st.Response
	if r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data == nil || r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("interaction %s: response %+v is not an ephemeral message", id, r)
	}
	return r.Data.Content
}

// TestIxSlashCommandAndControls: the READY sync registers /kudos give (one
// group level, required option first); the command reaches the handler
// with reduced options and the callback carries its message with the
// module's buttons; each button is routed by custom id and gated with the
// original's replies.
func TestIxSlashCommandAndControls(t *testing.T) {
	rec := &ixRecorder{}
	w := newIxWorld(t, ixKudos(rec, make(chan struct{})), ixOptions{})
	ixEventually(t, "READY sync", func() bool { return len(w.f.RequestsTo(globalPUT)) == 1 })
	var kudos *discordgo.ApplicationCommand
	for _, c := range w.f.Commands("") {
		if c.Name == "kudos" {
			kudos = c
		}
	}
	if kudos == nil || len(kudos.Options) != 1 || kudos.Options[0].Name != "give" || kudos.Options[0].Type != discordgo.ApplicationCommandOptionSubCommand {
		t.Fatalf("synced kudos = %+v", kudos)
	}
	if o := kudos.Options[0].Options; len(o) != 3 || o[0].Name != "member" || !o[0].Required || o[2].MinValue == nil || *o[2].MinValue != 1 || o[2].MaxValue != 5 {
		t.Fatalf("give's options = %+v (required first, min/max kept)", o)
	}

	id, orig := ixGive(t, w)
	opts, _, _ := rec.last()
	if opts["member"] != parseID(w.bob) || opts["amount"] != int64(3) {
		t.Fatalf("options = %#v, want member %s as uint64 and amount int64(3)", opts, w.bob)
	}
	if orig == nil || orig.Content != "kudos given <@1>" || len(orig.Components) != 2 || len(orig.Mentions) != 0 {
		t.Fatalf("original = %+v", orig)
	}
	for _, r := range w.f.Requests() {
		if strings.Contains(r.Path, "/interactions/"+id+"/") && !strings.Contains(string(r.Body), `"allowed_mentions":{"parse":[]`) {
			t.Fatalf("callback without allowed_mentions none: %s", r.Body)
		}
	}

	time.Sleep(5 * time.Millisecond) // "short" expires 1 ms after registration
	for _, c := range []struct {
		key, user, want string
	}{
		{"thank", w.alice, "thanked"},
		{"staffbtn", w.alice, "Staff only."},
		{"staffbtn", w.bob, "staff ok"},
		{"regular", w.alice, "Not allowed."},
		{"regular", w.bob, "regular ok"},
		{"gone", w.alice, "This control is no longer active."},
		{"short", w.alice, "This control has expired."},
		{"short", w.alice, "This control is no longer active."},
		{"fails", w.alice, "Something went wrong handling that control."},
	} {
		cid, err := w.f.ClickButton(w.text, orig.ID, c.user, "m:demo:"+c.key)
		if err != nil {
			t.Fatalf("click %s: %v", c.key, err)
		}
		if got := ephemeralReply(t, w, cid); got != c.want {
			t.Errorf("click %s as %s = %q, want %q", c.key, c.user, got, c.want)
		}
	}

	// a staff-only command below staff
	sid, err := w.f.RunCommand(w.text, w.alice, "staffonly")
	if err != nil {
		t.Fatal(err)
	}
	if got := ephemeralReply(t, w, sid); got != "Staff only." {
		t.Errorf("/staffonly as a member = %q", got)
	}
	sid, _ = w.f.RunCommand(w.text, w.bob, "staffonly")
	if st := ixAnswered(t, w.f, sid); st.Original == nil || st.Original.Content != "staff ran" {
		t.Errorf("/staffonly as staff = %+v", st.Original)
	}
}

// TestIxModal: a command answered with a modal; its submit reaches the
// modal handler with the text values by input key; a modal after a
// response is refused with ErrModalAfterAnswer.
func TestIxModal(t *testing.T) {
	rec := &ixRecorder{}
	w := newIxWorld(t, ixKudos(rec, make(chan struct{})), ixOptions{})
	ixEventually(t, "READY sync", func() bool { return len(w.f.RequestsTo(globalPUT)) == 1 })
	id, err := w.f.RunCommand(w.text, w.alice, "note")
	if err != nil {
		t.Fatal(err)
	}
	if st := ixAnswered(t, w.f, id); st.Response.Type != discordgo.InteractionResponseModal || st.Response.Data.CustomID != "m:demo:note" {
		t.Fatalf("/note response = %+v", st.Response)
	}
	sub, err := w.f.SubmitModal(id, map[string]string{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if st := ixAnswered(t, w.f, sub); st.Original == nil || st.Original.Content != "noted hello" {
		t.Fatalf("submit answered %+v", st.Original)
	}
	if _, text, _ := rec.last(); text["text"] != "hello" {
		t.Fatalf("text values = %v", text)
	}

	id, _ = w.f.RunCommand(w.text, w.alice, "twice")
	ixAnswered(t, w.f, id)
	ixEventually(t, "twice's modal attempt", func() bool { return rec.count() == 2 })
	if _, _, err := rec.last(); !errors.Is(err, ErrModalAfterAnswer) {
		t.Fatalf("modal after respond = %v, want ErrModalAfterAnswer", err)
	}
}

// TestIxAutoDefer: with Discord's 3 s deadline, a command whose handler is
// still running is deferred (ephemeral, type 5) and its later public answer
// arrives as a follow-up (the placeholder deleted); a slow button is
// deferred as an update (type 6) and its edit lands on the message.
// Without the auto-defer the same answer is refused by the deadline.
func TestIxAutoDefer(t *testing.T) {
	for _, auto := range []bool{true, false} {
		t.Run(map[bool]string{true: "auto-defer", false: "no auto-defer"}[auto], func(t *testing.T) {
			rec := &ixRecorder{}
			release, releaseBtn := make(chan struct{}), make(chan struct{})
			o := ixOptions{deadline: 3 * time.Second}
			if !auto {
				o.autoDefer = time.Hour
			}
			w := newIxWorld(t, ixKudos(rec, release, releaseBtn), o)
			ixEventually(t, "READY sync", func() bool { return len(w.f.RequestsTo(globalPUT)) == 1 })
			id, err := w.f.RunCommand(w.text, w.alice, "slow")
			if err != nil {
				t.Fatal(err)
			}
			if auto {
				st := ixAnswered(t, w.f, id)
				if st.Response.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource || st.Response.Data == nil ||
					st.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
					t.Fatalf("auto-defer = %+v, want a deferred ephemeral reply", st.Response)
				}
			}
			w.clock.advance(5 * time.Second) // past Discord's 3 s
			close(release)
			ixEventually(t, "the slow handler", func() bool { return rec.count() == 1 })
			_, _, err = rec.last()
			if !auto {
				if err == nil || !strings.Contains(err.Error(), "10062") {
					t.Fatalf("answer after the deadline without auto-defer = %v, want Unknown interaction", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("slow answer: %v", err)
			}
			st := w.f.Interaction(id)
			if len(st.Followups) != 1 || st.Followups[0].Content != "slow done" || st.Followups[0].Flags&discordgo.MessageFlagsEphemeral != 0 || st.Original != nil {
				t.Fatalf("after auto-defer: followups %+v, original %+v; want one public follow-up and the placeholder deleted", st.Followups, st.Original)
			}

			// a slow button: deferred update, then its edit
			_, orig := ixGive(t, w)
			cid, err := w.f.ClickButton(w.text, orig.ID, w.alice, "m:demo:slowbtn")
			if err != nil {
				t.Fatal(err)
			}
			if st := ixAnswered(t, w.f, cid); st.Response.Type != discordgo.InteractionResponseDeferredMessageUpdate {
				t.Fatalf("button auto-defer = %+v, want a deferred update", st.Response)
			}
			close(releaseBtn)
			ixEventually(t, "the late edit", func() bool {
				for _, m := range w.f.Messages(w.text) {
					if m.ID == orig.ID && m.Content == "edited late" {
						return true
					}
				}
				return false
			})
		})
	}
}

// TestIxCommandSync: one bulk overwrite per READY, none on a second READY
// with the same set, one more (debounced) when a module adds a command.
func TestIxCommandSync(t *testing.T) {
	w := newIxWorld(t, ixKudos(&ixRecorder{}, make(chan struct{})), ixOptions{})
	ixEventually(t, "first sync", func() bool { return w.x.fullSyncs.Load() == 1 })
	if n := len(w.f.RequestsTo(globalPUT)); n != 1 {
		t.Fatalf("PUTs after READY = %d, want 1", n)
	}
	_ = w.s.Close()
	w.open(t)
	ixEventually(t, "second READY's sync", func() bool { return w.x.fullSyncs.Load() == 2 })
	if n := len(w.f.RequestsTo(globalPUT)); n != 1 {
		t.Fatalf("PUTs after a second READY with the same set = %d, want still 1", n)
	}
	rt := w.mod.runtime()
	if _, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "later", Description: "added after READY", MinTier: sdk.TierMember},
		func(context.Context, sdk.Interaction) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	ixEventually(t, "re-sync", func() bool { return w.x.fullSyncs.Load() == 3 })
	puts := w.f.RequestsTo(globalPUT)
	if len(puts) != 2 || !strings.Contains(string(puts[1].Body), `"name":"later"`) {
		t.Fatalf("PUTs after AddCommand = %d, want 2 with /later", len(puts))
	}
}
