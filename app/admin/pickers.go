package admin

import (
	"slices"
	"strconv"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/web/templates"
)

// pickerDirectory is what the pickers need of the bot's directory: the
// guild's channels and roles, and members by id (the member picker never
// lists a guild's members; it searches them, see guildMembersSearch).
type pickerDirectory interface {
	Guild(id uint64) (discord.GuildInfo, bool)
	Channel(id uint64) (discord.ChannelInfo, bool)
	Channels(guildID uint64) []discord.ChannelInfo
	Roles(guildID uint64) []discord.RoleInfo
	Member(guildID, userID uint64) (discord.MemberInfo, bool)
	SearchMembers(guildID uint64, prefix string, limit int) []discord.MemberInfo
}

var _ pickerDirectory = (*discord.Bot)(nil)

// Pickers' marks of a kept id.
const (
	noteNotVisible = "not visible to the bot"
	noteNotText    = "not a text channel"
)

// directory is the bot's directory, nil without a bot (every kept id is
// then shown as an id, marked).
func (s *Server) directory() pickerDirectory {
	if d, ok := s.opts.Discord.(pickerDirectory); ok && d != nil {
		return d
	}
	return nil
}

// keep returns the ids of chosen not in shown, in order, as marked options.
func keep(chosen []string, shown map[string]bool, label func(id string) (string, string)) []templates.PickOption {
	var out []templates.PickOption
	for _, id := range chosen {
		if shown[id] {
			continue
		}
		shown[id] = true
		l, note := label(id)
		out = append(out, templates.PickOption{Value: id, Label: l, Selected: true, Note: note})
	}
	return out
}

// channelPicker fills p with guild's channels grouped by category in
// Discord's order (only text channels when textOnly), the ids of selected
// (one per line, as form fields hold them) chosen.
func (s *Server) channelPicker(p templates.Picker, guild uint64, selected string, textOnly bool) templates.Picker {
	chosen := form.SplitIDs(selected)
	shown := map[string]bool{}
	dir := s.directory()
	if dir != nil {
		p.Groups = channelGroups(dir.Channels(guild), chosen, shown, textOnly, "")
	}
	p.Unknown = keep(chosen, shown, func(id string) (string, string) {
		if dir != nil {
			if n, err := strconv.ParseUint(id, 10, 64); err == nil {
				if c, ok := dir.Channel(n); ok && c.GuildID == guild {
					return "#" + c.Name, noteNotText
				}
			}
		}
		return id, noteNotVisible
	})
	return p
}

// channelGroups groups channels by category, their order kept; prefix
// starts each group's label (a guild's name when several are listed).
func channelGroups(channels []discord.ChannelInfo, chosen []string, shown map[string]bool, textOnly bool, prefix string) []templates.PickGroup {
	var groups []templates.PickGroup
	index := map[string]int{}
	for _, c := range channels {
		if textOnly && !c.Text {
			continue
		}
		label := c.Category
		if prefix != "" {
			label = prefix
			if c.Category != "" {
				label += " · " + c.Category
			}
		}
		i, ok := index[label]
		if !ok {
			i = len(groups)
			index[label] = i
			groups = append(groups, templates.PickGroup{Label: label})
		}
		id := strconv.FormatUint(c.ID, 10)
		sel := slices.Contains(chosen, id)
		shown[id] = shown[id] || sel
		groups[i].Options = append(groups[i].Options, templates.PickOption{Value: id, Label: "#" + c.Name, Selected: sel})
	}
	return groups
}

// rolePicker fills p with guild's roles, highest first, the ids of
// selected chosen.
func (s *Server) rolePicker(p templates.Picker, guild uint64, selected string) templates.Picker {
	chosen := form.SplitIDs(selected)
	shown := map[string]bool{}
	if dir := s.directory(); dir != nil {
		g := templates.PickGroup{}
		for _, r := range dir.Roles(guild) {
			id := strconv.FormatUint(r.ID, 10)
			sel := slices.Contains(chosen, id)
			shown[id] = sel
			name := r.Name
			if r.ID == guild {
				name = "everyone" // @everyone's id is the guild's
			}
			g.Options = append(g.Options, templates.PickOption{Value: id, Label: "@" + name, Selected: sel})
		}
		if len(g.Options) > 0 {
			p.Groups = []templates.PickGroup{g}
		}
	}
	p.Unknown = keep(chosen, shown, func(id string) (string, string) { return id, noteNotVisible })
	return p
}

// memberPicker fills p with the chosen members only, by name: the rest of
// the guild is found through the search box (p.Search).
func (s *Server) memberPicker(p templates.Picker, guild uint64, selected string) templates.Picker {
	chosen := form.SplitIDs(selected)
	shown := map[string]bool{}
	dir := s.directory()
	if guild != 0 {
		p.Search = guildPath(guild) + "/members/search"
	}
	if dir != nil && guild != 0 {
		g := templates.PickGroup{}
		for _, id := range chosen {
			n, err := strconv.ParseUint(id, 10, 64)
			if err != nil || shown[id] {
				continue
			}
			if m, ok := dir.Member(guild, n); ok {
				shown[id] = true
				g.Options = append(g.Options, templates.PickOption{Value: id, Label: memberLabel(m), Selected: true})
			}
		}
		if len(g.Options) > 0 {
			p.Groups = []templates.PickGroup{g}
		}
	}
	p.Unknown = keep(chosen, shown, func(id string) (string, string) { return id, noteNotVisible })
	return p
}

// memberLabel is a member as the pickers name them: "Ada (@ada)".
func memberLabel(m discord.MemberInfo) string {
	if m.Username == "" || m.Username == m.DisplayName {
		return "@" + m.DisplayName
	}
	return m.DisplayName + " (@" + m.Username + ")"
}

// setupPickers are the server-setup form's pickers over its values.
func (s *Server) setupPickers(guild uint64, v templates.GuildSetupView) templates.GuildPickers {
	e := v.Errors
	field := func(id, name, label, hint string, multiple bool) templates.Picker {
		return templates.Picker{ID: id, Name: name, Label: label, Hint: hint, Error: e.Get(name), Multiple: multiple, None: "None"}
	}
	p := templates.GuildPickers{
		StaffUsers: s.memberPicker(field("gs-staff-users", form.GuildStaffUserIDs, "Staff users",
			"Search members by name or paste user ids. Added to the deployment's staff users; at most 512.", true), guild, v.StaffUserIDs),
		StaffRoles: s.rolePicker(field("gs-staff-roles", form.GuildStaffRoleIDs, "Staff roles",
			"Members with any of these roles are staff here.", true), guild, v.StaffRoleIDs),
		RegularRoles: s.rolePicker(field("gs-regular-roles", form.GuildRegularRoleIDs, "Regular roles",
			"Members with any of these roles are regulars here.", true), guild, v.RegularRoleIDs),
		Channels: s.channelPicker(field("gs-channels", form.GuildAllowedChannelIDs, "Allowed channels",
			"Empty: the deployment's default channels.", true), guild, v.AllowedChannelIDs, false),
		ProposalChannel: s.channelPicker(field("gs-proposal-channel", form.GuildProposalChannelID, "Proposal channel",
			"Where proposal review cards go. None: the proposer's channel.", false), guild, v.ProposalChannelID, true),
		TaskDestinations: s.channelPicker(field("gs-tasks-dest", form.GuildTasksDestinations, "Destination channels",
			"The channels scheduled tasks may post in. Empty: any the bot and the owner can post in.", true), guild, v.TasksDestinations, true),
	}
	p.ProposalChannel.None = "The proposer's channel"
	return p
}

// pickModuleFields turns a module form's channel, role and user fields
// (the schema's Refers) into pickers over their values.
func (s *Server) pickModuleFields(guild uint64, schema sdk.GuildSettingsSchema, mv *templates.GuildModuleView) {
	for i, f := range schema.Fields {
		if f.Refers == "" || i >= len(mv.Fields) {
			continue
		}
		fv := &mv.Fields[i]
		p := templates.Picker{ID: fv.ID, Name: fv.Name, Label: fv.Label, Hint: f.Help, Error: fv.Error,
			Multiple: f.Kind == sdk.GuildSettingIDList, None: "None"}
		if fv.Default != "" && fv.Default != "0" {
			p.None = "Default (" + fv.Default + ")"
		}
		switch f.Refers {
		case sdk.RefChannel:
			p = s.channelPicker(p, guild, fv.Value, true)
		case sdk.RefRole:
			p = s.rolePicker(p, guild, fv.Value)
		case sdk.RefUser:
			p = s.memberPicker(p, guild, fv.Value)
		}
		fv.Pick = &p
	}
}

// taskPickers are the task form's pickers: the guild among the active
// ones, the owner among its members, the destinations among its text
// channels (every active guild's, grouped by guild, before one is chosen).
func (s *Server) taskPickers(v templates.TaskFormView) templates.TaskPickers {
	e := v.Errors
	guild, _ := strconv.ParseUint(v.Form.Guild, 10, 64)
	p := templates.TaskPickers{
		Guild: templates.Picker{ID: "task-guild", Name: tasks.FieldGuild, Label: "Server", None: "Choose a server",
			Error: e.Get(tasks.FieldGuild), Hint: "The server the task posts in; it must enable scheduled_tasks in its document."},
		Owner: s.memberPicker(templates.Picker{ID: "task-owner", Name: tasks.FieldOwner, Label: "Owner", None: "Choose a member",
			Error: e.Get(tasks.FieldOwner), Hint: "The task posts with this member's authority: they must be allowed to post in every destination."},
			guild, v.Form.Owner),
	}
	if !v.Editing {
		p.Owner.GuildFrom = p.Guild.ID // the search follows the server chosen
	}
	dest := templates.Picker{ID: "task-destinations", Name: tasks.FieldDestinations, Label: "Destinations", Multiple: true,
		Error: e.Get(tasks.FieldDestinations)}
	dir := s.directory()
	shown := map[string]bool{}
	g := templates.PickGroup{}
	for _, id := range v.Guilds {
		n, _ := strconv.ParseUint(id, 10, 64)
		label := id
		if dir != nil {
			if info, ok := dir.Guild(n); ok && info.Name != "" {
				label = info.Name
			}
		}
		shown[id] = id == v.Form.Guild
		g.Options = append(g.Options, templates.PickOption{Value: id, Label: label, Selected: id == v.Form.Guild})
		if guild == 0 && dir != nil {
			dest.Groups = append(dest.Groups, channelGroups(dir.Channels(n), form.SplitIDs(v.Form.Destinations), map[string]bool{}, true, label)...)
		}
	}
	if len(g.Options) > 0 {
		p.Guild.Groups = []templates.PickGroup{g}
	}
	p.Guild.Unknown = keep(form.SplitIDs(v.Form.Guild), shown, func(id string) (string, string) { return id, "not an active server" })
	if guild != 0 {
		dest = s.channelPicker(dest, guild, v.Form.Destinations, true)
	} else {
		// Before a server is chosen every active one's channels are listed;
		// a chosen id none of them holds is kept, marked.
		seen := map[string]bool{}
		for _, gr := range dest.Groups {
			for _, o := range gr.Options {
				seen[o.Value] = seen[o.Value] || o.Selected
			}
		}
		dest.Unknown = keep(form.SplitIDs(v.Form.Destinations), seen, func(id string) (string, string) { return id, noteNotVisible })
	}
	p.Destinations = dest
	p.LogChannel = s.channelPicker(templates.Picker{ID: "task-log-channel", Name: tasks.FieldLogChannel, Label: "Log channel (optional)",
		None: "No log channel", Error: e.Get(tasks.FieldLogChannel), Hint: "A channel that gets one line per run."}, guild, v.Form.LogChannel, true)
	p.MentionUsers = s.memberPicker(templates.Picker{ID: "task-mention-users", Name: tasks.FieldMentionUsers, Label: "Users it may mention",
		Multiple: true, Error: e.Get(tasks.FieldMentionUsers)}, guild, v.Form.MentionUsers)
	p.MentionRoles = s.rolePicker(templates.Picker{ID: "task-mention-roles", Name: tasks.FieldMentionRoles, Label: "Roles it may mention",
		Multiple: true, Error: e.Get(tasks.FieldMentionRoles)}, guild, v.Form.MentionRoles)
	if !v.Editing {
		p.MentionUsers.GuildFrom = p.Guild.ID
	}
	return p
}
