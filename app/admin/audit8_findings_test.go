package admin

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
)

// Findings of the issue 8 audit, as tests (each failed before its fix).

// TestAudit8RawDocumentSizeLimitThroughTheForm: the raw-document form is
// posted url-encoded, as every browser posts a form without an enctype,
// but the admin's body limit (1 MiB of encoded request) sits in front of
// guildcfg's 1 MB document limit. A document inside the limit whose
// encoding is larger (non-Latin text is 3 UTF-8 bytes, 9 encoded; each
// line break is %0A) is refused with the generic 413 page and the typed
// text is gone; a document over the limit never gets the field error
// with the reference's message either, only inside a 48 KiB window.
func TestAudit8RawDocumentSizeLimitThroughTheForm(t *testing.T) {
	header := "---\nbot_active: true\n---\n"
	// 400,000 bytes of Japanese instructions: well under 1 MB.
	valid := header + strings.Repeat("親切に。\n", 400_000/13)
	if len(valid) > guildcfg.MaxDocumentBytes || len(url.Values{form.GuildDocumentText: {valid}}.Encode()) <= 1<<20 {
		t.Fatalf("the test document is %d bytes; it must be under the limit and encode past 1 MiB", len(valid))
	}
	// 1,000,002 bytes of short lines: just over the limit.
	oversize := header + strings.Repeat("ab\n", (guildcfg.MaxDocumentBytes-len(header))/3+1)
	runScenarios(t, []scenario{
		{name: "a valid document under 1 MB saves", method: http.MethodPost, url: rawURL, signedIn: true,
			setup: withGuild(activeGuild), form: rawForm(valid),
			wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42#raw", wantAudit: saveAudit,
			check: func(t *testing.T, h *harness, _ *client, _ *response) {
				if got := h.document(guildT).Text; got != valid {
					t.Errorf("stored %d bytes, want the %d-byte document", len(got), len(valid))
				}
			}},
		rawRefused("a document just over 1 MB gets the reference's message", oversize, guildcfg.MsgTooLarge),
		{name: "a body past the document route's own bound is refused before any parsing", method: http.MethodPost, url: rawURL,
			signedIn: true, setup: withGuild(activeGuild), form: rawForm(strings.Repeat("a", maxDocumentBody)),
			wantStatus: http.StatusRequestEntityTooLarge, wantNoAudit: true},
		{name: "other routes keep the 1 MiB bound", method: http.MethodPost, url: "/settings/password", signedIn: true,
			form:       url.Values{"current_password": {strings.Repeat("a", maxBody)}},
			wantStatus: http.StatusRequestEntityTooLarge, wantNoAudit: true},
	})
}

// TestAudit8SetupFormKeepsWhatTheAdminWrote: the server-setup form is
// offered (editable, no note) for a stored document whose only extras are
// YAML comments, and its save rewrites the document canonically, so the
// comments the admin typed in the raw text are silently dropped. The form
// refuses documents with keys it does not show "so nothing is lost"; a
// comment is lost without a word. Either the form is refused/read-only
// for such a document, or the comment survives the save.
func TestAudit8SetupFormKeepsWhatTheAdminWrote(t *testing.T) {
	commented := "---\nbot_active: true # switched on at launch, ask Ann before turning off\nstaff_role_ids: [111] # moderators\n---\nBe kind.\n"
	runScenarios(t, []scenario{
		{name: "the setup form refuses to save over a commented document", method: http.MethodPost, url: setupURL, signedIn: true,
			setup: withGuild(commented), form: setupForm(form.GuildStaffRoleIDs, "111\n222"),
			wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true, wantContains: []string{"comments it would drop"},
			check: func(t *testing.T, h *harness, _ *client, _ *response) {
				if got := h.document(guildT).Text; got != commented {
					t.Errorf("stored %q, want the commented document untouched", got)
				}
			}},
		{name: "the guild page says why the form is read-only", method: http.MethodGet, url: "/guilds/42", signedIn: true,
			setup: withGuild(commented), wantStatus: http.StatusOK, wantContains: []string{"has YAML comments, which this form would drop"}},
	})
}
