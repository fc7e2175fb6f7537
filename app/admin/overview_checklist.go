package admin

import (
	"context"
	"strings"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// checklistState is what the first-run checklist asks of each part.
type checklistState struct {
	token, members, content bool // the bot's token and privileged intents
	modules                 int  // modules selected
	guilds                  int  // guilds where Kimi is active
	assistant               bool // a model provider set up
}

// readChecklist reads the checklist's settings (a failure is logged and
// reads as nothing set).
func (s *Server) readChecklist(ctx context.Context) settings.Checklist {
	c, err := settings.ReadChecklist(ctx, s.opts.Store)
	if err != nil {
		s.log.Warn("read the checklist's settings", "err", err)
	}
	return c
}

// checklistState reads each step's state from stored (readChecklist) and
// the services; a part that cannot be read counts as not done (and is
// logged).
func (s *Server) checklistState(ctx context.Context, stored settings.Checklist) checklistState {
	var st checklistState
	if s.opts.Discord != nil {
		// The stored settings, as /discord shows them; a token from the
		// environment (or demo mode's fake) counts once the bot has it.
		ds := s.opts.Discord.Status()
		st.token = stored.Token || ds.TokenSource != "" || s.opts.Demo != nil
		st.members = stored.Members || ds.Intents.Members
		st.content = stored.MessageContent || ds.Intents.MessageContent
	}
	if s.opts.Host != nil {
		st.modules = len(s.opts.Host.Selection().Names)
	}
	if s.opts.Guilds != nil {
		gs, err := s.opts.Guilds.List(ctx)
		if err != nil {
			s.log.Warn("list the guilds for the checklist", "err", err)
		}
		for _, g := range gs {
			if g.Active {
				st.guilds++
			}
		}
	}
	if s.opts.Assistant != nil {
		_, eff := s.opts.Assistant.Settings()
		st.assistant = s.opts.Assistant.IsDemo() || eff.Configured()
	}
	return st
}

// checklistSteps are the first-run checklist's steps for st, in order.
func checklistSteps(st checklistState) []templates.ChecklistStep {
	discord := templates.ChecklistStep{Key: "discord", Title: "Connect Discord", Href: "/discord", Action: "Open Discord"}
	switch {
	case !st.token:
		discord.Detail = "No bot token yet: paste the token of your bot application."
	case !st.members || !st.content:
		var off []string
		if !st.members {
			off = append(off, "members")
		}
		if !st.content {
			off = append(off, "message content")
		}
		discord.Detail = "Token set; turn on the " + strings.Join(off, " and ") + " intent" + pluralS(len(off)) + " here and in the Developer Portal."
	default:
		discord.Detail, discord.Done = "Token set, both privileged intents on.", true
	}
	modules := templates.ChecklistStep{Key: "modules", Title: "Choose modules", Href: "/modules", Action: "Open Modules"}
	if st.modules == 0 {
		modules.Detail = "No module selected: pick what Kimi does."
	} else {
		modules.Detail, modules.Done = plural(st.modules, "module")+" selected.", true
	}
	guild := templates.ChecklistStep{Key: "guild", Title: "Activate a guild", Href: "/guilds", Action: "Open Guilds"}
	if st.guilds == 0 {
		guild.Detail = "Kimi is active in no guild yet: invite the bot, then switch it on in the guild's server setup."
	} else {
		guild.Detail, guild.Done = "Active in "+plural(st.guilds, "guild")+".", true
	}
	assistant := templates.ChecklistStep{Key: "assistant", Title: "Set up the assistant", Href: "/assistant", Action: "Open Assistant"}
	if st.assistant {
		assistant.Detail, assistant.Done = "A model provider is set up.", true
	} else {
		assistant.Detail = "No model provider yet: give the assistant a base URL, a model and a key."
	}
	return []templates.ChecklistStep{discord, modules, guild, assistant}
}

// pluralS is "s" unless n is 1.
func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// checklistView is the overview's checklist card; nil once every step is
// done or it was dismissed.
func (s *Server) checklistView(ctx context.Context, csrf string) *templates.ChecklistView {
	stored := s.readChecklist(ctx)
	if stored.Dismissed {
		return nil
	}
	v := &templates.ChecklistView{Steps: checklistSteps(s.checklistState(ctx, stored)), CSRF: csrf}
	for _, st := range v.Steps {
		if st.Done {
			v.Done++
		}
	}
	if v.Done == len(v.Steps) {
		return nil
	}
	return v
}

// checklistPending names the steps still open ("" none), for the audit row.
func checklistPending(steps []templates.ChecklistStep) string {
	var open []string
	for _, st := range steps {
		if !st.Done {
			open = append(open, strings.ToLower(st.Title))
		}
	}
	return strings.Join(open, ", ")
}
