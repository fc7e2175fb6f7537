package admin

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/guildcfg"
)

// TestBrowserGuildPickers picks on the guild page, at phone and desktop
// width: a staff role by clicking it in its list, an allowed channel by
// typing its name and Enter, the proposal channel in its select, and a
// staff member through the member search; saves, and finds the ids stored
// and the choices shown by name.
func TestBrowserGuildPickers(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	pickerGuild(t, h)
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	for _, vp := range []struct {
		label string
		w, h  int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		h.writeDocument(guildT, "---\nbot_active: true\n---\n")
		tb.do(vp.label, chromedp.EmulateViewport(vp.w, vp.h), chromedp.Navigate(h.ts.URL+"/guilds/42"),
			visible(`[data-testid=guild-setup-form]`))
		tb.do(vp.label+": a role from its list", chromedp.ScrollIntoView(chromedp.CSS(`#gs-staff-roles-choose`)),
			click(`#gs-staff-roles-choose option[value="`+h.vars["mods"]+`"]`))
		tb.do(vp.label+": a channel by name", fill(`#gs-channels`, "news\r"),
			visible(`[data-testid="picker-allowed_channel_ids"][data-picked="`+h.vars["news"]+`"]`))
		tb.do(vp.label+": the proposal channel", chromedp.SetValue(chromedp.CSS(`#gs-proposal-channel-choose`), h.vars["general"]))
		tb.do(vp.label+": a member by search", fill(`#gs-staff-users`, "ada"),
			visible(`[data-testid="picker-staff_user_ids"][data-searched="ada"]`), fill(`#gs-staff-users`, "\r"),
			visible(`[data-testid="picker-staff_user_ids"][data-picked="`+h.vars["ada"]+`"]`))
		tb.do(vp.label+": save", clearAlerts(), click(`[data-testid=guild-setup-submit]`), visible(`[data-testid=alert-success]`))

		d := h.document(guildcfg.GuildTarget(testGuild))
		if d.Guild == nil {
			t.Fatalf("%s: stored server setup %q", vp.label, d.Text)
		}
		id := func(name string) uint64 { n, _ := strconv.ParseUint(h.vars[name], 10, 64); return n }
		if !slices.Equal(d.Guild.StaffRoleIDs, []uint64{id("mods")}) || !slices.Equal(d.Guild.AllowedChannelIDs, []uint64{id("news")}) ||
			d.Guild.ProposalChannelID != id("general") || !slices.Equal(d.Guild.StaffUserIDs, []uint64{id("ada")}) {
			t.Fatalf("%s: stored server setup %q", vp.label, d.Text)
		}
		tb.wantText(`#gs-staff-roles-choose option[value="`+h.vars["mods"]+`"]:checked`, "@Moderators")
		tb.wantText(`#gs-channels-choose option[value="`+h.vars["news"]+`"]:checked`, "#news")
		tb.wantText(`#gs-staff-users-choose option:checked`, "Ada Lovelace (@ada)")
	}
}

// TestBrowserTaskOwnerSearch: with two active guilds none is preselected,
// the destinations are every guild's text channels grouped by guild and
// category, and the owner's search follows the server chosen.
func TestBrowserTaskOwnerSearch(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	pickerGuild(t, h)
	h.writeDocument(guildT, "---\nbot_active: true\nscheduled_tasks: {enabled: true}\n---\n")
	h.writeDocument(guildcfg.GuildTarget(43), "---\nbot_active: true\n---\n")
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	tb.do("the form", chromedp.EmulateViewport(390, 844), chromedp.Navigate(h.ts.URL+"/tasks/new"), visible(`#task-owner`))
	if got := chosenText(tb, `#task-guild-choose`); got != "Choose a server" {
		t.Errorf("with two guilds the server chosen is %q", got)
	}
	tb.do("destinations grouped by guild", visible(`#task-destinations-choose optgroup[label="Picker guild · Text"]`))
	tb.do("choose the server, search its members", chromedp.SetValue(chromedp.CSS(`#task-guild-choose`), "42"),
		fill(`#task-owner`, "ada"), visible(`[data-testid="picker-owner"][data-searched="ada"]`), fill(`#task-owner`, "\r"),
		visible(`[data-testid="picker-owner"][data-picked="`+h.vars["ada"]+`"]`))
	if got := chosenText(tb, `#task-owner-choose`); got != "Ada Lovelace (@ada)" {
		t.Errorf("owner chosen = %q", got)
	}
}

// chosenText is the text of the chosen options of the select css, joined
// by commas (a closed drop-down's options have no visible text to read).
func chosenText(tb *tab, css string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelector(`+strconv.Quote(css)+`).selectedOptions).map(o => o.textContent.trim()).join(", ")`))
	if err != nil {
		tb.t.Fatalf("chosen options of %s: %v", css, err)
	}
	return s
}
