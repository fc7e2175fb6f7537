package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// demoShow is demo mode's chat view: the demo guild's channels, the open channel's messages
// (?channel=, an id or a name with or without its #, the first channel by default) as the demo
// member ?as= sees them (the first by default), the modals open for that member, the slash
// commands and the forms to act. Outside demo mode the page does not exist.
func (s *Server) demoShow(c echo.Context) error {
	return s.renderDemo(c, http.StatusOK, demoRefused{channel: c.QueryParam(form.FieldDemoChannel), as: c.QueryParam("as")})
}

// demoRefused is what /demo shows again after a refused form: where (channel, member), which
// form and its errors, the form's values kept.
type demoRefused struct {
	channel, as string
	at          string
	errs        form.Errors
	post        form.DemoMessage
	command     *form.DemoCommand
	modal       *form.DemoModal
}

// demoLocation is /demo for a channel as a member: where a form redirects after it acted.
func demoLocation(channel, as string) string {
	return "/demo?" + url.Values{form.FieldDemoChannel: {channel}, "as": {as}}.Encode()
}

// demoView builds the page's view for channelID as member as (either may be "": the first).
// It is nil (and no error) when the channel is not in the demo guild.
func (s *Server) demoView(c echo.Context, channelID, as string) (*templates.DemoView, error) {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	g, err := s.opts.Demo.DemoGuild(ctx)
	if err != nil {
		return nil, fmt.Errorf("admin: demo guild: %w", err)
	}
	v := &templates.DemoView{GuildName: g.Name, CSRF: s.csrfToken(c)}
	for _, ch := range g.Channels {
		v.Channels = append(v.Channels, templates.DemoLink{ID: ch.ID, Name: ch.Name})
		if ch.ID == channelID || (channelID != "" && ch.Name == strings.TrimPrefix(channelID, "#")) || (channelID == "" && v.Channel == "") {
			v.Channel, v.ChannelName = ch.ID, ch.Name
		}
	}
	if v.Channel == "" {
		return nil, nil
	}
	v.Mentions = fallbackMentions{first: s.mentionsIn(v.Channel), then: newDemoMentions(g)}
	for _, m := range g.Members {
		v.Members = append(v.Members, templates.DemoLink{ID: m.ID, Name: m.Name})
	}
	if i := slices.IndexFunc(v.Members, func(m templates.DemoLink) bool { return m.ID == as }); i >= 0 {
		v.As, v.AsName = v.Members[i].ID, v.Members[i].Name
	} else if len(v.Members) > 0 {
		v.As, v.AsName = v.Members[0].ID, v.Members[0].Name
	}
	v.Messages, err = s.opts.Demo.DemoMessages(ctx, v.Channel, v.As)
	if errors.Is(err, form.ErrDemoUnknown) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("admin: demo messages: %w", err)
	}
	if v.Modals, err = s.opts.Demo.DemoModals(ctx, v.Channel, v.As); err != nil {
		return nil, fmt.Errorf("admin: demo modals: %w", err)
	}
	if v.Commands, err = s.opts.Demo.DemoCommands(ctx); err != nil {
		return nil, fmt.Errorf("admin: demo commands: %w", err)
	}
	q := url.Values{form.FieldDemoChannel: {v.Channel}, "as": {v.As}}
	q.Set("view", "chat")
	v.LiveChat = "/demo/events?" + q.Encode()
	q.Set("view", "modals")
	v.LiveModals = "/demo/events?" + q.Encode()
	return v, nil
}

// renderDemo renders /demo, keeping a refused form with its errors (the live regions are
// then off, so an update cannot replace what was kept).
func (s *Server) renderDemo(c echo.Context, status int, r demoRefused) error {
	if s.opts.Demo == nil {
		return echo.ErrNotFound
	}
	v, err := s.demoView(c, r.channel, r.as)
	if err != nil {
		return err
	}
	if v == nil {
		return echo.ErrNotFound
	}
	v.Content, v.Command, v.Modal, v.Errors, v.ErrorAt = r.post.Content, r.command, r.modal, r.errs, r.at
	if r.at != "" {
		v.LiveChat, v.LiveModals = "", ""
	}
	return render(c, status, templates.DemoPage(s.chrome(c, "Demo", "demo"), *v))
}
