package fakediscord

import (
	"net/http"
	"net/url"
	"strconv"
)

func (s *Server) routes() {
	s.handle("GET", "/gateway", s.getGateway)
	s.handle("GET", "/gateway/bot", s.getGatewayBot)
	s.handle("GET", "/users/@me", func(*call) (int, any, *apiError) { return 200, s.bot, nil })
	s.handle("GET", "/users/{user}", s.getUser)
	s.handle("GET", "/applications/@me", s.getApplication)
	s.handle("GET", "/oauth2/applications/@me", s.getApplication)

	s.handle("GET", "/guilds/{guild}", s.getGuild)
	s.handle("GET", "/guilds/{guild}/channels", s.getGuildChannels)
	s.handle("POST", "/guilds/{guild}/channels", s.createGuildChannel)
	s.handle("GET", "/guilds/{guild}/roles", s.getRoles)
	s.handle("POST", "/guilds/{guild}/roles", s.createRole)
	s.handle("GET", "/guilds/{guild}/members", s.listMembers)
	s.handle("GET", "/guilds/{guild}/members/search", s.searchMembers)
	s.handle("GET", "/guilds/{guild}/members/{user}", s.getMember)
	s.handle("PATCH", "/guilds/{guild}/members/{user}", s.patchMember)
	s.handle("DELETE", "/guilds/{guild}/members/{user}", s.kickMember)
	s.handle("PUT", "/guilds/{guild}/members/{user}/roles/{role}", s.memberRole(true))
	s.handle("DELETE", "/guilds/{guild}/members/{user}/roles/{role}", s.memberRole(false))
	s.handle("GET", "/guilds/{guild}/bans", s.listBans)
	s.handle("GET", "/guilds/{guild}/bans/{user}", s.getBan)
	s.handle("PUT", "/guilds/{guild}/bans/{user}", s.createBan)
	s.handle("DELETE", "/guilds/{guild}/bans/{user}", s.deleteBan)
	s.handle("GET", "/guilds/{guild}/invites", s.guildInvites)
	s.handle("GET", "/guilds/{guild}/audit-logs", s.auditLog)

	s.handle("GET", "/channels/{channel}", s.getChannel)
	s.handle("PATCH", "/channels/{channel}", s.patchChannel)
	s.handle("DELETE", "/channels/{channel}", s.deleteChannel)
	s.handle("POST", "/channels/{channel}/threads", s.startThread)
	s.handle("GET", "/channels/{channel}/messages", s.history)
	s.handle("POST", "/channels/{channel}/messages", s.createMessage)
	s.handle("POST", "/channels/{channel}/messages/bulk-delete", s.bulkDelete)
	s.handle("GET", "/channels/{channel}/messages/{message}", s.getMessage)
	s.handle("PATCH", "/channels/{channel}/messages/{message}", s.editMessage)
	s.handle("DELETE", "/channels/{channel}/messages/{message}", s.deleteMessage)
	s.handle("PUT", "/channels/{channel}/messages/{message}/reactions/{emoji}/@me", s.react(true))
	s.handle("DELETE", "/channels/{channel}/messages/{message}/reactions/{emoji}/@me", s.react(false))
	s.handle("GET", "/channels/{channel}/pins", s.listPins)
	s.handle("PUT", "/channels/{channel}/pins/{message}", s.pin(true))
	s.handle("DELETE", "/channels/{channel}/pins/{message}", s.pin(false))
	s.handle("POST", "/channels/{channel}/invites", s.createInvite)
	s.handle("GET", "/invites/{code}", s.getInvite)
	s.handle("DELETE", "/invites/{code}", s.deleteInvite)

	s.handle("GET", "/applications/{app}/commands", s.getCommands)
	s.handle("PUT", "/applications/{app}/commands", s.overwriteCommands)
	s.handle("GET", "/applications/{app}/guilds/{guild}/commands", s.getCommands)
	s.handle("PUT", "/applications/{app}/guilds/{guild}/commands", s.overwriteCommands)

	s.dmRoutes()
	s.threadRoutes()

	s.handle("POST", "/interactions/{interaction}/{token}/callback", s.interactionCallback)
	s.handle("POST", "/webhooks/{app}/{token}", s.followup)
	s.handle("GET", "/webhooks/{app}/{token}/messages/{message}", s.webhookMessage)
	s.handle("PATCH", "/webhooks/{app}/{token}/messages/{message}", s.webhookEdit)
	s.handle("DELETE", "/webhooks/{app}/{token}/messages/{message}", s.webhookDelete)

	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, "", func(*call) (int, any, *apiError) {
			return 0, nil, &apiError{status: 404, Code: 0, Message: "404: Not Found"}
		})
	})
}

func (s *Server) getGateway(*call) (int, any, *apiError) {
	return 200, map[string]string{"url": s.GatewayURL()}, nil
}

// getGatewayBot reports the session start limit (SetSessionStartLimit; each Identify spends one).
func (s *Server) getGatewayBot(*call) (int, any, *apiError) {
	st := s.sessionStarts()
	return 200, map[string]any{"url": s.GatewayURL(), "shards": 1,
		"session_start_limit": map[string]int64{"total": int64(st.total), "remaining": int64(st.remaining),
			"reset_after": st.resetAt.Sub(s.opts.Now()).Milliseconds(), "max_concurrency": 1}}, nil
}

func (s *Server) getUser(c *call) (int, any, *apiError) {
	u := s.users[c.param("user")]
	if u == nil {
		return 0, nil, unknown(CodeUnknownUser, "User")
	}
	return 200, u, nil
}

func (s *Server) getApplication(*call) (int, any, *apiError) { return 200, s.app, nil }

// reason is the X-Audit-Log-Reason header, URL-decoded as Discord decodes it.
func (c *call) reason() string {
	r := c.r.Header.Get("X-Audit-Log-Reason")
	if d, err := url.PathUnescape(r); err == nil {
		return d
	}
	return r
}

func intQuery(q url.Values, name string, def, lo, hi int) (int, *apiError) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, invalidForm(name, "NUMBER_TYPE_COERCE", "Value \""+v+"\" is not int.")
	}
	if n < lo {
		return 0, invalidForm(name, "NUMBER_TYPE_MIN", "int value should be greater than or equal to "+strconv.Itoa(lo)+".")
	}
	if n > hi {
		return 0, invalidForm(name, "NUMBER_TYPE_MAX", "int value should be less than or equal to "+strconv.Itoa(hi)+".")
	}
	return n, nil
}
