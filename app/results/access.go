package results

import (
	"context"
	"errors"
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
)

// GuildActivity says whether a guild is active; *guildcfg.Service
// implements it.
type GuildActivity interface {
	Active(guildID uint64) bool
}

// MemberTiers resolves a member's current trust tier; *discord.Bot
// implements it.
type MemberTiers interface {
	Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error)
}

// ChannelViews answers whether a user (the owner, the bot) can view a
// channel now; app/discord's adapter (discord.NewChannelViews)
// implements it.
type ChannelViews interface {
	CanViewChannel(ctx context.Context, guildID, userID, channelID uint64) (bool, error)
	// BotUserID is the bot's user id (0 while it never connected).
	BotUserID() uint64
}

// ErrAccessDenied matches (errors.Is) every refusal of DiscordAccess.Check;
// other errors are failures to find out (Discord unreachable, ctx ended).
// Either blocks the notification (DetailAccess).
var ErrAccessDenied = errors.New("results: access denied")

// DiscordAccess is the Discord side of a producer's CheckAccess (reference
// §5.2: the owner's current membership and tier, the visibility of the
// origin and every output channel): the producer adds its own policy (the
// task's, the guild's task policy) and calls Check. Every field is
// required.
type DiscordAccess struct {
	Guilds   GuildActivity
	Tiers    MemberTiers
	Channels ChannelViews
}

// Check returns nil while p may still be handed to subscribers: its guild
// is active, its owner's tier there is at least minTier (0: member) and
// both the owner and the bot can view p's origin channel (when set) and
// the channel of every message. A refusal wraps ErrAccessDenied and says
// why; ids only, no content.
func (a DiscordAccess) Check(ctx context.Context, p Publication, minTier sdk.TrustTier) error {
	if a.Guilds == nil || a.Tiers == nil || a.Channels == nil {
		return errors.New("results: access: the Discord access check is not configured")
	}
	if !a.Guilds.Active(p.GuildID) {
		return fmt.Errorf("%w: guild %d is not active", ErrAccessDenied, p.GuildID)
	}
	minTier = minTier.Or(sdk.TierMember)
	tier, err := a.Tiers.Tier(ctx, p.GuildID, p.OwnerID)
	if err != nil {
		return fmt.Errorf("results: access: owner %d's tier: %w", p.OwnerID, err)
	}
	if !tier.AtLeast(minTier) {
		return fmt.Errorf("%w: owner %d is %s, below %s", ErrAccessDenied, p.OwnerID, tier, minTier)
	}
	bot := a.Channels.BotUserID()
	if bot == 0 {
		return errors.New("results: access: the bot's user id is unknown (Discord never connected)")
	}
	for _, ch := range publicationChannels(p) {
		for _, who := range []struct {
			id   uint64
			name string
		}{{p.OwnerID, fmt.Sprintf("owner %d", p.OwnerID)}, {bot, "the bot"}} {
			ok, err := a.Channels.CanViewChannel(ctx, p.GuildID, who.id, ch)
			if err != nil {
				return fmt.Errorf("results: access: can %s view channel %d: %w", who.name, ch, err)
			}
			if !ok {
				return fmt.Errorf("%w: %s cannot view channel %d", ErrAccessDenied, who.name, ch)
			}
		}
	}
	return nil
}

// publicationChannels are p's origin channel (when set) and each
// message's channel, each once, in that order.
func publicationChannels(p Publication) []uint64 {
	var out []uint64
	seen := map[uint64]bool{0: true}
	add := func(id uint64) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	add(p.OriginChannelID)
	for _, m := range p.Messages {
		add(m.Message.ChannelID)
	}
	return out
}
