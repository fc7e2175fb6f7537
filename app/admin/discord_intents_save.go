package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// saveDiscordIntents is POST /discord/intents (also the "reconnect without
// it" button after a 4014), after a confirmation that says what the change
// does: the choices are stored with an audit row, the host advertises the
// matching capabilities (modules whose activation capabilities are no
// longer covered are soft-disabled, newly covered ones start), and the bot
// reconnects on a fresh session with the new intents.
func (s *Server) saveDiscordIntents(c echo.Context) error {
	f := form.ParseDiscordIntents(c.Request())
	ctx, cancel := withTimeout(c, discordActionTimeout)
	defer cancel()
	if !f.Confirmed {
		v, err := s.confirmDiscordIntents(ctx, f)
		if err != nil {
			return err
		}
		_, err = s.confirm(c, "discord", v)
		return err
	}
	if err := settings.SaveDiscordIntents(ctx, s.opts.Store, f.Members, f.MessageContent, discordActor(c)); err != nil {
		return fmt.Errorf("admin: save discord intents: %w", err)
	}
	if err := s.opts.Discord.ApplyCapabilities(ctx); err != nil {
		return fmt.Errorf("admin: save discord intents: %w", err)
	}
	s.opts.Discord.Reconnect()
	s.setFlash(c, flashDiscordIntents)
	return c.Redirect(http.StatusSeeOther, "/discord")
}

// confirmDiscordIntents is the confirmation page of an intents change: the
// choice, which modules it disables or starts, and the reconnect (events
// sent meanwhile are missed). The choice is re-posted as hidden fields.
func (s *Server) confirmDiscordIntents(ctx context.Context, f form.DiscordIntentsForm) (templates.ConfirmView, error) {
	ds, err := settings.LoadDiscord(ctx, s.opts.Store)
	if err != nil {
		return templates.ConfirmView{}, fmt.Errorf("admin: save discord intents: %w", err)
	}
	mods := s.moduleNeeds()
	v := templates.ConfirmView{
		Title:  "Save the intents and reconnect?",
		Action: "/discord/intents",
		Button: "Yes, save and reconnect",
		Cancel: "/discord#intents",
	}
	var choice, disables, starts, turnedOn []string
	for _, in := range discord.PrivilegedIntents() {
		on, was := f.Members, ds.Members
		if in.Key == form.DiscordMessageContent {
			on, was = f.MessageContent, ds.MessageContent
		}
		if on {
			v.Keep = append(v.Keep, templates.HiddenField{Name: in.Key, Value: "1"})
			choice = append(choice, in.Label+" on")
		} else {
			choice = append(choice, in.Label+" off")
		}
		if on == was {
			continue
		}
		if on {
			turnedOn = append(turnedOn, in.Portal)
		}
		for _, m := range mods {
			if !slices.Contains(m.caps, in.Capability) {
				continue
			}
			if on {
				starts = appendNew(starts, m.name)
			} else {
				disables = appendNew(disables, m.name)
			}
		}
	}
	// A module needing an intent turned on and one turned off stays disabled.
	starts = slices.DeleteFunc(starts, func(m string) bool { return slices.Contains(disables, m) })
	msg := []string{"Kimi stores these intents (" + strings.Join(choice, ", ") + "), then drops the gateway connection and identifies again on a fresh session with them. Events sent while it reconnects are missed, and each identify counts against Discord's daily session-start limit."}
	if len(disables) > 0 {
		msg = append(msg, "These modules need an intent you turn off and are disabled until it is on again: "+strings.Join(disables, ", ")+".")
	}
	if len(starts) > 0 {
		msg = append(msg, "These modules can start once the intent is on: "+strings.Join(starts, ", ")+".")
	}
	if len(turnedOn) > 0 {
		msg = append(msg, "Enable "+strings.Join(turnedOn, " and ")+" for your application in the developer portal first (Bot → Privileged Gateway Intents), or Discord refuses the connection (close 4014).")
	}
	v.Message = strings.Join(msg, " ")
	return v, nil
}

// appendNew appends name to names unless it is there already.
func appendNew(names []string, name string) []string {
	if slices.Contains(names, name) {
		return names
	}
	return append(names, name)
}
