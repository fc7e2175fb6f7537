package discord

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// failure is what a Discord request's error says happened: the one
// classifier the scheduled tasks' postError and the modules' discordCause
// share.
type failure struct {
	rateLimited bool          // a 429 Kimi's transport gave up on
	retryAfter  time.Duration // its retry_after (0: unknown)
	global      bool          // ... of the global limit
	uncertain   bool          // sent, outcome unknown (IsUncertain)
	method      string        // the uncertain request's method
	status      int           // Discord's HTTP status (0: no answer)
	code        int           // Discord's JSON error code (0: none)
}

// classify reads err: discordgo's RateLimitError (with the transport's
// rateLimited note), the transport's UncertainError, discordgo's
// RESTError. Anything else failed before a request reached Discord: the
// zero failure.
func classify(err error) failure {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		f := failure{rateLimited: true, status: http.StatusTooManyRequests}
		if rl.RateLimit != nil && rl.TooManyRequests != nil {
			f.retryAfter = rl.RetryAfter
		}
		var note *rateLimited
		if errors.As(err, &note) {
			f.global = note.global
			if f.retryAfter <= 0 {
				f.retryAfter = note.retryAfter
			}
		}
		return f
	}
	var rest *discordgo.RESTError
	isRest := errors.As(err, &rest) && rest.Response != nil
	if IsUncertain(err) {
		f := failure{uncertain: true}
		var u *UncertainError
		switch {
		case errors.As(err, &u):
			f.status, f.method = u.Status, u.Method
		case isRest:
			f.status = rest.Response.StatusCode
			if rest.Request != nil {
				f.method = rest.Request.Method
			}
		}
		return f
	}
	if isRest {
		f := failure{status: rest.Response.StatusCode}
		if rest.Message != nil {
			f.code = rest.Message.Code
		}
		return f
	}
	return failure{}
}

// Discord's JSON error codes the module-facing causes name.
const (
	codeUnknownChannel     = 10003
	codeUnknownGuild       = 10004
	codeUnknownMember      = 10007
	codeUnknownMessage     = 10008
	codeUnknownUser        = 10013
	codeMissingAccess      = 50001
	codeMissingPermissions = 50013
)

var unknownCauses = map[int]error{
	codeUnknownChannel: sdk.ErrUnknownChannel,
	codeUnknownGuild:   sdk.ErrUnknownGuild,
	codeUnknownMember:  sdk.ErrUnknownMember,
	codeUnknownMessage: sdk.ErrUnknownMessage,
	codeUnknownUser:    sdk.ErrUnknownUser,
}

// discordCause puts the SDK's typed cause on top of err (errors.Is and
// errors.As reach both): *sdk.RateLimitError, *sdk.UncertainDeliveryError
// (an uncertain POST only: the other methods are idempotent),
// *sdk.MissingPermissionError (perm names the permission of a 50013; nil:
// unnamed; 50001 Missing Access is VIEW_CHANNEL) and the sdk.ErrUnknown*
// sentinels. Other errors are returned as they are.
func discordCause(err error, perm func() string) error {
	if err == nil {
		return nil
	}
	f := classify(err)
	switch {
	case f.rateLimited:
		return &sdk.RateLimitError{RetryAfter: f.retryAfter, Global: f.global, Err: err}
	case f.uncertain && f.method == http.MethodPost:
		return &sdk.UncertainDeliveryError{Status: f.status, Err: err}
	case f.code == codeMissingPermissions:
		p := ""
		if perm != nil {
			p = perm()
		}
		return &sdk.MissingPermissionError{Permission: p, Err: err}
	case f.code == codeMissingAccess:
		return &sdk.MissingPermissionError{Permission: "VIEW_CHANNEL", Err: err}
	}
	if sentinel := unknownCauses[f.code]; sentinel != nil {
		return fmt.Errorf("discord: %w: %w", sentinel, err)
	}
	return err
}

// permissionNames are Discord's names of the permissions the actions need.
var permissionNames = map[int64]string{
	discordgo.PermissionViewChannel:           "VIEW_CHANNEL",
	discordgo.PermissionSendMessages:          "SEND_MESSAGES",
	discordgo.PermissionSendMessagesInThreads: "SEND_MESSAGES_IN_THREADS",
	discordgo.PermissionEmbedLinks:            "EMBED_LINKS",
	discordgo.PermissionAttachFiles:           "ATTACH_FILES",
	discordgo.PermissionReadMessageHistory:    "READ_MESSAGE_HISTORY",
	discordgo.PermissionManageMessages:        "MANAGE_MESSAGES",
	discordgo.PermissionManageGuild:           "MANAGE_GUILD",
	discordgo.PermissionBanMembers:            "BAN_MEMBERS",
	discordgo.PermissionKickMembers:           "KICK_MEMBERS",
	discordgo.PermissionModerateMembers:       "MODERATE_MEMBERS",
}

// missingPermission returns a func naming the first of needs the bot
// lacks in channel c (nil: guild-wide) of guildID by the session state's
// roles and overwrites, else needs[0], the permission the action is about
// (the state is stale, or a role hierarchy refused it): Discord's 50013
// does not say which.
func (m *moduleActions) missingPermission(s *discordgo.Session, guildID uint64, c *discordgo.Channel, needs ...int64) func() string {
	return func() string {
		if len(needs) == 0 {
			return ""
		}
		fallback := permissionNames[needs[0]]
		botID, _ := m.a.src.self()
		g, err := s.State.Guild(idString(guildID))
		mem := stateMember(s, idString(guildID), idString(botID))
		if err != nil || g == nil || mem == nil {
			return fallback
		}
		base := c
		if base == nil {
			base = &discordgo.Channel{}
		} else if isThread(base.Type) && base.ParentID != "" {
			if p := stateChannel(s, base.ParentID); p != nil {
				base = p
			}
		}
		s.State.RLock()
		perms := channelPermissions(g, base, idString(botID), mem.Roles)
		s.State.RUnlock()
		if perms&discordgo.PermissionAdministrator != 0 {
			return fallback
		}
		for _, p := range needs {
			if perms&p != p {
				return permissionNames[p]
			}
		}
		return fallback
	}
}

// sendNeeds are the permissions posting msg in channel c takes, the one
// the send is about first (missingPermission's fallback), then in the
// order Discord would miss them.
func sendNeeds(c *discordgo.Channel, msg sdk.OutgoingMessage) []int64 {
	send := int64(discordgo.PermissionSendMessages)
	if isThread(c.Type) {
		send = discordgo.PermissionSendMessagesInThreads
	}
	needs := []int64{send, discordgo.PermissionViewChannel}
	if msg.ReplyTo != nil {
		needs = append(needs, discordgo.PermissionReadMessageHistory)
	}
	if msg.Embed != nil {
		needs = append(needs, discordgo.PermissionEmbedLinks)
	}
	return needs
}
