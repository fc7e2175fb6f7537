package host

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// recDiscord is a host.Discord recording what the host forwards; with
// perms it also implements discordWithPermissions.
type recDiscord struct {
	mu      sync.Mutex
	fake    *sdktest.FakeDiscordActions
	modules []string
	perms   []sdk.Permissions
	tiers   [][2]uint64
}

func (d *recDiscord) Actions(module string) sdk.DiscordActions {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.modules = append(d.modules, module)
	return d.fake
}

func (d *recDiscord) Tier(_ context.Context, guildID, userID uint64) (sdk.TrustTier, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tiers = append(d.tiers, [2]uint64{guildID, userID})
	return sdk.TierRegular, nil
}

func (d *recDiscord) CommandsChanged()                                {}
func (d *recDiscord) SyncGuildCommands(context.Context, uint64) error { return nil }

type recDiscordPerms struct{ *recDiscord }

func (d recDiscordPerms) ActionsFor(module string, perms sdk.Permissions) sdk.DiscordActions {
	d.mu.Lock()
	d.perms = append(d.perms, perms)
	d.mu.Unlock()
	return d.Actions(module)
}

var (
	_ Discord                = (*recDiscord)(nil)
	_ discordWithPermissions = recDiscordPerms{}
)

func TestDiscordPortForwards(t *testing.T) {
	for _, withPerms := range []bool{false, true} {
		rec := &recDiscord{fake: sdktest.NewFakeDiscordActions("m", nil)}
		var d Discord = rec
		if withPerms {
			d = recDiscordPerms{rec}
		}
		mod := &testModule{}
		r := newRig(t, []sdk.Spec{spec("m", mod, func(s *sdk.Spec) {
			s.Permissions.DiscordActions = []sdk.DiscordAction{sdk.ActionSendMessage, sdk.ActionBan}
			s.Permissions.OverrideTargetPolicy = true
		})}, func(o *Options) { o.Discord = d })
		r.start(t)
		rt := mod.runtime()
		ctx := context.Background()
		if _, err := rt.Discord.SendMessage(ctx, 7, sdk.OutgoingMessage{Content: "hi"}); err != nil {
			t.Fatal(err)
		}
		if err := rt.Discord.Ban(ctx, 1, 2, sdk.Moderation{Reason: "r"}, 0); err != nil {
			t.Fatal(err)
		}
		_, err := rt.Discord.FetchRoles(ctx, 1)
		var undeclared *sdk.UndeclaredDiscordActionError
		if !errors.As(err, &undeclared) || err.Error() != "module 'm' did not declare Discord action 'fetch_roles'" {
			t.Fatalf("undeclared FetchRoles = %v", err)
		}
		calls := rec.fake.Calls()
		if len(calls) != 2 || calls[0].Action != sdk.ActionSendMessage || calls[1].Action != sdk.ActionBan {
			t.Fatalf("forwarded calls = %+v, want send_message and ban only", calls)
		}
		rec.mu.Lock()
		if len(rec.modules) != 2 || rec.modules[0] != "m" {
			t.Fatalf("Actions asked for %v, want m twice (never for the undeclared call)", rec.modules)
		}
		if withPerms && (len(rec.perms) != 2 || !rec.perms[0].OverrideTargetPolicy) {
			t.Fatalf("ActionsFor perms = %+v, want the module's (override set)", rec.perms)
		}
		rec.mu.Unlock()
		if tier, err := rt.Trust.Tier(ctx, 1, 5); err != nil || tier != sdk.TierRegular {
			t.Fatalf("Tier = %v, %v; want the connection's answer", tier, err)
		}
		if len(rec.tiers) != 1 || rec.tiers[0] != [2]uint64{1, 5} {
			t.Fatalf("Tier calls = %v", rec.tiers)
		}
	}
}

// TestDiscordPortKeepsTheFailureCause: a failed action's typed cause stays
// reachable through the host's port (it forwards the connection's error
// as it is: no wrapping hides it).
func TestDiscordPortKeepsTheFailureCause(t *testing.T) {
	rec := &recDiscord{fake: sdktest.NewFakeDiscordActions("m", nil)}
	mod := &testModule{}
	r := newRig(t, []sdk.Spec{spec("m", mod, func(s *sdk.Spec) {
		s.Permissions.DiscordActions = []sdk.DiscordAction{sdk.ActionSendMessage}
	})}, func(o *Options) { o.Discord = recDiscordPerms{rec} })
	r.start(t)
	rec.fake.FailNext(sdk.ActionSendMessage, &sdk.MissingPermissionError{Permission: "SEND_MESSAGES"})
	_, err := mod.runtime().Discord.SendMessage(context.Background(), 7, sdk.OutgoingMessage{Content: "hi"})
	var mp *sdk.MissingPermissionError
	if err == nil || err.Error() != "sending the message failed" || !errors.Is(err, sdk.ErrMissingPermission) || !errors.As(err, &mp) || mp.Permission != "SEND_MESSAGES" {
		t.Fatalf("err = %v, want the host's message over the missing SEND_MESSAGES", err)
	}
}

// everyDiscordCall calls each of the port's 16 actions and returns its
// error (answers aside).
var everyDiscordCall = map[sdk.DiscordAction]func(context.Context, sdk.DiscordActions) error{
	sdk.ActionSendMessage: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.SendMessage(ctx, 7, sdk.OutgoingMessage{Content: "hi"})
		return err
	},
	sdk.ActionSendDM: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.SendDM(ctx, 5, "hi", nil)
		return err
	},
	sdk.ActionEditMessage: func(ctx context.Context, d sdk.DiscordActions) error {
		return d.EditMessage(ctx, sdk.MessageRef{GuildID: 1, ChannelID: 7, MessageID: 9}, "x", nil)
	},
	sdk.ActionDeleteMessage: func(ctx context.Context, d sdk.DiscordActions) error {
		return d.DeleteMessage(ctx, sdk.MessageRef{GuildID: 1, ChannelID: 7, MessageID: 9}, "")
	},
	sdk.ActionBan: func(ctx context.Context, d sdk.DiscordActions) error {
		return d.Ban(ctx, 1, 5, sdk.Moderation{Reason: "r"}, 0)
	},
	sdk.ActionKick: func(ctx context.Context, d sdk.DiscordActions) error {
		return d.Kick(ctx, 1, 5, sdk.Moderation{Reason: "r"})
	},
	sdk.ActionTimeout: func(ctx context.Context, d sdk.DiscordActions) error {
		return d.Timeout(ctx, 1, 5, sdk.Moderation{Reason: "r"}, time.Minute)
	},
	sdk.ActionFetchMessage: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.FetchMessage(ctx, sdk.MessageRef{GuildID: 1, ChannelID: 7, MessageID: 9})
		return err
	},
	sdk.ActionFetchMember: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.FetchMember(ctx, 1, 5)
		return err
	},
	sdk.ActionFetchChannel: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.FetchChannel(ctx, 1, 7)
		return err
	},
	sdk.ActionFetchMessages: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.FetchMessages(ctx, 1, 7, sdk.HistoryQuery{})
		return err
	},
	sdk.ActionFetchPins: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.FetchPins(ctx, 1, 7)
		return err
	},
	sdk.ActionFetchPublicThreads: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.FetchPublicThreads(ctx, 1, 7)
		return err
	},
	sdk.ActionFetchRoles: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.FetchRoles(ctx, 1)
		return err
	},
	sdk.ActionFetchInvites: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.FetchInvites(ctx, 1)
		return err
	},
	sdk.ActionCanViewChannel: func(ctx context.Context, d sdk.DiscordActions) error {
		_, err := d.CanViewChannel(ctx, 1, 5, 7)
		return err
	},
}

// TestDiscordPortKeepsEveryActionsFailureCause: for each of the port's 16
// actions and each typed cause, the error through the host's port is the
// connection's (its message, errors.Is the category, errors.As the
// detail), as sdktest's fake answers it called directly.
func TestDiscordPortKeepsEveryActionsFailureCause(t *testing.T) {
	causes := []error{
		&sdk.RateLimitError{RetryAfter: 3 * time.Second, Global: true},
		&sdk.MissingPermissionError{Permission: "MANAGE_MESSAGES"},
		&sdk.UncertainDeliveryError{Status: 502},
		sdk.ErrUnknownChannel,
		sdk.ErrUnknownMember,
	}
	rec := &recDiscord{fake: sdktest.NewFakeDiscordActions("m", nil)}
	mod := &testModule{}
	r := newRig(t, []sdk.Spec{spec("m", mod, func(s *sdk.Spec) {
		s.Permissions.DiscordActions = sdk.AllDiscordActions()
	})}, func(o *Options) { o.Discord = recDiscordPerms{rec} })
	r.start(t)
	port := mod.runtime().Discord
	ctx := context.Background()
	for _, a := range sdk.AllDiscordActions() {
		call := everyDiscordCall[a]
		if call == nil {
			t.Errorf("no call for %s", a)
			continue
		}
		for _, cause := range causes {
			direct := sdktest.NewFakeDiscordActions("m", nil)
			direct.FailNext(a, cause)
			want := call(ctx, direct)
			rec.fake.FailNext(a, cause)
			got := call(ctx, port)
			if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
				t.Errorf("%s with %v: port err = %v, want %v", a, cause, got, want)
				continue
			}
			if got == nil {
				continue
			}
			if !errors.Is(got, cause) {
				t.Errorf("%s with %v: port err %v does not reach the cause", a, cause, got)
			}
			var rl *sdk.RateLimitError
			var mp *sdk.MissingPermissionError
			var ud *sdk.UncertainDeliveryError
			switch c := cause.(type) {
			case *sdk.RateLimitError:
				if !errors.Is(got, sdk.ErrRateLimited) || !errors.As(got, &rl) || *rl != *c {
					t.Errorf("%s: port err %v, want the rate limit %+v", a, got, c)
				}
			case *sdk.MissingPermissionError:
				if !errors.Is(got, sdk.ErrMissingPermission) || !errors.As(got, &mp) || mp.Permission != c.Permission {
					t.Errorf("%s: port err %v, want missing %s", a, got, c.Permission)
				}
			case *sdk.UncertainDeliveryError:
				if !errors.Is(got, sdk.ErrUncertainDelivery) || !errors.As(got, &ud) || ud.Status != c.Status {
					t.Errorf("%s: port err %v, want uncertain %d", a, got, c.Status)
				}
			}
		}
	}
}
