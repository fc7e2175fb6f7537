package discord

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Moderation (ban, kick, timeout) under the core target policy (reference
// §2.5): never the bot, never the actor, never a bot; unless the module's
// permissions carry override_target_policy, also never an absent member nor
// one whose trust tier is not strictly below the actor's (an automated
// action, actor 0, acts as staff). Every call carries the audit reason
// "[<module>] <reason>".

// TargetProtectedError is a moderation refused by the target policy (the
// original's TargetProtected).
type TargetProtectedError struct {
	Message string
}

// Error returns the refusal.
func (e *TargetProtectedError) Error() string { return e.Message }

func protected(format string, args ...any) *TargetProtectedError {
	return &TargetProtectedError{Message: actionError(nil, format, args...).Message}
}

// maxBanDeleteSeconds is Discord's cap on delete_message_seconds.
const maxBanDeleteSeconds = int(sdk.MaxBanDeleteMessages / time.Second)

// auditReason is the X-Audit-Log-Reason of module's moderation, percent-
// encoded as Discord decodes it (so any character survives the header).
func auditReason(module, reason string) discordgo.RequestOption {
	return discordgo.WithAuditLogReason(url.PathEscape(hostkit.AuditReason(module, reason)))
}

// target runs the target policy and returns the session to act with.
func (m *moduleActions) target(ctx context.Context, guildID, userID uint64, mod sdk.Moderation) (*discordgo.Session, error) {
	s, _, err := m.guild(guildID)
	if err != nil {
		return nil, err
	}
	if botID, _ := m.a.src.self(); userID == botID {
		return nil, protected("the bot cannot moderate itself")
	}
	if mod.ActorID != 0 && mod.ActorID == userID {
		return nil, protected("a member cannot be moderated by themselves")
	}
	mem, err := member(ctx, s, guildID, userID)
	if err != nil {
		return nil, actionError(err, "member %d could not be fetched", userID)
	}
	if mem == nil {
		if m.override {
			return s, nil
		}
		return nil, protected("member %d is not in guild %d", userID, guildID)
	}
	if mem.User != nil && mem.User.Bot {
		return nil, protected("bots cannot be moderated by modules")
	}
	if m.override {
		return s, nil
	}
	actor := sdk.TierStaff
	if mod.ActorID != 0 {
		if actor, err = m.a.tier(ctx, guildID, mod.ActorID); err != nil {
			return nil, err
		}
	}
	target := m.a.resolve(guildID, userID, parseIDs(mem.Roles))
	if target >= actor {
		return nil, protected("target's trust tier is not below the actor's")
	}
	return s, nil
}

func (m *moduleActions) moderated(s *discordgo.Session, action string, guildID, userID uint64, mod sdk.Moderation, err error, need int64, failed string) error {
	attrs := []any{"action", action, "guild", guildID, "user", userID, "actor", mod.ActorID}
	if err != nil {
		m.log.Warn("moderation failed", append(attrs, "err", err)...)
		return requestError(err, m.missingPermission(s, guildID, nil, need), failed)
	}
	m.log.LogAttrs(context.Background(), slog.LevelInfo, "moderation done", slog.String("action", action),
		slog.Uint64("guild", guildID), slog.Uint64("user", userID), slog.Uint64("actor", mod.ActorID))
	return nil
}

func (m *moduleActions) Ban(ctx context.Context, guildID, userID uint64, mod sdk.Moderation, deleteMessages time.Duration) error {
	s, err := m.target(ctx, guildID, userID, mod)
	if err != nil {
		return err
	}
	secs := min(max(int(deleteMessages/time.Second), 0), maxBanDeleteSeconds)
	// discordgo's GuildBanCreateWithReason sends the deprecated
	// delete_message_days: Kimi sends its own request.
	endpoint := discordgo.EndpointGuildBan(idString(guildID), idString(userID))
	err = restJSON(ctx, s, http.MethodPut, endpoint, map[string]int{"delete_message_seconds": secs}, nil, auditReason(m.module, mod.Reason))
	return m.moderated(s, "ban", guildID, userID, mod, err, discordgo.PermissionBanMembers, "banning the member failed")
}

func (m *moduleActions) Kick(ctx context.Context, guildID, userID uint64, mod sdk.Moderation) error {
	s, err := m.target(ctx, guildID, userID, mod)
	if err != nil {
		return err
	}
	err = restJSON(ctx, s, http.MethodDelete, discordgo.EndpointGuildMember(idString(guildID), idString(userID)), nil, nil, auditReason(m.module, mod.Reason))
	return m.moderated(s, "kick", guildID, userID, mod, err, discordgo.PermissionKickMembers, "kicking the member failed")
}

func (m *moduleActions) Timeout(ctx context.Context, guildID, userID uint64, mod sdk.Moderation, duration time.Duration) error {
	if duration <= 0 {
		return &sdk.ModuleContractError{Message: "timeout duration must be positive"}
	}
	duration = min(duration, sdk.MaxTimeout)
	s, err := m.target(ctx, guildID, userID, mod)
	if err != nil {
		return err
	}
	// discordgo's GuildMemberTimeout takes no audit reason.
	until := m.a.now().Add(duration).UTC()
	err = restJSON(ctx, s, http.MethodPatch, discordgo.EndpointGuildMember(idString(guildID), idString(userID)),
		&discordgo.GuildMemberParams{CommunicationDisabledUntil: &until}, nil, auditReason(m.module, mod.Reason))
	return m.moderated(s, "timeout", guildID, userID, mod, err, discordgo.PermissionModerateMembers, "timing the member out failed")
}
