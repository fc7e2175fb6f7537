package admin

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// demoShow is demo mode's chat view: the demo guild's channels, the open channel's messages
// (?channel=, the first channel by default) and the form to post as a demo member. Outside
// demo mode the page does not exist.
func (s *Server) demoShow(c echo.Context) error {
	return s.renderDemo(c, http.StatusOK, c.QueryParam(form.FieldDemoChannel), form.DemoMessage{}, nil)
}

// renderDemo renders /demo for channelID, keeping a refused form f with its errors.
func (s *Server) renderDemo(c echo.Context, status int, channelID string, f form.DemoMessage, errs form.Errors) error {
	if s.opts.Demo == nil {
		return echo.ErrNotFound
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	g, err := s.opts.Demo.DemoGuild(ctx)
	if err != nil {
		return fmt.Errorf("admin: demo guild: %w", err)
	}
	v := templates.DemoView{GuildName: g.Name, Member: f.Member, Content: f.Content, Errors: errs}
	for _, ch := range g.Channels {
		v.Channels = append(v.Channels, templates.DemoLink{ID: ch.ID, Name: ch.Name})
		if ch.ID == channelID || (channelID == "" && v.Channel == "") {
			v.Channel, v.ChannelName = ch.ID, ch.Name
		}
	}
	if v.Channel == "" {
		return echo.ErrNotFound
	}
	for _, m := range g.Members {
		v.Members = append(v.Members, templates.DemoLink{ID: m.ID, Name: m.Name})
	}
	msgs, err := s.opts.Demo.DemoMessages(ctx, v.Channel)
	if errors.Is(err, ErrDemoUnknown) {
		return echo.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("admin: demo messages: %w", err)
	}
	for _, m := range msgs {
		v.Messages = append(v.Messages, templates.DemoMessage{ID: m.ID, Author: m.Author, Bot: m.Bot, Content: m.Content,
			At: m.At, Embeds: m.Embeds, Buttons: m.Buttons})
	}
	return render(c, status, templates.DemoPage(s.chrome(c, "Demo", "demo"), v))
}
