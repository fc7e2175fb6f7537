package templates

import (
	"strconv"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
)

// ErrorLink is one line of a form's error summary: the invalid field's
// label and message, linking to its input (ID, without the #).
type ErrorLink struct {
	ID, Label, Message string
}

// summaryField is a form field as its error summary names it.
type summaryField struct{ name, id, label string }

// errorLinks lists errs' messages in the form's order of fields.
func errorLinks(errs form.Errors, fields []summaryField) []ErrorLink {
	var links []ErrorLink
	for _, f := range fields {
		if msg := errs.Get(f.name); msg != "" {
			links = append(links, ErrorLink{ID: f.id, Label: f.label, Message: msg})
		}
	}
	return links
}

// setupSummaryFields are the server-setup form's fields, as guild.templ
// has them.
var setupSummaryFields = []summaryField{
	{form.GuildBotActive, "gs-active", "Bot active"},
	{form.GuildStaffUserIDs, "gs-staff-users", "Staff user ids"},
	{form.GuildStaffRoleIDs, "gs-staff-roles", "Staff role ids"},
	{form.GuildRegularRoleIDs, "gs-regular-roles", "Regular role ids"},
	{form.GuildAllowedChannelIDs, "gs-channels", "Allowed channel ids"},
	{form.GuildProposalChannelID, "gs-proposal-channel", "Proposal channel"},
	{form.GuildTasksEnabled, "gs-tasks-enabled", "Scheduled tasks enabled"},
	{form.GuildTasksMinTier, "gs-tasks-tier", "Lowest tier that may schedule"},
	{form.GuildTasksTimezone, "gs-tasks-tz", "Time zone"},
	{form.GuildTasksDestinations, "gs-tasks-dest", "Destination channels"},
	{form.GuildAssistantEnabled, "gs-assistant-enabled", "Assistant in this guild"},
	{form.GuildAssistantMinTier, "gs-assistant-tier", "Lowest tier the assistant answers"},
	{form.GuildAssistantBlocked, "gs-assistant-blocked", "Blocked tools"},
	{form.GuildAssistantPinned, "gs-assistant-pinned", "Pinned tools"},
	{form.GuildAssistantDailyTokens, "gs-assistant-daily-tokens", "Daily token budget"},
}

// setupErrorLinks is the server-setup form's error summary.
func setupErrorLinks(errs form.Errors) []ErrorLink { return errorLinks(errs, setupSummaryFields) }

// rawErrorLinks is the raw document form's error summary: its one field.
func rawErrorLinks(v GuildRawView) []ErrorLink {
	msg := v.Errors.Get(form.GuildDocumentText)
	if len(v.Refused) > 0 {
		msg = v.Refused[0]
		if len(v.Refused) > 1 {
			msg += " (and " + strconv.Itoa(len(v.Refused)-1) + " more below)"
		}
	}
	if msg == "" {
		return nil
	}
	return []ErrorLink{{ID: "gr-text", Label: "Document", Message: msg}}
}

// moduleErrorLinks is a module settings form's error summary.
func moduleErrorLinks(m GuildModuleView) []ErrorLink {
	var links []ErrorLink
	for _, f := range m.Fields {
		if f.Error != "" {
			links = append(links, ErrorLink{ID: f.ID, Label: f.Label, Message: f.Error})
		}
	}
	return links
}

// taskSummaryFields are the task form's fields, as tasks.templ has them.
var taskSummaryFields = []summaryField{
	{tasks.FieldGuild, "task-guild", "Server"},
	{tasks.FieldName, "task-name", "Name"},
	{tasks.FieldOwner, "task-owner", "Owner"},
	{tasks.FieldDestinations, "task-destinations", "Destinations"},
	{tasks.FieldContent, "task-content", "Template"},
	{tasks.FieldEmbed, "task-embed-color", "Embed"},
	{tasks.FieldMentionUsers, "task-mention-users", "Users it may mention"},
	{tasks.FieldMentionRoles, "task-mention-roles", "Roles it may mention"},
	{tasks.FieldAttachments, "task-attachments", "Attachments"},
	{tasks.FieldKind, "task-kind", "Repeats"},
	{tasks.FieldAt, "task-at", "At"},
	{tasks.FieldEvery, "task-every", "Every"},
	{tasks.FieldTime, "task-time", "Time"},
	{tasks.FieldWeekday, "task-weekday", "Weekday"},
	{tasks.FieldDay, "task-day", "Day of the month"},
	{tasks.FieldTimezone, "task-timezone", "Time zone"},
	{tasks.FieldLate, "task-late", "When a run is missed"},
	{tasks.FieldLogChannel, "task-log-channel", "Log channel"},
}

// taskErrorLinks is the task form's error summary (the edit form has no
// guild input: its guild error links to the form).
func taskErrorLinks(v TaskFormView) []ErrorLink {
	links := errorLinks(v.Errors, taskSummaryFields)
	if v.Editing {
		for i := range links {
			if links[i].ID == "task-guild" {
				links[i].ID = "task-form"
			}
		}
	}
	return links
}

// cardConflict is v's conflict when it belongs to the card ("" none).
func cardConflict(v GuildView, card string) *GuildConflict {
	if v.Conflict != nil && v.Conflict.Card == card {
		return v.Conflict
	}
	return nil
}
