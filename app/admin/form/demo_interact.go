package form

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Field names of /demo's interaction forms (buttons and selects, slash commands, modals).
const (
	FieldDemoMessage     = "message"
	FieldDemoCustomID    = "custom_id"
	FieldDemoValues      = "values"
	FieldDemoCommand     = "command"
	FieldDemoInteraction = "interaction"
	// DemoOptionPrefix prefixes a slash-command option's field ("o.amount"), DemoInputPrefix a
	// modal text input's ("m.reason").
	DemoOptionPrefix = "o."
	DemoInputPrefix  = "m."
)

// Discord's option types the command form knows (application command option types).
const (
	OptionSubcommand      = 1
	OptionSubcommandGroup = 2
	OptionString          = 3
	OptionInteger         = 4
	OptionBoolean         = 5
	OptionUser            = 6
	OptionChannel         = 7
	OptionRole            = 8
	OptionMentionable     = 9
	OptionNumber          = 10
	OptionAttachment      = 11
)

// Discord's limits the demo forms keep.
const (
	maxDemoCustomID   = 100
	maxDemoValues     = 25
	maxDemoOptionText = 6000
	maxDemoInputText  = 4000
	// maxSafeInteger is the largest integer a Discord integer option holds (2^53).
	maxSafeInteger = 1 << 53
)

// DemoButton is a click on a message's button, or a pick in its select menu (Values), as a demo
// member.
type DemoButton struct {
	Channel, Member, Message, CustomID string
	// Values are the select menu's chosen values (none for a button).
	Values []string
	// Select says the form was a select menu's (its values field was sent, maybe empty).
	Select bool
}

// ParseDemoButton reads the form from r.
func ParseDemoButton(r *http.Request) DemoButton {
	_ = r.ParseForm()
	vals, sel := r.PostForm[FieldDemoValues]
	var out []string
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return DemoButton{
		Channel: strings.TrimSpace(value(r, FieldDemoChannel)), Member: strings.TrimSpace(value(r, FieldDemoMember)),
		Message: strings.TrimSpace(value(r, FieldDemoMessage)), CustomID: value(r, FieldDemoCustomID),
		Values: out, Select: sel || value(r, "select") != "",
	}
}

// Validate reports what to correct: a channel, member, message and component named, and at
// most 25 values (Discord's most).
func (f DemoButton) Validate() Errors {
	var e Errors
	if f.Channel == "" || f.Member == "" || f.Message == "" {
		e.Add(FieldForm, "The form lost its channel, member or message; reload the page and try again.")
	}
	if n := utf8.RuneCountInString(f.CustomID); n < 1 || n > maxDemoCustomID {
		e.Add(FieldForm, "That component has no valid custom id; reload the page and try again.")
	}
	if len(f.Values) > maxDemoValues {
		e.Add(FieldDemoValues, "Choose at most 25 values.")
	}
	return e
}

// DemoChoice is one value an option or select offers: its label and the value sent.
type DemoChoice struct{ Name, Value string }

// DemoOptionSpec is a slash-command option as the command form shows and checks it. Choices
// are the command's choices, or for a user, channel, role or mentionable option the demo
// guild's members, channels or roles (the only values accepted).
type DemoOptionSpec struct {
	Name, Description string
	Type              int
	Required          bool
	Choices           []DemoChoice
	// MinValue and MaxValue bound an integer or number; MinLength and MaxLength a string (0:
	// no bound).
	MinValue, MaxValue   *float64
	MinLength, MaxLength int
}

// Field is the option's form field name.
func (o DemoOptionSpec) Field() string { return DemoOptionPrefix + o.Name }

// DemoOptionValue is an option's checked value: a string (string, user, channel, role,
// mentionable: the id), an int64, a float64 or a bool.
type DemoOptionValue struct {
	Name  string
	Type  int
	Value any
}

// DemoCommand runs a slash command as a demo member: Command is its path ("kudos give" for a
// subcommand), Values the raw option fields by option name.
type DemoCommand struct {
	Channel, Member, Command string
	Values                   map[string]string
}

// ParseDemoCommand reads the form from r: every field named "o.<option>" is an option's value.
func ParseDemoCommand(r *http.Request) DemoCommand {
	_ = r.ParseForm()
	f := DemoCommand{Channel: strings.TrimSpace(value(r, FieldDemoChannel)), Member: strings.TrimSpace(value(r, FieldDemoMember)),
		Command: strings.Join(strings.Fields(value(r, FieldDemoCommand)), " "), Values: map[string]string{}}
	for k, v := range r.PostForm {
		if name, ok := strings.CutPrefix(k, DemoOptionPrefix); ok && name != "" && len(v) > 0 {
			f.Values[name] = v[0]
		}
	}
	return f
}

// Validate checks the form against the command's options: every required option given, each
// value of its type and within its bounds, choices among the offered ones. It returns the
// values to send (in the options' order, empty optional ones left out) and what to correct,
// by option field; nothing is to be sent unless the errors are empty.
func (f DemoCommand) Validate(spec []DemoOptionSpec) ([]DemoOptionValue, Errors) {
	var e Errors
	if f.Channel == "" || f.Member == "" {
		e.Add(FieldForm, "The form lost its channel or member; reload the page and try again.")
	}
	if f.Command == "" {
		e.Add(FieldDemoCommand, "Choose a command.")
	}
	var out []DemoOptionValue
	for _, o := range spec {
		raw := strings.TrimSpace(f.Values[o.Name]) // as Discord's client trims them
		if raw == "" {
			if o.Required {
				e.Add(o.Field(), fmt.Sprintf("/%s needs %s.", f.Command, o.Name))
			}
			continue
		}
		v, msg := o.check(raw)
		if msg != "" {
			e.Add(o.Field(), msg)
			continue
		}
		out = append(out, DemoOptionValue{Name: o.Name, Type: o.Type, Value: v})
	}
	for name := range f.Values {
		if !slices.ContainsFunc(spec, func(o DemoOptionSpec) bool { return o.Name == name }) {
			e.Add(FieldForm, "The form sent an option the command does not have ("+name+"); reload the page.")
		}
	}
	return out, e
}

// check converts one option's non-empty value, or says what is wrong with it.
func (o DemoOptionSpec) check(raw string) (any, string) {
	if len(o.Choices) > 0 && !slices.ContainsFunc(o.Choices, func(c DemoChoice) bool { return c.Value == raw }) {
		return nil, "Choose one of the offered values for " + o.Name + "."
	}
	switch o.Type {
	case OptionString:
		if !utf8.ValidString(raw) || strings.ContainsRune(raw, 0) {
			return nil, o.Name + " holds characters that cannot be sent."
		}
		n := utf8.RuneCountInString(raw)
		if n > maxDemoOptionText {
			return nil, o.Name + " holds at most 6000 characters."
		}
		if o.MinLength > 0 && n < o.MinLength {
			return nil, fmt.Sprintf("%s needs at least %d characters.", o.Name, o.MinLength)
		}
		if o.MaxLength > 0 && n > o.MaxLength {
			return nil, fmt.Sprintf("%s holds at most %d characters.", o.Name, o.MaxLength)
		}
		return raw, ""
	case OptionInteger:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
			return nil, o.Name + " must be a whole number."
		}
		if msg := o.bounds(float64(n)); msg != "" {
			return nil, msg
		}
		return n, ""
	case OptionNumber:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, o.Name + " must be a number."
		}
		if msg := o.bounds(x); msg != "" {
			return nil, msg
		}
		return x, ""
	case OptionBoolean:
		switch raw {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, o.Name + " must be true or false."
	case OptionUser, OptionChannel, OptionRole, OptionMentionable:
		if len(o.Choices) == 0 {
			return nil, "The demo guild has nothing to choose for " + o.Name + "."
		}
		return raw, ""
	}
	return nil, "The demo cannot send an option of this kind (" + o.Name + ")."
}

func (o DemoOptionSpec) bounds(x float64) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case o.MinValue != nil && o.MaxValue != nil && (x < *o.MinValue || x > *o.MaxValue):
		return fmt.Sprintf("%s must be between %s and %s.", o.Name, num(*o.MinValue), num(*o.MaxValue))
	case o.MinValue != nil && x < *o.MinValue:
		return fmt.Sprintf("%s must be at least %s.", o.Name, num(*o.MinValue))
	case o.MaxValue != nil && x > *o.MaxValue:
		return fmt.Sprintf("%s must be at most %s.", o.Name, num(*o.MaxValue))
	}
	return ""
}

// DemoTextInput is a modal's text input as the modal form shows and checks it.
type DemoTextInput struct {
	CustomID, Label, Placeholder string
	// Value is the input's pre-filled value.
	Value                string
	Paragraph, Required  bool
	MinLength, MaxLength int
}

// Field is the input's form field name.
func (i DemoTextInput) Field() string { return DemoInputPrefix + i.CustomID }

// DemoModal submits a modal an interaction was answered with, as the member who opened it.
type DemoModal struct {
	Channel, Member, Interaction string
	// Values are the text inputs' values by custom id.
	Values map[string]string
}

// ParseDemoModal reads the form from r: every field named "m.<custom id>" is an input's value.
func ParseDemoModal(r *http.Request) DemoModal {
	_ = r.ParseForm()
	f := DemoModal{Channel: strings.TrimSpace(value(r, FieldDemoChannel)), Member: strings.TrimSpace(value(r, FieldDemoMember)),
		Interaction: strings.TrimSpace(value(r, FieldDemoInteraction)), Values: map[string]string{}}
	for k, v := range r.PostForm {
		if id, ok := strings.CutPrefix(k, DemoInputPrefix); ok && id != "" && len(v) > 0 {
			f.Values[id] = strings.ReplaceAll(v[0], "\r\n", "\n")
		}
	}
	return f
}

// Validate checks the values against the modal's inputs: required ones filled, lengths within
// the input's bounds (Discord's 4000 at most), no control characters but line breaks in a
// paragraph. It returns what to correct, by input field.
func (f DemoModal) Validate(inputs []DemoTextInput) Errors {
	var e Errors
	if f.Channel == "" || f.Member == "" || f.Interaction == "" {
		e.Add(FieldForm, "The form lost its interaction; reload the page and try again.")
	}
	for _, in := range inputs {
		v := f.Values[in.CustomID]
		n := utf8.RuneCountInString(v)
		max := in.MaxLength
		if max <= 0 || max > maxDemoInputText {
			max = maxDemoInputText
		}
		switch {
		case strings.TrimSpace(v) == "" && in.Required:
			e.Add(in.Field(), "Fill in "+in.Label+".")
		case v == "":
		case in.MinLength > 0 && n < in.MinLength:
			e.Add(in.Field(), fmt.Sprintf("%s needs at least %d characters.", in.Label, in.MinLength))
		case n > max:
			e.Add(in.Field(), fmt.Sprintf("%s holds at most %d characters.", in.Label, max))
		case !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool {
			return (r < ' ' && !(in.Paragraph && r == '\n') && r != '\t') || r == 0x7f
		}) >= 0:
			e.Add(in.Field(), in.Label+" holds characters that cannot be sent.")
		}
	}
	for id := range f.Values {
		if !slices.ContainsFunc(inputs, func(in DemoTextInput) bool { return in.CustomID == id }) {
			e.Add(FieldForm, "The form sent a field the modal does not have; reload the page.")
		}
	}
	return e
}
