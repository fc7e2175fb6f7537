package admin

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

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
	v := templates.TaskShowView{
		Task: taskRow(t, s.guildNames(), nil, time.Now()), Owner: strconv.FormatUint(t.OwnerID, 10), Revision: strconv.Itoa(t.Revision),
		Content: def.Template, ActionBase: taskPath(id), Live: taskEventsURL(id), Detail: d,
	}
	v.Summary = []templates.Stat{
		{Label: "Server", Value: v.Task.Guild, TestID: "task-guild"},
		{Label: "Owner", Value: v.Owner, TestID: "task-owner"},
		{Label: "Schedule", Value: v.Task.Schedule, TestID: "task-schedule"},
		{Label: "Destinations", Value: idList(def.Destinations), TestID: "task-destinations"},
		{Label: "Revision", Value: v.Revision, TestID: "task-revision"},
	}
	if def.LogChannelID != 0 {
		v.Summary = append(v.Summary, templates.Stat{Label: "Log channel", Value: strconv.FormatUint(def.LogChannelID, 10)})
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

// idList is ids comma separated.
func idList(ids []uint64) string {
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += ", "
		}
		out += strconv.FormatUint(id, 10)
	}
	return out
}

// previewChunks are a preview's messages as the page shows them.
func previewChunks(p tasks.Preview) []templates.TaskChunk {
	out := []templates.TaskChunk{}
	for _, ch := range p.Chunks {
		tc := templates.TaskChunk{Label: "#" + strconv.FormatUint(ch.ChannelID, 10) + " · " + strconv.Itoa(ch.Index+1) + "/" + strconv.Itoa(ch.Total), Content: ch.Content}
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
