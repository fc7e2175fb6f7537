package admin

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/web/templates"
)

// taskShow is GET /tasks/{id}: the definition's summary, the actions and
// the run history (a live region).
func (s *Server) taskShow(c echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	v, err := s.taskShowView(ctx, id)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, templates.TaskPage(s.chrome(c, v.Task.Name, "tasks"), v))
}

// taskShowView reads a task's page.
func (s *Server) taskShowView(ctx context.Context, id string) (templates.TaskShowView, error) {
	t, d, err := s.taskDetail(ctx, id)
	if err != nil {
		return templates.TaskShowView{}, err
	}
	def := t.Definition
	names := s.namer()
	v := templates.TaskShowView{
		Task: taskRow(t, names, nil, time.Now()), Owner: strconv.FormatUint(t.OwnerID, 10), Revision: strconv.Itoa(t.Revision),
		Content: def.Template, ActionBase: taskPath(id), Live: taskEventsURL(id), Detail: d,
	}
	v.Summary = []templates.Stat{
		{Label: "Server", Value: v.Task.Guild, Names: []templates.Name{v.Task.GuildName}, TestID: "task-guild"},
		{Label: "Owner", Value: v.Owner, Names: names.Members(t.GuildID, []uint64{t.OwnerID}), Hint: s.ownerNote(t.GuildID, t.OwnerID), TestID: "task-owner"},
		{Label: "Schedule", Value: v.Task.Schedule, TestID: "task-schedule"},
		{Label: "Destinations", Value: "none", Names: names.Channels(def.Destinations), TestID: "task-destinations"},
		{Label: "Revision", Value: v.Revision, TestID: "task-revision"},
	}
	if def.LogChannelID != 0 {
		v.Summary = append(v.Summary, templates.Stat{Label: "Log channel", Names: names.Channels([]uint64{def.LogChannelID})})
	}
	if def.Embed != nil {
		v.Summary = append(v.Summary, templates.Stat{Label: "Embed", Value: def.Embed.Title})
	}
	for _, a := range def.Attachments {
		v.Files = append(v.Files, templates.TaskFile{Name: a.Name, Size: byteSize(a.Size)})
	}
	v.Mentions = s.mentions(t.GuildID)
	return v, nil
}

// previewChunks are a preview's messages as the page shows them.
func previewChunks(p tasks.Preview, names namer) []templates.TaskChunk {
	out := []templates.TaskChunk{}
	for _, ch := range p.Chunks {
		tc := templates.TaskChunk{Label: names.Channel(ch.ChannelID).Text() + " · " + strconv.Itoa(ch.Index+1) + "/" + strconv.Itoa(ch.Total), Content: ch.Content}
		if ch.Embed != nil {
			tc.Embed = ch.Embed.Title
			if ch.Embed.Description != "" {
				tc.Embed += "\n" + ch.Embed.Description
			}
		}
		out = append(out, tc)
	}
	return out
}

// taskDirectory is what a task's page asks the bot's directory: whether
// it knows the guild and the owner as its member.
type taskDirectory interface {
	Guild(id uint64) (discord.GuildInfo, bool)
	Member(guildID, userID uint64) (discord.MemberInfo, bool)
}

var _ taskDirectory = (*discord.Bot)(nil)

// ownerNote is "not a member of this server" (the Owner stat's hint) when the bot knows the
// task's guild but not its owner among the members (a miss also asks
// Discord once in the background, so a member not yet seen is named on a
// later render); "" otherwise, and without the bot.
func (s *Server) ownerNote(guildID, ownerID uint64) string {
	d, ok := s.opts.Discord.(taskDirectory)
	if !ok || d == nil {
		return ""
	}
	if _, known := d.Guild(guildID); !known {
		return ""
	}
	if _, member := d.Member(guildID, ownerID); member {
		return ""
	}
	return "not a member of this server"
}
