package admin

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// guildMembersSearch is GET /guilds/{id}/members/search?q=: the member
// picker's suggestions, as datalist options (escaped by templ), at most 25
// members of the guild whose name starts with q, from the bot's member
// cache, never Discord. 404 for a guild the bot does not know, 400 for a
// query that is no name's start.
func (s *Server) guildMembersSearch(c echo.Context) error {
	id, err := guildParam(c)
	if err != nil {
		return err
	}
	dir := s.directory()
	if dir == nil {
		return echo.ErrNotFound
	}
	if _, ok := dir.Guild(id); !ok {
		return echo.ErrNotFound
	}
	f := form.ParseMemberSearch(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(http.StatusBadRequest, errs.Get(form.MemberSearchQuery))
	}
	var opts []templates.PickOption
	for _, m := range dir.SearchMembers(id, f.Q, 25) {
		opts = append(opts, templates.PickOption{Value: strconv.FormatUint(m.ID, 10), Label: memberLabel(m)})
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return render(c, http.StatusOK, templates.MemberOptions(opts))
}
