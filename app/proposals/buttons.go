package proposals

import (
	"context"
	"errors"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Buttons is the core handler of the cards' m:proposals:approve:<id> and
// m:proposals:reject:<id> buttons (register it with
// Bot.RegisterCoreHandler("proposals", …)): staff only, deferred
// ephemerally, then the decision's reply.
type Buttons struct{ S *Service }

var _ discord.CoreHandler = Buttons{}

// HandleComponent implements discord.CoreHandler.
func (b Buttons) HandleComponent(ctx context.Context, kind sdk.ComponentKind, tier sdk.TrustTier, in sdk.Interaction) error {
	if tier < sdk.TierStaff {
		return &host.TierError{MinTier: sdk.TierStaff}
	}
	id, ok := sdk.ParseCustomID(in.CustomID())
	if !ok || kind != sdk.ComponentButton || len(id.Parts) != 1 || (id.Key != "approve" && id.Key != "reject") {
		return host.ErrNoHandler
	}
	if err := in.Defer(ctx, true); err != nil {
		return err
	}
	d := Decider{Source: "discord", UserID: in.UserID(), GuildID: in.GuildID()}
	var out Outcome
	var err error
	if id.Key == "approve" {
		out, err = b.S.Approve(ctx, id.Parts[0], d)
	} else {
		out, err = b.S.Reject(ctx, id.Parts[0], d, "")
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return in.Respond(ctx, sdk.Response{Content: out.Message, Ephemeral: true})
}
