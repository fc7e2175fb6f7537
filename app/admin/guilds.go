package admin

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/web/templates"
)

// GuildConfig is what the guild pages need of the configuration documents:
// the list and one guild's row of it, a document with its history,
// compare-and-swap writes and reverts, and the module schemas the settings
// forms are generated from.
type GuildConfig interface {
	List(ctx context.Context) ([]guildcfg.GuildSummary, error)
	Summary(guildID uint64) (guildcfg.GuildSummary, bool)
	Active(guildID uint64) bool
	Document(ctx context.Context, target guildcfg.Target) (guildcfg.Document, error)
	History(ctx context.Context, target guildcfg.Target, page guildcfg.HistoryPage) (guildcfg.HistoryResult, error)
	Write(ctx context.Context, target guildcfg.Target, text, expectedRevision string, actor guildcfg.Actor) (guildcfg.Document, error)
	Revert(ctx context.Context, target guildcfg.Target, historyID int64, expectedRevision string, actor guildcfg.Actor) (guildcfg.Document, error)
	Schema(module string) (sdk.GuildSettingsSchema, bool)
	SchemaModules() []string
}

var _ GuildConfig = (*guildcfg.Service)(nil)

// guildActor is the signed-in admin as the writer of a document.
func guildActor(c echo.Context) guildcfg.Actor {
	name := ""
	if sess := sessionOf(c); sess != nil {
		name = sess.Username
	}
	return guildcfg.Actor{Kind: guildcfg.ActorAdmin, Name: name, IP: c.RealIP()}
}

// requireGuilds answers 503 on the guild pages of a server without the
// configuration service.
func (s *Server) requireGuilds(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.opts.Guilds == nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "Guild configuration is not available on this server.")
		}
		return next(c)
	}
}

// guildParam is the {id} of a guild address; anything that is not a valid
// guild id is a 404, as for any unknown address.
func guildParam(c echo.Context) (uint64, error) {
	t, err := guildcfg.ParseTarget("guild:" + c.Param("id"))
	if err != nil || t.Kind != guildcfg.KindGuild {
		return 0, echo.ErrNotFound
	}
	return t.GuildID, nil
}

// moduleTarget is the settings document of module in guild, or a 404 for a
// module without guild settings.
func (s *Server) moduleTarget(guild uint64, module string) (guildcfg.Target, sdk.GuildSettingsSchema, error) {
	schema, ok := s.opts.Guilds.Schema(module)
	if !ok {
		return guildcfg.Target{}, schema, echo.ErrNotFound
	}
	return guildcfg.GuildModuleTarget(guild, module), schema, nil
}

func guildPath(id uint64) string { return "/guilds/" + strconv.FormatUint(id, 10) }

// guildStatus is a summary's activation as a badge.
func guildStatus(g guildcfg.GuildSummary) templates.GuildStatus {
	switch {
	case !g.HasDocument:
		return templates.GuildStatus{Label: "Inactive", Kind: "neutral", Why: "no server-setup document"}
	case !g.Valid:
		return templates.GuildStatus{Label: "Inactive", Kind: "danger", Why: "the server-setup document is invalid"}
	case g.Active:
		return templates.GuildStatus{Label: "Active", Kind: "success"}
	case g.BotActive:
		return templates.GuildStatus{Label: "Blocked", Kind: "warning",
			Why: "invalid settings of " + strings.Join(g.BlockedBy, ", ") + " take the guild offline"}
	}
	return templates.GuildStatus{Label: "Inactive", Kind: "neutral", Why: "bot_active is off"}
}

// staffCount says how many staff entries the guild's own lists hold.
func staffCount(users, roles int) string {
	plural := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.Itoa(n) + " " + one + "s"
	}
	return plural(users, "user") + ", " + plural(roles, "role")
}

func idsText(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(parts, "\n")
}

func problemMessages(problems []guildcfg.FieldError) []string {
	out := make([]string, 0, len(problems))
	for _, p := range problems {
		msg := p.Message
		if p.Line > 0 {
			msg = "line " + strconv.Itoa(p.Line) + ": " + msg
		}
		out = append(out, msg)
	}
	return out
}

// guildKnownKeys are the server-setup keys the form edits.
var guildKnownKeys = []string{guildcfg.KeyBotActive, guildcfg.KeyStaffUserIDs, guildcfg.KeyStaffRoleIDs,
	guildcfg.KeyRegularRoleIDs, guildcfg.KeyAllowedChannelIDs, guildcfg.KeyProposalChannelID, guildcfg.KeyScheduledTasks, guildcfg.KeyAssistant}

// extraKeys lists the top-level keys of the stored document that the form
// does not show (guildcfg keeps them for the features that read them).
func extraKeys(doc guildcfg.Document) []string {
	fm := doc.Frontmatter
	if fm == nil {
		return nil
	}
	var out []string
	for _, k := range fm.Keys {
		if !slices.Contains(guildKnownKeys, k) {
			out = append(out, k)
		}
	}
	return out
}

// guildBody is the stored document's text after its frontmatter, which the
// form keeps as it is ("" for a document never written).
func guildBody(doc guildcfg.Document) string {
	if doc.Guild != nil {
		return doc.Guild.Body
	}
	return ""
}

// setupView is the server-setup form filled from the stored document.
func setupView(doc guildcfg.Document) templates.GuildSetupView {
	v := templates.GuildSetupView{Editable: true, TasksMinTier: "staff", TasksTimezone: "UTC",
		AssistantEnabled: form.AssistantDefault, AssistantMinTier: "member"}
	switch {
	case doc.Exists && doc.Guild == nil:
		v.Editable = false
		v.Note = "The stored document is invalid, so the form cannot show it. Correct it in the raw document below."
		return v
	case doc.Exists:
		if extra := extraKeys(doc); len(extra) > 0 {
			v.Editable = false
			v.Note = "The stored document also sets " + strings.Join(extra, ", ") +
				", which this form does not show. Edit the raw document below, so they are kept."
		} else if doc.Comments {
			v.Editable = false
			v.Note = "The stored document has YAML comments, which this form would drop. Edit the raw document below, so they are kept."
		}
	}
	if g := doc.Guild; g != nil {
		v.BotActive = g.BotActive
		v.StaffUserIDs, v.StaffRoleIDs, v.RegularRoleIDs = idsText(g.StaffUserIDs), idsText(g.StaffRoleIDs), idsText(g.RegularRoleIDs)
		v.AllowedChannelIDs = idsText(g.AllowedChannelIDs)
		if g.ProposalChannelID != 0 {
			v.ProposalChannelID = strconv.FormatUint(g.ProposalChannelID, 10)
		}
		v.TasksEnabled, v.TasksMinTier, v.TasksTimezone = g.Tasks.Enabled, g.Tasks.MinTier.Or(sdk.TierStaff).String(), g.Tasks.Timezone
		v.TasksDestinations = idsText(g.Tasks.Destinations)
		a := g.Assistant
		switch {
		case a.Enabled == nil:
			v.AssistantEnabled = form.AssistantDefault
		case *a.Enabled:
			v.AssistantEnabled = form.AssistantOn
		default:
			v.AssistantEnabled = form.AssistantOff
		}
		v.AssistantMinTier = a.TierName()
		v.AssistantBlockedTools, v.AssistantPinnedTools = strings.Join(a.BlockedTools, "\n"), strings.Join(a.PinnedTools, "\n")
		if a.DailyTokens > 0 {
			v.AssistantDailyTokens = strconv.FormatInt(a.DailyTokens, 10)
		}
	}
	return v
}
