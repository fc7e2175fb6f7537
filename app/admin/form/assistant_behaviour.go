package form

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/settings"
)

// Field names of the /assistant behaviour form (POST
// /assistant/behaviour), shared by assistant.templ and the save handler:
// the names the settings package keys its errors by.
const (
	AssistantName         = settings.FieldAssistantName
	AssistantDMMode       = settings.FieldAssistantDMMode
	AssistantDMUserIDs    = settings.FieldAssistantDMUserIDs
	AssistantPersona      = settings.FieldAssistantPersona
	AssistantTurnDeadline = settings.FieldAssistantTurnDeadline
	AssistantIterationCap = settings.FieldAssistantIterationCap
)

// Messages of a refused behaviour form.
const (
	MsgAssistantBehaviourNotSaved = "The behaviour settings were not saved. Correct the fields marked below."
	MsgAssistantTurnDeadline      = "Enter the turn deadline as a whole number of seconds."
	MsgAssistantIterationCap      = "Enter the iteration cap as a whole number."
)

// AssistantBehaviour is the submitted behaviour form, as typed: the
// assistant's name, whom it answers in direct messages, its persona and a
// turn's limits.
type AssistantBehaviour struct {
	Name, DMMode, DMUserIDs, Persona, TurnDeadline, IterationCap string
}

// ParseAssistantBehaviour reads the form from r.
func ParseAssistantBehaviour(r *http.Request) AssistantBehaviour {
	return AssistantBehaviour{Name: value(r, AssistantName), DMMode: strings.TrimSpace(value(r, AssistantDMMode)), DMUserIDs: value(r, AssistantDMUserIDs),
		Persona: value(r, AssistantPersona), TurnDeadline: value(r, AssistantTurnDeadline), IterationCap: value(r, AssistantIterationCap)}
}

// AssistantBehaviourOf is the form showing the stored settings b: the
// default persona's text when none is set, so it can be edited.
func AssistantBehaviourOf(b settings.AssistantBehaviour) AssistantBehaviour {
	ids := make([]string, len(b.DMUserIDs))
	for i, id := range b.DMUserIDs {
		ids[i] = strconv.FormatUint(id, 10)
	}
	persona := b.Persona
	if persona == "" {
		persona = settings.DefaultPersona
	}
	return AssistantBehaviour{Name: b.Name, DMMode: string(b.DMMode), DMUserIDs: strings.Join(ids, "\n"), Persona: persona,
		TurnDeadline: strconv.Itoa(int(b.TurnDeadline / time.Second)), IterationCap: strconv.Itoa(b.IterationCap)}
}

// Update is the form as a change to the stored settings, with the
// problems of its number fields (a blank number is its default).
func (f AssistantBehaviour) Update() (settings.AssistantBehaviourUpdate, Errors) {
	var e Errors
	u := settings.AssistantBehaviourUpdate{Name: f.Name, DMMode: settings.DMMode(f.DMMode), DMUserIDs: f.DMUserIDs, Persona: f.Persona,
		TurnDeadline: settings.DefaultTurnDeadline, IterationCap: settings.DefaultIterationCap}
	whole := func(field, raw, msg string) (int, bool) {
		raw = strings.ReplaceAll(strings.TrimSpace(raw), ",", "")
		if raw == "" {
			return 0, false
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			e.Add(field, msg)
			return 0, false
		}
		return n, true
	}
	if secs, ok := whole(AssistantTurnDeadline, f.TurnDeadline, MsgAssistantTurnDeadline); ok {
		if maxSecs := int(settings.MaxTurnDeadline / time.Second); secs > maxSecs { // avoid overflowing a Duration
			secs = maxSecs + 1
		}
		u.TurnDeadline = time.Duration(secs) * time.Second
	}
	if n, ok := whole(AssistantIterationCap, f.IterationCap, MsgAssistantIterationCap); ok {
		u.IterationCap = n
	}
	return u, e
}

// Validate checks the form on its own: its numbers, then the settings'
// rules. A refusal carries a FieldForm message above the field messages.
func (f AssistantBehaviour) Validate() Errors {
	u, e := f.Update()
	for field, msg := range AssistantBehaviourErrors(u.Validate()) {
		e.Add(field, msg)
	}
	if !e.OK() {
		e.Add(FieldForm, MsgAssistantBehaviourNotSaved)
	}
	return e
}

// AssistantBehaviourErrors turns a refusal of
// settings.SaveAssistantBehaviour into Errors with the FieldForm message;
// nil for nil or any other error.
func AssistantBehaviourErrors(err error) Errors {
	return settingsRefusal(err, MsgAssistantBehaviourNotSaved, func(field string) bool {
		switch field {
		case AssistantName, AssistantDMMode, AssistantDMUserIDs, AssistantPersona, AssistantTurnDeadline, AssistantIterationCap:
			return true
		}
		return false
	})
}

// Hints of the behaviour form's fields, from the settings' bounds.
var (
	HintAssistantName = "What members may call the assistant: with the Message Content intent, “hey <name> …”, “hi <name> …” and " +
		"“<name> help …” answer to it besides the bot's own names, and " + settings.PersonaNamePlaceholder +
		" in the persona becomes it. Up to " + strconv.Itoa(settings.MaxNameRunes) + " characters on one line; leave it empty for the bot's own names only."
	HintAssistantDMMode = "Kimi asks Discord for direct messages (a non-privileged intent) only while someone is answered here: " +
		"a change takes effect at the next reconnect (Reconnect now on the Discord page, or a restart); saving does not reconnect."
	HintAssistantDMUserIDs = "Discord user ids, one per line; used when direct messages are answered for these users (at most " +
		strconv.Itoa(settings.MaxDMUserIDs) + ")."
	HintAssistantPersona = "The system prompt's opening; " + settings.PersonaNamePlaceholder +
		" becomes the assistant's name (above, else the bot's). Clear it to use the default. At most " + strconv.Itoa(settings.MaxPersonaBytes) + " bytes."
	HintAssistantTurnDeadline = "How long a whole turn may take, " + strconv.Itoa(int(settings.MinTurnDeadline/time.Second)) + " to " +
		strconv.Itoa(int(settings.MaxTurnDeadline/time.Second)) + " seconds (default " + strconv.Itoa(int(settings.DefaultTurnDeadline/time.Second)) + ")."
	HintAssistantIterationCap = "The most model calls one turn may make, " + strconv.Itoa(settings.MinIterationCap) + " to " +
		strconv.Itoa(settings.MaxIterationCap) + " (default " + strconv.Itoa(settings.DefaultIterationCap) + ")."
)
