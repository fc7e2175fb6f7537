package kudos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Refused is a rule declining a kudos. Its message is safe to show to the
// person who asked, so every entry point replies with it verbatim.
type Refused struct{ Message string }

// Error returns the user-facing message.
func (r *Refused) Error() string { return r.Message }

func refuse(format string, args ...any) *Refused {
	return &Refused{Message: fmt.Sprintf(format, args...)}
}

// GivenEvent is the payload of TopicGiven. Plain data: subscribers may live
// in other modules and must not share this module's state.
type GivenEvent struct {
	GuildID    uint64
	GiverID    uint64
	ReceiverID uint64
	Reason     string
	KudosID    int64
}

// give is the one business rule, shared by the LLM tool, the slash command
// and the button so the three entry points cannot drift apart. It records
// one kudos or returns a *Refused with a user-facing reason; any other
// error is an outage.
func (m *module) give(ctx context.Context, guildID, giverID, receiverID uint64, reason string, giverTier sdk.TrustTier) (*Kudos, error) {
	rt, ledger, err := m.started()
	if err != nil {
		return nil, err
	}
	if rt.GuildSettings != nil && !rt.GuildSettings.IsEnabled(ctx, guildID) {
		return nil, refuse("Kudos are not enabled in this server.")
	}
	settings, err := m.guildSettings(ctx, rt, guildID)
	if err != nil {
		return nil, err
	}
	required, err := sdk.ParseTrustTier(settings.String(FieldGiverMinTier))
	if err != nil {
		required = sdk.TierMember // unset: the schema's default
	}
	if giverTier.Or(sdk.TierMember) < required {
		return nil, refuse("Only %s members and above may give kudos here.", required)
	}
	if giverID == receiverID {
		return nil, refuse("You cannot give kudos to yourself.")
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if reason == "" {
		return nil, refuse("Say what the kudos is for.")
	}
	if utf8.RuneCountInString(reason) > MaxReasonLength {
		return nil, refuse("Keep the reason under %d characters.", MaxReasonLength)
	}
	kudos, err := ledger.give(ctx, guildID, giverID, receiverID, reason, m.clock(), m.cfg.dailyLimit)
	if err != nil {
		return nil, err
	}
	if kudos == nil {
		return nil, refuse("You have given %d kudos in the last 24 hours.", m.cfg.dailyLimit)
	}
	// Fire and forget: delivery is asynchronous and events are not durable.
	// The kudos is recorded either way, so a publish error is only logged.
	event := GivenEvent{GuildID: guildID, GiverID: giverID, ReceiverID: receiverID, Reason: reason, KudosID: kudos.ID}
	if err := rt.Events.Publish(TopicGiven, event); err != nil {
		rt.Logger.Warn("publish given event", "err", err)
	}
	return kudos, nil
}

// summary is the public confirmation of a kudos.
func summary(k *Kudos) string { return fmt.Sprintf("Kudos to <@%d>: %s", k.ReceiverID, k.Reason) }

// asRefused reports whether err is a refusal and returns its message.
func asRefused(err error) (string, bool) {
	var r *Refused
	if errors.As(err, &r) {
		return r.Message, true
	}
	return "", false
}
