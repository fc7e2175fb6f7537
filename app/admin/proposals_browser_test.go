package admin

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/chromedp/chromedp"

	demochat "github.com/kimiapp/kimi/app/demo"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// proposalsCaps is the module host as app/serve.go gives it to the bot
// when the proposals service is wired (app's withProposals): every
// capability set gains proposals.v2, which kudos' /kudos setup needs.
type proposalsCaps struct{ *host.Host }

func (h proposalsCaps) SetCapabilities(ctx context.Context, caps sdk.Capabilities) error {
	return h.Host.SetCapabilities(ctx, sdk.NewCapabilities(append(caps.Names(), sdk.CapProposals), caps.MembersIntent(), caps.MessageContentIntent()))
}

var _ discord.CapabilitySetter = proposalsCaps{}

// withDemoAppliance is demo mode as app/serve.go composes it: one fake
// Discord with the seeded demo guild, the bot connected to it with the
// fake's token, the proposals service posting its cards through the bot
// and deciding their buttons, the module host running kudos over both (the
// bot attached to it), and /demo, /discord, /modules and /proposals over
// the same parts. The demo guild's server setup makes the moderators role
// staff (what an admin does on /guilds/{id} first), so ada may run
// /kudos setup and click the card's buttons.
func withDemoAppliance(o *Options) {
	ctx := context.Background()
	guilds := o.Guilds.(*guildcfg.Service)
	fake := fakediscord.New(fakediscord.Options{MaxRecorded: 1000})
	g := fake.SeedDemo()
	gid, _ := strconv.ParseUint(g.GuildID, 10, 64)
	if _, err := guilds.Write(ctx, guildcfg.GuildTarget(gid), fmt.Sprintf("---\nbot_active: true\nstaff_role_ids: [%s]\n---\n", g.ModRole),
		guildcfg.EmptyRevision, guildcfg.Actor{Kind: guildcfg.ActorAdmin, Name: testUser}); err != nil {
		panic(err)
	}
	bot, err := discord.New(discord.Options{Store: o.Store, Guilds: guilds, Logger: o.Logger, Transport: fake.Transport(), Dialer: fake.Dialer(),
		Token: fake.Token(), TokenSource: "demo", Getenv: func(string) string { return "" }})
	if err != nil {
		panic(err)
	}
	var mh *host.Host
	props, err := proposals.New(proposals.Options{Store: o.Store, Guilds: guilds, Discord: discord.NewCards(bot), Logger: o.Logger,
		KnownModule: func(name string) bool {
			m, ok := mh.Module(name)
			return ok && m.State == host.StateRunning
		}})
	if err != nil {
		panic(err)
	}
	mh, err = host.New(ctx, host.Options{Specs: []sdk.Spec{kudos.Spec()}, Store: o.Store, Guilds: guilds, Logger: o.Logger,
		Selection: []string{kudos.Name}, SelectionSet: true, Discord: bot, Proposals: props})
	if err != nil {
		panic(err)
	}
	bot.RegisterCoreHandler("proposals", proposals.Buttons{S: props})
	bot.Attach(proposalsCaps{mh})
	if err := bot.ApplyCapabilities(ctx); err != nil {
		panic(err)
	}
	if err := mh.Start(ctx); err != nil {
		panic(err)
	}
	bot.Start(ctx)
	o.Demo, o.Discord, o.Host, o.Proposals, o.Scheduler = demochat.NewChat(fake, g), bot, mh, props, mh.Scheduler()
}

// eval is a JavaScript expression's string value in the tab.
func (tb *tab) eval(js string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// breakDocument stores text as target's document behind guildcfg's back
// (a server setup that no longer verifies) and reloads it.
func (h *harness) breakDocument(target guildcfg.Target, text string) {
	h.t.Helper()
	ctx := context.Background()
	if err := h.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE kimi_documents SET content = ?, revision = ? WHERE target = ?`, text, guildcfg.Revision(text), target.String())
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
	if err := h.guilds.Reload(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// waitUntil polls cond (generously bounded; no timing is asserted).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cardOf is a proposal's review card in the demo fake.
func cardOf(t *testing.T, h *harness, id string) *discordgo.Message {
	t.Helper()
	p, _, err := h.props.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range demoFakeOf(t, h).Messages(strconv.FormatUint(p.Card.ChannelID, 10)) {
		if m.ID == strconv.FormatUint(p.Card.MessageID, 10) {
			return m
		}
	}
	t.Fatalf("the card of %s is not in channel %d", id, p.Card.ChannelID)
	return nil
}

func cardButtons(m *discordgo.Message) []string {
	var ids []string
	for _, row := range m.Components {
		if r, ok := row.(*discordgo.ActionsRow); ok {
			for _, c := range r.Components {
				if b, ok := c.(*discordgo.Button); ok {
					ids = append(ids, b.CustomID)
				}
			}
		}
	}
	return ids
}

// TestBrowserProposalApprovedFromThePage is the browser proof, in
// demo mode as serve composes it: ada (staff) runs `/kudos setup #help`
// through /demo; the proposal appears in the open /proposals tab without a
// reload (and the navigation's badge counts it); the admin opens it, sees
// the diff and that it would apply, and approves it; kudos' guild settings
// now name #help and its OnChange fired; the card in the fake (and on
// /demo) reads "Configuration proposal applied" with no buttons. Then the
// concurrency proof: a second /kudos setup, its page's Approve clicked and
// the card's Approve clicked by ada at the same instant — exactly one
// applies, the other is told "already applied", and the card and the page
// agree. On the way, a half-typed reject reason survives a live update.
func TestBrowserProposalApprovedFromThePage(t *testing.T) {
	h := newHarness(t, withDemoAppliance)
	h.createAdmin()
	demoVars(t, h)
	fake := demoFakeOf(t, h)
	waitUntil(t, "kudos' commands synced to the demo guild", func() bool {
		return slices.ContainsFunc(fake.Commands(demoGuildID(t, h)), func(c *discordgo.ApplicationCommand) bool { return c.Name == "kudos" }) ||
			slices.ContainsFunc(fake.Commands(""), func(c *discordgo.ApplicationCommand) bool { return c.Name == "kudos" })
	})

	inbox := newTab(t)
	inbox.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
		chromedp.Navigate(h.ts.URL+"/proposals"),
		visible(`[data-testid=proposals-live]`),
	)
	inbox.wantText(`[data-testid=proposals-live]`, "No proposals yet")
	inbox.markPage("proposals-live")

	// /kudos setup through /demo, in a second tab of the same browser
	// (the same admin session).
	demo := newTab(t)
	runSetup := func(channel string) string {
		t.Helper()
		demo.do("run /kudos setup #"+channel,
			chromedp.Navigate(h.ts.URL+demoLocation(h.vars["general"], h.vars["ada"])),
			visible(`[data-testid=demo-chat]`),
			click(`[data-testid=demo-command-kudos-setup] summary`),
			chromedp.SetValue(chromedp.CSS(`[data-testid=demo-o-kudos-setup-channel]`), h.vars[channel]),
			click(`[data-testid=demo-run-kudos-setup]`),
			visible(`[data-testid=demo-chat]`),
		)
		var id string
		waitUntil(t, "the proposal of /kudos setup #"+channel, func() bool {
			page, err := h.props.List(context.Background(), proposals.Filter{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page.Items {
				if !strings.Contains(h.vars["proposals"], p.ID) {
					id = p.ID
				}
			}
			return id != ""
		})
		// Waits, not reads: the live region may be re-rendered under a read.
		demo.do("kudos' reply", visible(`[data-testid=demo-ephemeral]`), waitDemoText("Proposed ("+id+")"),
			// The id is inline code, as Discord shows `id`.
			chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="demo-messages"]//code[@class="dt-code" and .="`+id+`"]`)))
		h.vars["proposals"] += id + " "
		return id
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range strings.Split(h.logs.String(), "\n") {
				if strings.Contains(l, "kudos") || strings.Contains(l, "propos") || strings.Contains(l, "interaction") || strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
					t.Log(l)
				}
			}
		}
	})
	first := runSetup("help")

	// The inbox shows it without a reload.
	inbox.do("the proposal appears", visible(`[data-testid=proposal-row-`+first+`]`))
	inbox.wantSamePage("the new proposal")
	inbox.wantText(`[data-testid=proposal-row-`+first+`]`, "pending")
	inbox.wantText(`[data-testid=proposal-row-`+first+`]`, "guild:"+demoGuildID(t, h)+":"+kudos.Name)
	inbox.do("reload for the badge", chromedp.Navigate(h.ts.URL+"/proposals"), visible(`[data-testid=proposal-row-`+first+`]`))
	inbox.wantText(`[data-testid=nav-pending]`, "1")

	// The review page: the diff, the check; a half-typed reason survives
	// an update of the live region (another proposal's arrival).
	inbox.do("open the proposal",
		click(`[data-testid=proposal-open-`+first+`]`),
		visible(`[data-testid=proposal-approve-form]`),
	)
	inbox.wantText(`[data-testid=proposal-would-apply]`, "")
	inbox.wantText(`[data-testid=proposal-diff-split]`, "digest_channel_id: "+h.vars["help"])
	inbox.markPage("proposal-live")
	inbox.do("type half a reason", fill(`[data-testid=proposal-reason]`, "half a reas"))
	inbox.do("mark the region", chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid=proposal-live]').setAttribute('data-live-updated', 'marked')`))
	// An approval from the other tab that cannot apply (the server setup
	// broke meanwhile: the guild would not verify, so the write is rolled
	// back) keeps the proposal pending with a new event: the open page's
	// region is replaced, its reason kept.
	gid, _ := strconv.ParseUint(demoGuildID(t, h), 10, 64)
	setup := h.document(guildcfg.GuildTarget(gid))
	h.breakDocument(guildcfg.GuildTarget(gid), "---\nbot_active: maybe\n---\n")
	demo.do("approve from the other tab",
		chromedp.Navigate(h.ts.URL+"/proposals/"+first),
		click(`[data-testid=proposal-approve]`),
		visible(`[data-testid=proposal-events] [data-testid=proposal-event-approve_failed]`),
	)
	demo.wantText(`[data-testid^=alert-]`, "Not applied: ")
	inbox.do("the region is updated", visible(`[data-testid=proposal-live]:not([data-live-updated=marked]) [data-testid=proposal-event-approve_failed]`))
	if reason := inbox.eval(`document.querySelector('[data-testid=proposal-reason]').value`); reason != "half a reas" {
		t.Fatalf("the reason after a live update = %q, want what was typed", reason)
	}
	inbox.wantSamePage("the update")
	h.writeDocument(guildcfg.GuildTarget(gid), setup.Text)
	inbox.do("clear the reason", fill(`[data-testid=proposal-reason]`, ""))

	// Approve on the page.
	changes := strings.Count(h.logs.String(), "kudos guild settings changed")
	inbox.do("approve", click(`[data-testid=proposal-approve]`), visible(`[data-testid=proposal-detail][data-state=applied]`))
	inbox.wantText(`[data-testid^=alert-]`, proposals.ReplyApplied)
	inbox.wantText(`[data-testid=proposal-decision]`, testUser)
	ms, _ := h.guilds.ModuleSettings(gid, kudos.Name)
	if fmt.Sprint(ms.Values[kudos.FieldDigestChannel]) != h.vars["help"] {
		t.Fatalf("kudos' settings after the approval = %v, want the digest channel #help", ms.Values)
	}
	waitUntil(t, "kudos' OnChange", func() bool { return strings.Count(h.logs.String(), "kudos guild settings changed") > changes })
	card := cardOf(t, h, first)
	if len(card.Embeds) == 0 || card.Embeds[0].Title != proposals.TitleApplied || len(cardButtons(card)) != 0 {
		t.Fatalf("the card after the approval: %+v, buttons %v", card.Embeds, cardButtons(card))
	}
	demo.do("the card on /demo", chromedp.Navigate(h.ts.URL+demoLocation(h.vars["general"], h.vars["ada"])), visible(`[data-testid=demo-messages]`),
		waitDemoText(proposals.TitleApplied))
	if n := h.auditCount(proposals.ActionApprove); n != 1 || h.auditCount(proposals.ActionApproveFailed) != 1 {
		t.Fatalf("proposal.approve rows = %d (failed %d), want 1 (1)", n, h.auditCount(proposals.ActionApproveFailed))
	}

	// The concurrency proof: the page's Approve and the card's Approve at
	// the same instant.
	second := runSetup("welcome")
	inbox.do("open the second proposal", chromedp.Navigate(h.ts.URL+"/proposals/"+second), visible(`[data-testid=proposal-approve-form]`))
	p2, _, err := h.props.Get(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg          sync.WaitGroup
		start       = make(chan struct{})
		iid         string
		clickErr    error
		pageClicked error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-start
		iid, clickErr = fake.ClickButton(strconv.FormatUint(p2.Card.ChannelID, 10), strconv.FormatUint(p2.Card.MessageID, 10), h.vars["ada"], "m:proposals:approve:"+second)
	}()
	go func() {
		defer wg.Done()
		<-start
		ctx, cancel := context.WithTimeout(inbox.ctx, 60*time.Second)
		defer cancel()
		// One round trip (chromedp's click takes several, and the card's
		// decision may replace the region between them).
		clicked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () {
			var b = document.querySelector('[data-testid=proposal-approve]');
			if (!b) { return false; }
			b.click();
			return true;
		})()`))
		switch {
		case err != nil:
			pageClicked = err
		case !clicked:
			pageClicked = fmt.Errorf("the Approve button was gone before the click")
		default:
			_, pageClicked = chromedp.Run(ctx, visible(`[data-testid^=alert-]`))
		}
	}()
	close(start)
	wg.Wait()
	if clickErr != nil || pageClicked != nil {
		t.Fatalf("click: %v; page: %v", clickErr, pageClicked)
	}
	var discordReply string
	waitUntil(t, "the button's reply", func() bool {
		st := fake.Interaction(iid)
		if st == nil {
			return false
		}
		for _, m := range st.Followups {
			if m.Content != "" {
				discordReply = m.Content
			}
		}
		if st.Original != nil && st.Original.Content != "" {
			discordReply = st.Original.Content
		}
		if st.Response != nil && st.Response.Data != nil && st.Response.Data.Content != "" {
			discordReply = st.Response.Data.Content
		}
		return discordReply != ""
	})
	pageFlash := inbox.text(`[data-testid^=alert-]`)
	t.Logf("at once: Discord was told %q, the page %q", discordReply, pageFlash)
	already := "Proposal is already applied."
	applied := 0
	for _, got := range []string{discordReply, pageFlash} {
		switch {
		case strings.Contains(got, proposals.ReplyApplied):
			applied++
		case strings.Contains(got, already):
		default:
			t.Errorf("a decision was told %q", got)
		}
	}
	if applied != 1 {
		t.Fatalf("Discord was told %q and the page %q: want exactly one applied, the other already applied", discordReply, pageFlash)
	}
	if n := h.auditCount(proposals.ActionApprove); n != 2 {
		t.Errorf("proposal.approve rows = %d, want 2 (one per proposal)", n)
	}
	inbox.do("the page shows it applied", visible(`[data-testid=proposal-detail][data-state=applied]`))
	card = cardOf(t, h, second)
	if len(card.Embeds) == 0 || card.Embeds[0].Title != proposals.TitleApplied || len(cardButtons(card)) != 0 {
		t.Fatalf("the second card: %+v, buttons %v", card.Embeds, cardButtons(card))
	}
	p2, _, _ = h.props.Get(context.Background(), second)
	decider := testUser
	if strings.Contains(discordReply, proposals.ReplyApplied) && !strings.Contains(discordReply, already) {
		decider = "<@" + h.vars["ada"] + ">"
	}
	if decider == testUser {
		inbox.wantText(`[data-testid=proposal-decision]`, testUser)
	} else { // a Discord decider shows as a name, the id in its title
		inbox.do("the decision names the Discord decider", visible(`[data-testid=proposal-decision] [data-id="`+h.vars["ada"]+`"]`))
	}
	if p2.DecidedByAdmin != testUser && decider == testUser || p2.DecidedByUser == 0 && decider != testUser {
		t.Errorf("the proposal was decided by admin %q / user %d; the replies say %s", p2.DecidedByAdmin, p2.DecidedByUser, decider)
	}
	if card.Embeds[0].Title != proposals.TitleApplied {
		t.Errorf("the card says %q", card.Embeds[0].Title)
	}
	ms, _ = h.guilds.ModuleSettings(gid, kudos.Name)
	if fmt.Sprint(ms.Values[kudos.FieldDigestChannel]) != h.vars["welcome"] {
		t.Errorf("kudos' settings after the second approval = %v, want #welcome", ms.Values)
	}
}

// waitDemoText waits until /demo's messages show text (a wait, not a read:
// the live region may be swapped while it is read).
func waitDemoText(text string) chromedp.Action[chromedp.Void] {
	return waitTestIDText("demo-messages", text)
}

// waitTestIDText waits until the element with data-testid testid (or one
// inside it) shows text.
func waitTestIDText(testid, text string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="` + testid + `" and contains(., "` + text + `")]`))
}
