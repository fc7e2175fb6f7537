package form

import (
	"net/http"
	"strings"
	"unicode/utf8"
)

// Field names of the demo chat's post form (/demo).
const (
	FieldDemoChannel = "channel"
	FieldDemoMember  = "member"
	FieldDemoContent = "content"
)

// MaxDemoContent is Discord's message length limit, which the demo keeps.
const MaxDemoContent = 2000

// DemoMessage is the demo chat's post form: a message as one of the demo members.
type DemoMessage struct {
	Channel, Member, Content string
}

// ParseDemoMessage reads the form from r.
func ParseDemoMessage(r *http.Request) DemoMessage {
	return DemoMessage{
		Channel: strings.TrimSpace(value(r, FieldDemoChannel)),
		Member:  strings.TrimSpace(value(r, FieldDemoMember)),
		Content: strings.TrimRight(value(r, FieldDemoContent), " \t\r\n"),
	}
}

// Validate reports what to correct: a member and a channel chosen, and a message of 1 to 2000
// characters without control characters other than line breaks and tabs.
func (f DemoMessage) Validate() Errors {
	var e Errors
	if f.Channel == "" {
		e.Add(FieldDemoChannel, "Choose a channel.")
	}
	if f.Member == "" {
		e.Add(FieldDemoMember, "Choose who posts the message.")
	}
	switch n := utf8.RuneCountInString(f.Content); {
	case strings.TrimSpace(f.Content) == "":
		e.Add(FieldDemoContent, "Write a message.")
	case n > MaxDemoContent:
		e.Add(FieldDemoContent, "A message holds at most 2000 characters, as on Discord.")
	case !utf8.ValidString(f.Content) || strings.IndexFunc(f.Content, func(r rune) bool {
		return (r < ' ' && r != '\n' && r != '\t' && r != '\r') || r == 0x7f
	}) >= 0:
		e.Add(FieldDemoContent, "The message holds characters that cannot be sent.")
	}
	return e
}
