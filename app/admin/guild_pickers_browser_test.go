package admin

import (
	"slices"
	"strconv"
	"testing"

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
