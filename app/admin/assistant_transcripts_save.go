package admin

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// saveAssistantTranscripts is POST /assistant/transcripts, after a
// confirmation page: Show transcripts turned on or off, with an audit row.
// While it is off the conversation pages read and show no message text
// and no tool-call excerpt.
func (s *Server) saveAssistantTranscripts(c echo.Context) error {
	f := form.ParseAssistantTranscripts(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, errs.Get(form.AssistantTranscripts))
	}
	if !f.Confirmed {
		v := templates.ConfirmView{
			Title: "Hide transcripts?",
			Message: "The conversation pages stop showing what members wrote, Kimi's replies and the tool calls' arguments and results; " +
				"they show only each turn's figures. Nothing is deleted.",
			Action: "/assistant/transcripts", Button: "Yes, hide transcripts", Cancel: "/assistant/conversations",
			Keep: []templates.HiddenField{{Name: form.AssistantTranscripts, Value: f.Value}},
		}
		if f.On() {
			v.Title = "Show transcripts?"
			v.Message = "The conversation pages will show what members wrote to Kimi, its replies and the tool calls' arguments and results " +
				"to everyone who signs in to this admin. Members' messages are personal data: show them only when you need to."
			v.Button = "Yes, show transcripts"
		}
		_, err := s.confirm(c, "assistant", v)
		return err
	}
	ctx, cancel := withTimeout(c, conversationsTimeout)
	defer cancel()
	err := s.saveTranscripts(f.On(), func() error {
		return settings.SaveAssistantShowTranscripts(ctx, s.opts.Store, f.On(), settings.Actor{Name: actor(c), IP: c.RealIP()})
	})
	if err != nil {
		if errs, status, ok := s.refusedForm(c, err); ok {
			return echo.NewHTTPError(status, errs.Get(form.FieldForm))
		}
		return fmt.Errorf("admin: save show transcripts: %w", err)
	}
	if f.On() {
		s.setFlash(c, flashTranscriptsOn)
	} else {
		s.setFlash(c, flashTranscriptsOff)
	}
	return c.Redirect(http.StatusSeeOther, "/assistant/conversations")
}
