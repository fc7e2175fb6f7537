package form

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestProposalFilterValidate(t *testing.T) {
	tests := []struct {
		name  string
		query url.Values
		want  []string // the fields with a message (FieldForm aside)
	}{
		{"empty", nil, nil},
		{"every filter", url.Values{"state": {"pending"}, "guild": {"42"}, "module": {"kudos"}, "target": {"guild:42:kudos"}, "after": {"2026:abc"}}, nil},
		{"applied and rejected", url.Values{"state": {"applied"}}, nil},
		{"unknown state", url.Values{"state": {"done"}}, []string{ProposalState}},
		{"guild not digits", url.Values{"guild": {"4x"}}, []string{ProposalGuild}},
		{"guild zero", url.Values{"guild": {"0"}}, []string{ProposalGuild}},
		{"guild too long", url.Values{"guild": {strings.Repeat("9", 21)}}, []string{ProposalGuild}},
		{"guild over 64 bits", url.Values{"guild": {"99999999999999999999"}}, []string{ProposalGuild}},
		{"module upper case", url.Values{"module": {"Kudos"}}, []string{ProposalModule}},
		{"target unknown kind", url.Values{"target": {"role:1"}}, []string{ProposalTarget}},
		{"cursor with a quote", url.Values{"after": {`a"b`}}, []string{ProposalAfter}},
		{"all wrong", url.Values{"state": {"x"}, "guild": {"-1"}, "module": {"1"}, "target": {"guild:"}},
			[]string{ProposalState, ProposalGuild, ProposalModule, ProposalTarget}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/proposals?"+tt.query.Encode(), nil)
			errs := ParseProposalFilter(r).Validate()
			if len(tt.want) == 0 {
				if !errs.OK() {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if errs.Get(FieldForm) != MsgProposalFiltered {
				t.Errorf("form message = %q", errs.Get(FieldForm))
			}
			if len(errs) != len(tt.want)+1 {
				t.Errorf("errors %v, want exactly %v and the form's", errs, tt.want)
			}
			for _, f := range tt.want {
				if !errs.Has(f) {
					t.Errorf("no message for %s: %v", f, errs)
				}
			}
		})
	}
}

func TestProposalFilterQuery(t *testing.T) {
	f := ProposalFilter{State: "pending", Guild: "42", Module: "kudos", Target: "guild:42:kudos", After: "c1"}
	if got, want := f.Query(true), "after=c1&guild=42&module=kudos&state=pending&target=guild%3A42%3Akudos"; got != want {
		t.Errorf("Query(true) = %q, want %q", got, want)
	}
	if got := f.Query(false); strings.Contains(got, "after") {
		t.Errorf("Query(false) = %q keeps the cursor", got)
	}
	if (ProposalFilter{After: "c1"}).Filtered() {
		t.Error("a cursor alone is not a filter")
	}
	if f.GuildID() != 42 {
		t.Errorf("GuildID = %d", f.GuildID())
	}
}

func TestProposalRejectValidate(t *testing.T) {
	tests := []struct {
		name, reason string
		ok           bool
	}{
		{"a reason", "not now", true},
		{"trimmed, lines kept", "  two\r\nlines  ", true},
		{"500 characters", strings.Repeat("é", 500), true},
		{"empty", "", false},
		{"only spaces", "  \t ", false},
		{"501 characters", strings.Repeat("é", 501), false},
		{"a control character", "bell\a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ParseProposalReject(post(t, "/proposals/x/reject", url.Values{ProposalReason: {tt.reason}}))
			errs := f.Validate()
			if errs.OK() != tt.ok {
				t.Fatalf("Validate(%q) = %v, want ok %v", tt.reason, errs, tt.ok)
			}
			if !tt.ok && errs.Get(ProposalReason) != MsgProposalReason {
				t.Errorf("message = %q", errs.Get(ProposalReason))
			}
			if strings.Contains(f.Reason, "\r") {
				t.Errorf("reason %q keeps a CR", f.Reason)
			}
		})
	}
}

func TestProposalNotificationsValidate(t *testing.T) {
	tests := []struct {
		name          string
		mode, webhook string
		stored        bool
		want          []string
	}{
		{"off", "off", "", false, nil},
		{"dm", "dm", "", false, nil},
		{"webhook with a URL", "webhook", "https://hooks.example.org/t/abc", false, nil},
		{"webhook keeps the stored URL", "webhook", "", true, nil},
		{"webhook without any URL", "webhook", "", false, []string{ProposalNotifyWebhookURL}},
		{"webhook over http", "webhook", "http://hooks.example.org/x", false, []string{ProposalNotifyWebhookURL}},
		{"webhook with credentials", "webhook", "https://u:p@hooks.example.org/x", true, []string{ProposalNotifyWebhookURL}},
		{"a bad URL with dm", "dm", "not a url", false, []string{ProposalNotifyWebhookURL}},
		{"unknown mode", "email", "", false, []string{ProposalNotifyMode}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ParseProposalNotifications(post(t, "/settings/proposals", url.Values{ProposalNotifyMode: {tt.mode}, ProposalNotifyWebhookURL: {tt.webhook}}))
			errs := f.Validate(tt.stored)
			if len(tt.want) == 0 {
				if !errs.OK() {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != len(tt.want)+1 || errs.Get(FieldForm) != MsgProposalNotifyNotSaved {
				t.Errorf("errors %v, want %v and the form's", errs, tt.want)
			}
			for _, name := range tt.want {
				if !errs.Has(name) {
					t.Errorf("no message for %s: %v", name, errs)
				}
			}
		})
	}
}
