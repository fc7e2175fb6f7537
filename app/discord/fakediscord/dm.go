package fakediscord

import (
	"net/http"
	"slices"

	"github.com/bwmarrin/discordgo"
)

// Direct messages: POST /users/@me/channels opens (or returns) the DM channel with a user;
// messages to it go through POST /channels/{channel}/messages as Discord's do. A message is
// refused 403 50007 "Cannot send messages to this user" when the user blocks DMs
// (SetDMsBlocked) or shares no guild with the bot, as Discord refuses it.

// CodeCannotMessageUser is Discord's "Cannot send messages to this user".
const CodeCannotMessageUser = 50007

// CodeInvalidRecipient is Discord's "Invalid Recipient(s)".
const CodeInvalidRecipient = 50033

var errCannotMessageUser = &apiError{status: http.StatusForbidden, Code: CodeCannotMessageUser, Message: "Cannot send messages to this user"}

// sideState is the model of the routes in dm.go and threads.go (s.mu held; maps made on first
// use).
type sideState struct {
	dmBlocked     map[string]bool                               // user id -> blocks DMs
	threadMembers map[string]map[string]*discordgo.ThreadMember // thread id -> user id -> member
	vanity        map[string]vanity                             // guild id -> vanity invite
}

func (s *Server) dmRoutes() {
	s.handle("POST", "/users/@me/channels", s.createDM)
}

// SetDMsBlocked makes a user refuse (or accept again) direct messages from the bot.
func (s *Server) SetDMsBlocked(userID string, blocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.side.dmBlocked == nil {
		s.side.dmBlocked = map[string]bool{}
	}
	s.side.dmBlocked[userID] = blocked
}

// DMChannel returns the id of the DM channel opened with a user ("" when none was).
func (s *Server) DMChannel(userID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.dmOf(userID); ch != nil {
		return ch.c.ID
	}
	return ""
}

// dmOf returns the DM channel with userID, or nil (s.mu held).
func (s *Server) dmOf(userID string) *channel {
	for _, ch := range s.channels {
		if ch.c.Type == discordgo.ChannelTypeDM && len(ch.c.Recipients) == 1 && ch.c.Recipients[0].ID == userID {
			return ch
		}
	}
	return nil
}

func (s *Server) createDM(c *call) (int, any, *apiError) {
	var b struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if b.RecipientID == "" {
		return 0, nil, invalidForm("recipient_id", "BASE_TYPE_REQUIRED", "This field is required")
	}
	u := s.users[b.RecipientID]
	if u == nil || u.ID == s.opts.BotID {
		return 0, nil, &apiError{status: http.StatusBadRequest, Code: CodeInvalidRecipient, Message: "Invalid Recipient(s)"}
	}
	if ch := s.dmOf(u.ID); ch != nil {
		return 200, ch.c, nil
	}
	ch := &discordgo.Channel{ID: s.newID(), Type: discordgo.ChannelTypeDM, Recipients: []*discordgo.User{u}}
	s.channels[ch.ID] = &channel{c: ch}
	return 200, ch, nil
}

// dmMessage creates a message in a DM channel, refused as Discord refuses it (s.mu held).
func (s *Server) dmMessage(c *call, ch *channel) (int, any, *apiError) {
	u := ch.c.Recipients[0]
	shares := slices.ContainsFunc(s.gorder, func(id string) bool {
		g := s.guilds[id]
		return g.members[u.ID] != nil && g.members[s.opts.BotID] != nil
	})
	if s.side.dmBlocked[u.ID] || !shares {
		return 0, nil, errCannotMessageUser
	}
	m, err := s.buildMessage(c, ch, s.bot)
	if err != nil {
		return 0, nil, err
	}
	s.storeMessage(ch, m)
	c.created = m
	return 200, wire(m), nil
}
