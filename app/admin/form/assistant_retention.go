package form

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/settings"
)

// AssistantRetentionDays is the field of the /assistant retention form
// (POST /assistant/retention): the name the settings package keys its
// error by.
const AssistantRetentionDays = settings.FieldAssistantRetentionDays

// Messages of a refused retention form.
const (
	MsgAssistantRetentionNotSaved = "The transcript retention was not saved. Correct the field marked below."
	MsgAssistantRetentionDays     = "Enter the retention as a whole number of days."
)

// HintAssistantRetentionDays is the retention field's hint, from the
// settings' bounds.
var HintAssistantRetentionDays = "Days after a conversation's last activity its transcript (messages, delivered-message references, " +
	"tool-call excerpts) is deleted, " + strconv.Itoa(settings.MinRetentionDays) + " to " + strconv.Itoa(settings.MaxRetentionDays) +
	" (default " + strconv.Itoa(settings.DefaultRetentionDays) + "); 0 keeps transcripts for ever. " +
	"Turns and the usage roll-up hold no content and stay."

// AssistantRetention is the submitted retention form, as typed.
type AssistantRetention struct {
	Days string
}

// ParseAssistantRetention reads the form from r.
func ParseAssistantRetention(r *http.Request) AssistantRetention {
	return AssistantRetention{Days: value(r, AssistantRetentionDays)}
}

// AssistantRetentionOf is the form showing the stored days.
func AssistantRetentionOf(days int) AssistantRetention {
	return AssistantRetention{Days: strconv.Itoa(days)}
}

// Update is the form as a change to the stored setting, with the problem
// of its number (blank is the default).
func (f AssistantRetention) Update() (settings.AssistantRetentionUpdate, Errors) {
	var e Errors
	u := settings.AssistantRetentionUpdate{Days: settings.DefaultRetentionDays}
	raw := strings.ReplaceAll(strings.TrimSpace(f.Days), ",", "")
	if raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			e.Add(AssistantRetentionDays, MsgAssistantRetentionDays)
		}
		u.Days = n
	}
	return u, e
}

// Validate checks the form on its own: its number, then the settings'
// bounds. A refusal carries a FieldForm message above the field message.
func (f AssistantRetention) Validate() Errors {
	u, e := f.Update()
	if e.OK() {
		e = AssistantRetentionErrors(u.Validate())
	}
	if !e.OK() && e[FieldForm] == "" {
		e.Add(FieldForm, MsgAssistantRetentionNotSaved)
	}
	return e
}

// AssistantRetentionErrors turns a refusal of
// settings.SaveAssistantRetention into Errors with the FieldForm message;
// nil for nil or any other error.
func AssistantRetentionErrors(err error) Errors {
	return settingsRefusal(err, MsgAssistantRetentionNotSaved, func(field string) bool { return field == AssistantRetentionDays })
}
