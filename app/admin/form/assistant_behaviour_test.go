package form

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/settings"
)

// TestAssistantBehaviourForm: blank numbers are their defaults, a number
// that is not one is its field's error, the settings' rules land on their
// fields, and the stored settings show the default persona's text.
func TestAssistantBehaviourForm(t *testing.T) {
	cases := []struct {
		name      string
		form      url.Values
		wantField string // "" : valid
		check     func(t *testing.T, u settings.AssistantBehaviourUpdate)
	}{
		{"blank numbers are the defaults", url.Values{AssistantDMMode: {"off"}}, "", func(t *testing.T, u settings.AssistantBehaviourUpdate) {
			if u.TurnDeadline != settings.DefaultTurnDeadline || u.IterationCap != settings.DefaultIterationCap {
				t.Fatalf("%+v", u)
			}
		}},
		{"numbers with separators", url.Values{AssistantTurnDeadline: {" 1,200 "}, AssistantIterationCap: {"30"}}, "", func(t *testing.T, u settings.AssistantBehaviourUpdate) {
			if u.TurnDeadline != 20*time.Minute || u.IterationCap != 30 {
				t.Fatalf("%+v", u)
			}
		}},
		{"a deadline in words", url.Values{AssistantTurnDeadline: {"soon"}}, AssistantTurnDeadline, nil},
		{"a deadline that would wrap a Duration to 180 s", url.Values{AssistantTurnDeadline: {"36028797018964148"}}, AssistantTurnDeadline, nil},
		{"a fractional iteration cap", url.Values{AssistantIterationCap: {"2.5"}}, AssistantIterationCap, nil},
		{"an unknown mode", url.Values{AssistantDMMode: {"all"}}, AssistantDMMode, nil},
		{"users without ids", url.Values{AssistantDMMode: {"users"}}, AssistantDMUserIDs, nil},
		{"a persona not UTF-8", url.Values{AssistantPersona: {"\xff"}}, AssistantPersona, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "/assistant/behaviour", strings.NewReader(tc.form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			f := ParseAssistantBehaviour(r)
			errs := f.Validate()
			if tc.wantField == "" {
				if !errs.OK() {
					t.Fatalf("errors %v", errs)
				}
				u, _ := f.Update()
				tc.check(t, u)
				return
			}
			if !errs.Has(tc.wantField) || errs.Get(FieldForm) != MsgAssistantBehaviourNotSaved || len(errs) != 2 {
				t.Fatalf("errors %v, want one on %s and the form's", errs, tc.wantField)
			}
		})
	}
}

func TestAssistantBehaviourOfShowsTheStoredSettings(t *testing.T) {
	f := AssistantBehaviourOf(settings.DefaultAssistantBehaviour())
	if f.Persona != settings.DefaultPersona || f.DMMode != "off" || f.TurnDeadline != "180" || f.IterationCap != "12" || f.DMUserIDs != "" || f.Name != "" {
		t.Fatalf("defaults shown as %+v", f)
	}
	b := settings.AssistantBehaviour{Name: "Ava", DMMode: settings.DMUsers, DMUserIDs: []uint64{5, 700}, Persona: "Hi {name}.", TurnDeadline: time.Minute, IterationCap: 3}
	if f := AssistantBehaviourOf(b); f.Name != "Ava" || f.DMUserIDs != "5\n700" || f.Persona != "Hi {name}." || f.TurnDeadline != "60" || f.IterationCap != "3" {
		t.Fatalf("stored shown as %+v", f)
	}
}
