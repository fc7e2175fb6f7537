package templates

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/admin/form"
)

// demoHref is /demo for a channel, acting as a member.
func demoHref(channel, as string) string {
	q := url.Values{form.FieldDemoChannel: {channel}}
	if as != "" {
		q.Set("as", as)
	}
	return "/demo?" + q.Encode()
}

// demoButtonClass maps a Discord button style to the UI's button classes.
func demoButtonClass(style string) string {
	switch style {
	case "primary", "success":
		return "btn-primary"
	case "danger":
		return "btn-danger"
	}
	return "btn-secondary"
}

// demoLabel is a button's label, or a stand-in for an unlabelled (emoji-only) one.
func demoLabel(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no label)"
	}
	return s
}

func demoCount(min, max int) string {
	if min == max {
		return strconv.Itoa(min)
	}
	return strconv.Itoa(min) + " to " + strconv.Itoa(max)
}

func demoInt(n int) string { return strconv.Itoa(n) }

func demoNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// demoMaxLen is a maxlength attribute: the component's bound, else Discord's.
func demoMaxLen(n, def int) string {
	if n <= 0 || n > def {
		n = def
	}
	return strconv.Itoa(n)
}

// demoSlug is a command path usable in ids and test ids ("kudos give" → "kudos-give").
func demoSlug(path string) string { return strings.ReplaceAll(path, " ", "-") }

// demoFirstError is a refused form's message: the form-level one, else any.
func demoFirstError(e form.Errors) string {
	if msg := e.Get(form.FieldForm); msg != "" {
		return msg
	}
	for _, msg := range e {
		return msg
	}
	return ""
}

func demoFirstOf(e form.Errors, fields ...string) string {
	for _, f := range fields {
		if msg := e.Get(f); msg != "" {
			return msg
		}
	}
	return ""
}

// demoChoices are an option's choices; a boolean's are true and false.
func demoChoices(o form.DemoOptionSpec) []form.DemoChoice {
	if o.Type == form.OptionBoolean && len(o.Choices) == 0 {
		return []form.DemoChoice{{Name: "true", Value: "true"}, {Name: "false", Value: "false"}}
	}
	return o.Choices
}

// demoBounds describes an option's bounds after its description.
func demoBounds(o form.DemoOptionSpec) string {
	var b []string
	if o.MinValue != nil {
		b = append(b, "at least "+demoNum(*o.MinValue))
	}
	if o.MaxValue != nil {
		b = append(b, "at most "+demoNum(*o.MaxValue))
	}
	if o.MinLength > 0 {
		b = append(b, "at least "+demoInt(o.MinLength)+" characters")
	}
	if o.MaxLength > 0 {
		b = append(b, "at most "+demoInt(o.MaxLength)+" characters")
	}
	if len(b) == 0 {
		return ""
	}
	return " (" + strings.Join(b, ", ") + ")"
}

// demoOptionValue is the value an option's field shows: a refused form's.
func demoOptionValue(v DemoView, cmd DemoCommand, o form.DemoOptionSpec, refused bool) string {
	if refused && v.Command != nil {
		return v.Command.Values[o.Name]
	}
	return ""
}

func demoModalError(v DemoView, m DemoModal, in form.DemoTextInput) string {
	if v.ErrorAt == DemoFormModal && v.Modal != nil && v.Modal.Interaction == m.InteractionID {
		return v.Errors.Get(in.Field())
	}
	return ""
}

// demoModalValue is an input's value: a refused form's, else the modal's pre-filled one.
func demoModalValue(v DemoView, m DemoModal, in form.DemoTextInput) string {
	if v.ErrorAt == DemoFormModal && v.Modal != nil && v.Modal.Interaction == m.InteractionID {
		return v.Modal.Values[in.CustomID]
	}
	return in.Value
}

// demoCommandListed says whether the refused command form is one of the listed commands (its
// errors are then shown in its form).
func demoCommandListed(v DemoView) bool {
	for _, c := range v.Commands {
		if v.Command != nil && c.Path == v.Command.Command {
			return true
		}
	}
	return false
}

// demoReactionLabel names one emoji's reactions for assistive technology: "⏳: 1 reaction,
// Kimi's".
func demoReactionLabel(r DemoReaction) string {
	s := r.Emoji + ": " + strconv.Itoa(r.Count) + " reaction"
	if r.Count != 1 {
		s += "s"
	}
	switch {
	case r.Bot && r.Count == 1:
		s += ", Kimi's"
	case r.Bot:
		s += ", Kimi's among them"
	}
	return s
}

// DemoMessageAnchor is the element id of message id on /demo: the fragment
// an "Open in Discord" link of demo mode scrolls to.
func DemoMessageAnchor(id string) string { return "demo-message-" + id }
