package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// guildsList shows every guild that has a document: its activation, the
// size of its own staff lists and the modules whose settings there are
// invalid, and the add-a-guild form.
func (s *Server) guildsList(c echo.Context) error {
	return s.renderGuilds(c, http.StatusOK, templates.GuildsView{})
}

// renderGuilds renders the list with v's add form (kept after a refusal).
func (s *Server) renderGuilds(c echo.Context, status int, v templates.GuildsView) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	list, err := s.opts.Guilds.List(ctx)
	if err != nil {
		return fmt.Errorf("admin: list guilds: %w", err)
	}
	names := s.namer()
	for _, g := range list {
		v.Rows = append(v.Rows, templates.GuildRow{
			ID: strconv.FormatUint(g.GuildID, 10), Name: names.Guild(g.GuildID), Status: guildStatus(g), HasDocument: g.HasDocument,
			Staff: staffCount(g.StaffUsers, g.StaffRoles), Invalid: g.InvalidModules, BlockedBy: g.BlockedBy,
		})
	}
	return render(c, status, templates.GuildsPage(s.chrome(c, "Guilds", "guilds"), v))
}
