package admin

import (
	"context"
	"database/sql"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// testGuild is the guild the scenarios configure.
const testGuild = 42

// testModuleSpecs are the modules of the test harness: kudos (a real
// module with guild settings and a cross-field rule) and "allkinds", whose
// schema has a field of every kind, so the generated form is tested for
// each.
func testModuleSpecs() []sdk.Spec {
	all := sdk.Spec{Name: "allkinds", Version: "1.0.0", APIVersion: sdk.APIVersion, GuildSettings: &sdk.GuildSettingsSchema{
		InvalidPolicy: sdk.DisableModule,
		Fields: []sdk.GuildSettingField{
			{Name: "greeting", Kind: sdk.GuildSettingStr, Default: "hello", Help: "What the bot says first."},
			{Name: "limit", Kind: sdk.GuildSettingInt, Default: 5},
			{Name: "channel_id", Kind: sdk.GuildSettingID},
			{Name: "role_ids", Kind: sdk.GuildSettingIDList},
			{Name: "words", Kind: sdk.GuildSettingStrList},
			{Name: "mode", Kind: sdk.GuildSettingEnum, Choices: []string{"quiet", "loud"}, Default: "quiet"},
			{Name: "enabled", Kind: sdk.GuildSettingBool, Default: false},
		},
	}}
	return []sdk.Spec{kudos.Spec(), all}
}

var (
	guildT = guildcfg.GuildTarget(testGuild)
	kudosT = guildcfg.GuildModuleTarget(testGuild, kudos.Name)
	allT   = guildcfg.GuildModuleTarget(testGuild, "allkinds")
)

// document reads a document of the harness.
func (h *harness) document(target guildcfg.Target) guildcfg.Document {
	h.t.Helper()
	d, err := h.guilds.Document(context.Background(), target)
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// writeDocument stores text as target's next revision (as the CLI) and
// sets {rev} (the new revision) and {oldrev} (the one it replaced).
func (h *harness) writeDocument(target guildcfg.Target, text string) {
	h.t.Helper()
	cur := h.document(target)
	d, err := h.guilds.Write(context.Background(), target, text, cur.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI})
	if err != nil {
		h.t.Fatalf("write %s: %v", target, err)
	}
	h.vars["oldrev"], h.vars["rev"] = cur.Revision, d.Revision
}

// storeInvalid puts a document that Write would refuse straight into the
// table (as a module whose schema changed since leaves one) and reloads.
func (h *harness) storeInvalid(target guildcfg.Target, text string) {
	h.t.Helper()
	ctx := context.Background()
	err := h.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_documents (target, kind, content, revision, updated_ms, updated_by) VALUES (?, ?, ?, ?, ?, ?)`,
			target.String(), string(target.Kind), text, guildcfg.Revision(text), time.Now().UnixMilli(), "test")
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.guilds.Reload(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// withGuild stores a server-setup document for testGuild.
func withGuild(text string) func(*testing.T, *harness) {
	return func(_ *testing.T, h *harness) { h.writeDocument(guildT, text) }
}

// withEmptyRevisions sets {rev} to the revision of an absent document,
// for saves that create one.
func withEmptyRevisions(_ *testing.T, h *harness) { h.vars["rev"] = guildcfg.EmptyRevision }

// unchanged asserts target still has the revision {rev} (or is absent).
func unchanged(target guildcfg.Target) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		want := h.vars["rev"]
		if want == "" {
			want = guildcfg.EmptyRevision // never written
		}
		if d := h.document(target); d.Revision != want {
			t.Errorf("%s changed: revision %s, want %s; text %q", target, d.Revision, want, d.Text)
		}
	}
}

// storedIs asserts target's text.
func storedIs(target guildcfg.Target, want string) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		if d := h.document(target); d.Text != want {
			t.Errorf("%s text = %q, want %q", target, d.Text, want)
		}
	}
}

const activeGuild = "---\nbot_active: true\nstaff_role_ids: [111]\n---\nBe kind.\n"

// setupForm is the server-setup form with the given changes.
func setupForm(kv ...string) url.Values {
	v := url.Values{form.GuildExpectedRevision: {"{rev}"}, form.GuildBotActive: {"true"}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			v.Del(kv[i])
			continue
		}
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// withRev sets the form's expected revision.
func withRev(v url.Values, rev string) url.Values {
	v.Set(form.GuildExpectedRevision, rev)
	return v
}

func rawForm(text string) url.Values {
	return url.Values{form.GuildExpectedRevision: {"{rev}"}, form.GuildDocumentText: {text}}
}

func moduleForm(kv ...string) url.Values {
	v := url.Values{form.GuildExpectedRevision: {"{rev}"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(form.ModuleSettingName(kv[i]), kv[i+1])
	}
	return v
}

func manyIDs(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(1000 + i)
	}
	return strings.Join(ids, "\n")
}

var (
	setupURL  = "/guilds/42/setup"
	rawURL    = "/guilds/42/document"
	kudosURL  = "/guilds/42/modules/" + kudos.Name
	allURL    = "/guilds/42/modules/allkinds"
	revertURL = "/guilds/42/history/{entry}/revert"
	saveAudit = []string{guildcfg.ActionDocumentSave}
)

// setupRefused is a server-setup save refused with msg beside field:
// 422, the message, nothing stored, no audit row.
func setupRefused(name, field, value, msg string) scenario {
	return scenario{name: "setup form: " + name, method: http.MethodPost, url: setupURL, signedIn: true,
		setup: withGuild(activeGuild), form: setupForm(field, value),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{form.MsgGuildNotSaved, `data-testid="error-` + field + `"`, html.EscapeString(msg)},
		check:        unchanged(guildT)}
}

// rawRefused is a raw-document save refused with msg: 422, the text kept
// in the textarea, nothing stored, no audit row.
func rawRefused(name, text, msg string) scenario {
	return scenario{name: "raw document: " + name, method: http.MethodPost, url: rawURL, signedIn: true,
		setup: withGuild(activeGuild), form: rawForm(text),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{form.MsgGuildNotSaved, `data-testid="error-text"`, html.EscapeString(msg)},
		check:        unchanged(guildT)}
}

// moduleRefused is a module-settings save refused with msg.
func moduleRefused(name, url string, target guildcfg.Target, field, value, msg string) scenario {
	return scenario{name: "module form: " + name, method: http.MethodPost, url: url, signedIn: true,
		setup: withEmptyRevisions, form: moduleForm(field, value),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{form.MsgGuildNotSaved, `data-testid="error-` + form.ModuleSettingName(field) + `"`, html.EscapeString(msg)},
		check:        unchanged(target)}
}

var guildScenarios = []scenario{
	// Access.
	{name: "anonymous list is sent to sign in", method: http.MethodGet, url: "/guilds",
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fguilds"},
	{name: "anonymous guild page is sent to sign in", method: http.MethodGet, url: "/guilds/42",
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fguilds%2F42"},
	{name: "anonymous save stores nothing", method: http.MethodPost, url: setupURL, setup: withEmptyRevisions, form: setupForm(),
		wantStatus: http.StatusUnauthorized, wantNoAudit: true, check: unchanged(guildT)},
	{name: "add without CSRF", method: http.MethodPost, url: "/guilds", signedIn: true, noCSRF: true,
		form: url.Values{form.GuildID: {"42"}}, wantStatus: http.StatusForbidden, wantNoAudit: true, check: unchanged(guildT)},
	{name: "setup save without CSRF", method: http.MethodPost, url: setupURL, signedIn: true, noCSRF: true,
		setup: withGuild(activeGuild), form: setupForm(form.GuildBotActive, ""), wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: unchanged(guildT)},
	{name: "raw save without CSRF", method: http.MethodPost, url: rawURL, signedIn: true, noCSRF: true,
		setup: withGuild(activeGuild), form: rawForm("---\nbot_active: false\n---\n"), wantStatus: http.StatusForbidden,
		wantNoAudit: true, check: unchanged(guildT)},
	{name: "module save without CSRF", method: http.MethodPost, url: kudosURL, signedIn: true, noCSRF: true,
		setup: withEmptyRevisions, form: moduleForm(kudos.FieldGiverMinTier, "staff"), wantStatus: http.StatusForbidden,
		wantNoAudit: true, check: unchanged(kudosT)},
	{name: "revert without CSRF", method: http.MethodPost, url: revertURL, signedIn: true, noCSRF: true,
		setup: twoRevisions, form: url.Values{form.GuildExpectedRevision: {"{rev}"}}, wantStatus: http.StatusForbidden,
		wantNoAudit: true, check: unchanged(guildT)},

	// The list and the add form.
	{name: "empty list explains documents", method: http.MethodGet, url: "/guilds", signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{`data-testid="empty-state"`, "server-setup document", `data-testid="guild-add-form"`,
			`aria-current="page"`}},
	{name: "list shows activation, staff and invalid modules", method: http.MethodGet, url: "/guilds", signedIn: true,
		setup: func(t *testing.T, h *harness) {
			h.writeDocument(guildT, activeGuild)
			h.storeInvalid(kudosT, "---\nunknown: 1\n---\n")
			h.writeDocument(guildcfg.GuildTarget(7), "---\nbot_active: false\n---\n")
		},
		wantStatus: http.StatusOK, wantContains: []string{`data-testid="guild-row-42"`, "Active", "0 users, 1 role",
			`data-testid="guild-invalid-42">Invalid settings: ` + kudos.Name, `data-testid="guild-row-7"`, "bot_active is off"}},
	{name: "add a guild creates its document switched off", method: http.MethodPost, url: "/guilds", signedIn: true,
		form: url.Values{form.GuildID: {" 42 "}}, wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42", wantAudit: saveAudit,
		check: storedIs(guildT, newGuildDocument)},
	{name: "add an existing guild opens it unchanged", method: http.MethodPost, url: "/guilds", signedIn: true,
		setup: withGuild(activeGuild), form: url.Values{form.GuildID: {"42"}}, wantStatus: http.StatusSeeOther,
		wantLocation: "/guilds/42", wantNoAudit: true, check: storedIs(guildT, activeGuild)},
	addRefused("a sign", "+42"), addRefused("a negative id", "-42"), addRefused("zero", "0"),
	addRefused("letters", "abc"), addRefused("21 digits", "123456789012345678901"),
	addRefused("out of range", "18446744073709551616"), addRefused("empty", ""),

	// The guild page.
	{name: "guild page shows both forms and every module", method: http.MethodGet, url: "/guilds/42", signedIn: true,
		setup: withGuild(activeGuild), wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="guild-setup-form"`, `data-testid="guild-raw-form"`, `data-testid="module-form-` + kudos.Name + `"`,
			`data-testid="module-form-allkinds"`, `name="expected_revision" value="{rev}"`, `role="switch"`, ">111 (not visible to the bot)</option>",
			"Be kind.", "Default (member)", "Lowest trust tier that may give kudos", "Default: hello.", "Default: 5.",
			`href="/tasks?guild=42" data-testid="guild-tasks"`}},
	{name: "unknown guild address", method: http.MethodGet, url: "/guilds/+42", signedIn: true, wantStatus: http.StatusNotFound},
	{name: "unknown module history", method: http.MethodGet, url: "/guilds/42/history?module=nope", signedIn: true,
		wantStatus: http.StatusNotFound},
	{name: "save to an unknown module", method: http.MethodPost, url: "/guilds/42/modules/nope", signedIn: true,
		form: moduleForm("x", "1"), wantStatus: http.StatusNotFound, wantNoAudit: true},
	{name: "extra keys make the form read-only", method: http.MethodGet, url: "/guilds/42", signedIn: true,
		setup: withGuild("---\nbot_active: true\npersona: calm\n---\n"), wantStatus: http.StatusOK,
		wantContains: []string{"also sets persona"}, wantNotContains: []string{`data-testid="guild-setup-form"`}},

	// Saves.
	{name: "setup form saves a canonical document, body kept", method: http.MethodPost, url: setupURL, signedIn: true,
		setup: withGuild(activeGuild),
		form: setupForm(form.GuildStaffRoleIDs, "111\r\n222, 333\r\n", form.GuildProposalChannelID, "555",
			form.GuildTasksEnabled, "true", form.GuildTasksTimezone, "Europe/Berlin"),
		wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42#setup", wantAudit: saveAudit,
		check: storedIs(guildT, "---\nbot_active: true\nstaff_role_ids: [111, 222, 333]\nproposal_channel_id: 555\n"+
			"scheduled_tasks:\n  enabled: true\n  min_tier: staff\n  timezone: \"Europe/Berlin\"\n---\nBe kind.\n")},
	{name: "setup form switches a guild off", method: http.MethodPost, url: setupURL, signedIn: true,
		setup: withGuild(activeGuild), form: setupForm(form.GuildBotActive, "", form.GuildStaffRoleIDs, "111"),
		wantStatus: http.StatusSeeOther, wantAudit: saveAudit,
		check: storedIs(guildT, "---\nbot_active: false\nstaff_role_ids: [111]\n---\nBe kind.\n")},
	{name: "setup form with nothing changed records nothing", method: http.MethodPost, url: setupURL, signedIn: true,
		setup: withGuild("---\nbot_active: true\nstaff_role_ids: [111]\n---\n"), form: setupForm(form.GuildStaffRoleIDs, "111"),
		wantStatus: http.StatusSeeOther, wantNoAudit: true, check: unchanged(guildT)},
	{name: "setup form refused on an extra-key document", method: http.MethodPost, url: setupURL, signedIn: true,
		setup: withGuild("---\nbot_active: true\npersona: calm\n---\n"), form: setupForm(),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true, wantContains: []string{form.MsgGuildExtraKeys},
		check: unchanged(guildT)},
	{name: "raw document saves exactly what was typed", method: http.MethodPost, url: rawURL, signedIn: true,
		setup: withGuild(activeGuild), form: rawForm("---\r\nbot_active: true\r\npersona: calm # kept\r\n---\r\nHi\r\n"),
		wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42#raw", wantAudit: saveAudit,
		check: storedIs(guildT, "---\nbot_active: true\npersona: calm # kept\n---\nHi\n")},
	{name: "module form saves the generated document", method: http.MethodPost, url: kudosURL, signedIn: true,
		setup: withEmptyRevisions, form: moduleForm(kudos.FieldGiverMinTier, "regular", kudos.FieldDigestChannel, "777"),
		wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42#module-" + kudos.Name, wantAudit: saveAudit,
		check: storedIs(kudosT, "---\ndigest_channel_id: 777\ngiver_min_tier: \"regular\"\nallow_thank_back: false\n---\n")},
	{name: "module form of every kind", method: http.MethodPost, url: allURL, signedIn: true, setup: withEmptyRevisions,
		form: moduleForm("greeting", "Hi \"you\"", "limit", "-3", "channel_id", "9", "role_ids", "1\n2", "words", "a b\n\nc",
			"mode", "loud", "enabled", "true"),
		wantStatus: http.StatusSeeOther, wantAudit: saveAudit,
		check: storedIs(allT, "---\ngreeting: \"Hi \\\"you\\\"\"\nlimit: -3\nchannel_id: 9\nrole_ids: [1, 2]\n"+
			"words: [\"a b\", \"c\"]\nmode: \"loud\"\nenabled: true\n---\n")},

	// Conflicts: the save lost to another tab's.
	{name: "setup conflict shows the current text", method: http.MethodPost, url: setupURL, signedIn: true,
		setup: func(t *testing.T, h *harness) {
			h.writeDocument(guildT, activeGuild)
			h.writeDocument(guildT, "---\nbot_active: true\nstaff_user_ids: [999]\n---\n")
		},
		form:       setupForm(form.GuildExpectedRevision, "{oldrev}", form.GuildStaffRoleIDs, "424242"),
		wantStatus: http.StatusConflict, wantNoAudit: true,
		wantContains: []string{html.EscapeString(form.MsgGuildConflict), `data-testid="guild-conflict-mine"`, "424242", ">999 (not visible to the bot)</option>",
			`value="{rev}"`},
		check: unchanged(guildT)},
	{name: "raw conflict keeps the typed text", method: http.MethodPost, url: rawURL, signedIn: true,
		setup: twoRevisions, form: withRev(rawForm("---\nbot_active: false\n---\nmine\n"), "{oldrev}"),
		wantStatus: http.StatusConflict, wantNoAudit: true, wantContains: []string{form.MsgGuildConflict, "mine"},
		check: unchanged(guildT)},
	{name: "module conflict", method: http.MethodPost, url: kudosURL, signedIn: true,
		setup: func(t *testing.T, h *harness) { h.writeDocument(kudosT, "---\ngiver_min_tier: staff\n---\n") },
		form:  withRev(moduleForm(kudos.FieldGiverMinTier, "regular"), "{oldrev}"), wantStatus: http.StatusConflict, wantNoAudit: true,
		wantContains: []string{html.EscapeString(form.MsgGuildConflict)}, check: storedIs(kudosT, "---\ngiver_min_tier: staff\n---\n")},
	{name: "save without a revision", method: http.MethodPost, url: rawURL, signedIn: true, setup: withGuild(activeGuild),
		form:       url.Values{form.GuildDocumentText: {"---\nbot_active: false\n---\n"}},
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true, wantContains: []string{form.MsgGuildRevision},
		check: unchanged(guildT)},

	// History and revert.
	{name: "history shows each change as a marked diff", method: http.MethodGet, url: "/guilds/42/history", signedIn: true,
		setup: twoRevisions, wantStatus: http.StatusOK,
		wantContains: []string{`class="diff-line diff-del"><span class="diff-marker" aria-hidden="false">-</span>staff_role_ids: [111]`,
			`class="diff-line diff-add"><span class="diff-marker" aria-hidden="false">+</span>staff_role_ids: [222]`,
			"@@ -1,5 +1,5 @@", "created the document", `data-testid="revert-{entry}"`, "current"}},
	{name: "revert writes the old text as a new revision", method: http.MethodPost, url: revertURL, signedIn: true,
		setup: twoRevisions, form: url.Values{form.GuildExpectedRevision: {"{rev}"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42/history", wantAudit: []string{guildcfg.ActionDocumentRevert},
		check: storedIs(guildT, activeGuild)},
	{name: "revert with a stale revision", method: http.MethodPost, url: revertURL, signedIn: true,
		setup: twoRevisions, form: url.Values{form.GuildExpectedRevision: {"{oldrev}"}},
		wantStatus: http.StatusConflict, wantNoAudit: true, wantContains: []string{html.EscapeString(form.MsgGuildRevertConflict)},
		check: unchanged(guildT)},
	{name: "revert of another document's entry", method: http.MethodPost, url: revertURL, signedIn: true,
		setup: twoRevisions, form: url.Values{form.GuildExpectedRevision: {guildcfg.EmptyRevision}, form.GuildModule: {kudos.Name}},
		wantStatus: http.StatusNotFound, wantNoAudit: true, check: unchanged(guildT)},
	{name: "module revert", method: http.MethodPost, url: revertURL, signedIn: true,
		setup: func(t *testing.T, h *harness) {
			h.writeDocument(kudosT, "---\ngiver_min_tier: staff\n---\n")
			h.vars["entry"] = firstEntry(t, h, kudosT)
			h.writeDocument(kudosT, "---\ngiver_min_tier: regular\n---\n")
		},
		form:       url.Values{form.GuildExpectedRevision: {"{rev}"}, form.GuildModule: {kudos.Name}},
		wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42/history?module=" + kudos.Name, wantAudit: []string{guildcfg.ActionDocumentRevert},
		check: storedIs(kudosT, "---\ngiver_min_tier: staff\n---\n")},

	// Bad input at the form boundary: each a clear field error, nothing stored.
	setupRefused("an id with a plus sign", form.GuildStaffRoleIDs, "+5", "staff_role_ids contains a non-numeric id '+5'"),
	setupRefused("a negative id", form.GuildStaffUserIDs, "-5", "staff_user_ids contains a non-numeric id '-5'"),
	setupRefused("an id out of range", form.GuildRegularRoleIDs, "18446744073709551616", "regular_role_ids contains a non-numeric id 18446744073709551616"),
	setupRefused("id zero", form.GuildAllowedChannelIDs, "0", "allowed_channel_ids contains an invalid id 0"),
	setupRefused("513 ids", form.GuildStaffRoleIDs, manyIDs(513), "staff_role_ids has more than 512 entries"),
	setupRefused("a YAML injection", form.GuildStaffRoleIDs, "1]\nbot_active: [", "staff_role_ids contains a non-numeric id '1]'"),
	setupRefused("non-UTF-8 in an id", form.GuildStaffRoleIDs, "\xff", "staff_role_ids contains a non-numeric id"),
	setupRefused("a letter channel", form.GuildProposalChannelID, "general", "proposal_channel_id must be a numeric Discord id"),
	setupRefused("an unknown time zone", form.GuildTasksTimezone, "Mars/Olympus", "must be an IANA time zone"),
	setupRefused("an unknown tier", form.GuildTasksMinTier, "owner", "must be one of member, regular, staff"),
	rawRefused("oversize text", strings.Repeat("a", guildcfg.MaxDocumentBytes+1), guildcfg.MsgTooLarge),
	rawRefused("invalid YAML", "---\nbot_active: [true\n---\n", "line "),
	rawRefused("an anchor", "---\nbot_active: &on true\n---\n", "YAML anchors are not allowed"),
	rawRefused("an alias", "---\nbot_active: true\nx: &a 1\ny: *a\n---\n", "YAML a"),
	rawRefused("a custom tag", "---\nbot_active: !yes true\n---\n", "YAML tags are not allowed"),
	rawRefused("a duplicate key", "---\nbot_active: true\nbot_active: false\n---\n", "duplicate key"),
	rawRefused("non-UTF-8", "---\nbot_active: true\n---\n\xff\xfe", guildcfg.MsgNotUTF8),
	rawRefused("yes as a boolean", "---\nbot_active: yes\n---\n", "bot_active must be true or false"),
	rawRefused("513 ids", "---\nbot_active: true\nstaff_role_ids: ["+strings.ReplaceAll(manyIDs(513), "\n", ", ")+"]\n---\n",
		"staff_role_ids has more than 512 entries"),
	moduleRefused("an id with a sign", kudosURL, kudosT, kudos.FieldDigestChannel, "+5", "digest_channel_id must be a numeric Discord id"),
	moduleRefused("an id out of range", allURL, allT, "channel_id", "99999999999999999999", "channel_id must be a numeric Discord id"),
	moduleRefused("513 ids", allURL, allT, "role_ids", manyIDs(513), "role_ids has more than 512 entries"),
	moduleRefused("a fraction", allURL, allT, "limit", "1.5", "limit must be an integer"),
	moduleRefused("an unknown choice", allURL, allT, "mode", "shout", "mode must be one of quiet, loud"),
	{name: "module form: the module's cross-field rule", method: http.MethodPost, url: kudosURL, signedIn: true,
		setup: withEmptyRevisions, form: moduleForm(kudos.FieldGiverMinTier, "staff", kudos.FieldDigestChannel, "777"),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{form.MsgGuildNotSaved + " " + kudos.ErrStaffOnlyDigest, `value="777"`, `value="staff" selected`},
		check:        unchanged(kudosT)},
}

// addRefused is an add-a-guild form refused for its id.
func addRefused(name, id string) scenario {
	return scenario{name: "add refused: " + name, method: http.MethodPost, url: "/guilds", signedIn: true,
		form: url.Values{form.GuildID: {id}}, wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{`data-testid="error-guild_id"`, html.EscapeString(form.MsgGuildIDInvalid)}, check: unchanged(guildT)}
}

// twoRevisions writes two server-setup revisions and sets {entry} to the
// first's history entry, {rev} to the current and {oldrev} to the first.
func twoRevisions(t *testing.T, h *harness) {
	t.Helper()
	h.writeDocument(guildT, activeGuild)
	h.vars["entry"] = firstEntry(t, h, guildT)
	h.writeDocument(guildT, strings.Replace(activeGuild, "111", "222", 1))
}

func firstEntry(t *testing.T, h *harness, target guildcfg.Target) string {
	t.Helper()
	res, err := h.guilds.History(context.Background(), target, guildcfg.HistoryPage{})
	if err != nil || len(res.Entries) == 0 {
		t.Fatalf("history of %s: %v %v", target, res, err)
	}
	return strconv.FormatInt(res.Entries[len(res.Entries)-1].ID, 10)
}

func TestGuildScenarios(t *testing.T) { runScenarios(t, guildScenarios) }

// TestRawDocumentSizeLimitThroughTheForm: the raw-document form is
// posted url-encoded, as every browser posts a form without an enctype,
// so the admin's body limit sits in front of guildcfg's 1 MB document
// limit. Under the other routes' bound (1 MiB of encoded request) a
// document inside the limit whose encoding is larger (non-Latin text is 3
// UTF-8 bytes, 9 encoded; each line break is %0A) would be refused with
// the generic 413 page and the typed text lost, and a document over the
// limit would get the field error with the reference's message only inside
// a 48 KiB window. The document route has its own, larger bound.
func TestRawDocumentSizeLimitThroughTheForm(t *testing.T) {
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

// TestSetupFormKeepsWhatTheAdminWrote: the server-setup form's save
// rewrites the document canonically, so for a stored document whose only
// extras are YAML comments it would silently drop the comments the admin
// typed in the raw text. As it refuses documents with keys it does not
// show "so nothing is lost", it refuses to save over a commented document,
// and the guild page says why the form is read-only.
func TestSetupFormKeepsWhatTheAdminWrote(t *testing.T) {
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
