package admin

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/modules/kudos"
)

// TestGuildPageShowsEveryWriteAtOnce views the guild page (so guildcfg
// caches its documents), writes a document through each path that writes
// one — the page's own forms, the add form, a revert, a proposal's approval
// and its rollback — and views the page again: it must show the write at
// once.
func TestGuildPageShowsEveryWriteAtOnce(t *testing.T) {
	const proposed = "123456789012345678"
	proposeDigest := func(t *testing.T, h *harness) {
		h.propose(t, kudos.Name, "---\ndigest_channel_id: "+proposed+"\n---\n", "Set the kudos digest channel")
	}
	// breakGuild stores a server setup that does not validate (as a restore
	// could), so an approval's verification fails and it rolls back.
	breakGuild := func(t *testing.T, h *harness) {
		ctx := context.Background()
		err := h.st.Write(ctx, func(tx *sql.Tx) error {
			text := "---\nbot_active: maybe\n---\n"
			_, err := tx.ExecContext(ctx, `UPDATE kimi_documents SET content = ?, revision = ? WHERE target = ?`,
				text, guildcfg.Revision(text), guildT.String())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.guilds.Reload(ctx); err != nil {
			t.Fatal(err)
		}
	}
	approve := func(t *testing.T, h *harness, c *client) *response {
		return c.post("/proposals/"+h.vars["id"]+"/approve", url.Values{})
	}
	rev := func(h *harness, target guildcfg.Target) string { return h.document(target).Revision }
	cases := []struct {
		name  string
		setup func(t *testing.T, h *harness)
		write func(t *testing.T, h *harness, c *client) *response
		// before is on the page before the write; want on it after, gone
		// not.
		before, want, gone []string
		check              func(t *testing.T, h *harness)
	}{
		{name: "setup form", setup: withGuild(activeGuild),
			write: func(t *testing.T, h *harness, c *client) *response {
				return c.post(setupURL, withRev(setupForm(form.GuildStaffRoleIDs, "333"), rev(h, guildT)))
			},
			before: []string{">111 (not visible to the bot)</option>"}, want: []string{">333 (not visible to the bot)</option>"}, gone: []string{">111 (not visible to the bot)</option>"}},
		{name: "raw document", setup: withGuild(activeGuild),
			write: func(t *testing.T, h *harness, c *client) *response {
				return c.post(rawURL, withRev(rawForm(strings.Replace(activeGuild, "Be kind.", "Be calm.", 1)), rev(h, guildT)))
			},
			before: []string{"Be kind."}, want: []string{"Be calm."}, gone: []string{"Be kind."}},
		{name: "module settings form", setup: func(t *testing.T, h *harness) {
			h.writeDocument(guildT, activeGuild)
			h.writeDocument(kudosT, "---\ndigest_channel_id: 777\n---\n")
		},
			write: func(t *testing.T, h *harness, c *client) *response {
				return c.post(kudosURL, withRev(moduleForm(kudos.FieldDigestChannel, "888"), rev(h, kudosT)))
			},
			before: []string{`value="777"`}, want: []string{`value="888"`}, gone: []string{`value="777"`}},
		{name: "revert", setup: twoRevisions,
			write: func(t *testing.T, h *harness, c *client) *response {
				return c.post(strings.Replace(revertURL, "{entry}", h.vars["entry"], 1),
					url.Values{form.GuildExpectedRevision: {rev(h, guildT)}})
			},
			before: []string{">222 (not visible to the bot)</option>"}, want: []string{">111 (not visible to the bot)</option>"}, gone: []string{">222 (not visible to the bot)</option>"}},
		{name: "add the guild",
			write: func(t *testing.T, h *harness, c *client) *response {
				return c.post("/guilds", url.Values{form.GuildID: {"42"}})
			},
			before: []string{"no server-setup document"}, want: []string{"bot_active: false"}, gone: []string{"no server-setup document"}},
		{name: "proposal approved", setup: proposeDigest, write: approve,
			want: []string{`value="` + proposed + `"`},
			check: func(t *testing.T, h *harness) {
				if p := proposalState(t, h); p.State != "applied" {
					t.Fatalf("proposal = %+v", p)
				}
			}},
		{name: "proposal rolled back to its absent base",
			setup: func(t *testing.T, h *harness) { proposeDigest(t, h); breakGuild(t, h) },
			write: approve, gone: []string{`value="` + proposed + `"`},
			check: func(t *testing.T, h *harness) {
				if p := proposalState(t, h); !strings.Contains(p.LastError, proposals.MsgGuildBroken) {
					t.Fatalf("no rollback: proposal = %+v", p)
				}
				if h.document(kudosT).Exists {
					t.Fatal("the absent base was not restored")
				}
			}},
		{name: "proposal rolled back to its base",
			setup: func(t *testing.T, h *harness) {
				proposalGuild(t, h)
				h.writeDocument(kudosT, "---\ndigest_channel_id: 777\n---\n")
				proposeDigest(t, h)
				breakGuild(t, h)
			},
			write: approve, before: []string{`value="777"`}, want: []string{`value="777"`}, gone: []string{`value="` + proposed + `"`},
			check: func(t *testing.T, h *harness) {
				if p := proposalState(t, h); !strings.Contains(p.LastError, proposals.MsgGuildBroken) {
					t.Fatalf("no rollback: proposal = %+v", p)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.createAdmin()
			c := h.newClient()
			c.login(testUser, testPassword)
			if tc.setup != nil {
				tc.setup(t, h)
			}
			page := c.get("/guilds/42")
			if page.StatusCode != http.StatusOK {
				t.Fatalf("GET = %d", page.StatusCode)
			}
			for _, s := range tc.before {
				if !strings.Contains(page.body, s) {
					t.Fatalf("before the write the page lacks %q", s)
				}
			}
			for _, s := range tc.want {
				if !slices.Contains(tc.before, s) && strings.Contains(page.body, s) {
					t.Fatalf("before the write the page already has %q", s)
				}
			}
			if res := tc.write(t, h, c); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("write = %d: %.500s", res.StatusCode, res.body)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
			page = c.get("/guilds/42")
			for _, s := range tc.want {
				if !strings.Contains(page.body, s) {
					t.Errorf("after the write the page lacks %q", s)
				}
			}
			for _, s := range tc.gone {
				if strings.Contains(page.body, s) {
					t.Errorf("after the write the page still has %q", s)
				}
			}
		})
	}
}

// TestGuildPagesViewedAtOnceShowTheirOwnSettings views two guilds' pages
// at the same time, over and over (run with -race): the module forms are
// built once and shared, each view copies and fills them, so each page
// must show its own guild's module values and never the other's.
func TestGuildPagesViewedAtOnceShowTheirOwnSettings(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	guilds := []struct {
		path, own, other string
	}{
		{"/guilds/42", `value="777"`, `value="888"`},
		{"/guilds/43", `value="888"`, `value="777"`},
	}
	h.writeDocument(guildcfg.GuildModuleTarget(42, kudos.Name), "---\ndigest_channel_id: 777\n---\n")
	h.writeDocument(guildcfg.GuildModuleTarget(43, kudos.Name), "---\ndigest_channel_id: 888\n---\n")
	const views = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*views*len(guilds))
	for w := range 2 {
		c := h.newClient()
		c.login(testUser, testPassword)
		wg.Go(func() {
			for i := range views {
				g := guilds[(i+w)%len(guilds)]
				res, err := c.http.Get(h.ts.URL + g.path)
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				switch {
				case err != nil:
					errs <- err
				case res.StatusCode != http.StatusOK:
					errs <- fmt.Errorf("GET %s = %d", g.path, res.StatusCode)
				case !strings.Contains(string(body), g.own) || strings.Contains(string(body), g.other):
					errs <- fmt.Errorf("GET %s: want %s and not %s", g.path, g.own, g.other)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestGuildCardsKeptPerSession: the guild page's cards are rendered once
// and kept, with each session's own CSRF token spliced into every form and
// never another's; a write to a document, a channel added in Discord and a
// member's new nickname show at once (the kept card is of an older
// revision); a save's notice beside a card is that request's only.
func TestGuildCardsKeptPerSession(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	withPickerGuild(t, h)
	a, b := h.newClient(), h.newClient()
	a.login(testUser, testPassword)
	b.login(testUser, testPassword)
	tokens := func(c *client) []string {
		t.Helper()
		res := c.get("/guilds/42")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /guilds/42 = %d", res.StatusCode)
		}
		var out []string
		for _, m := range csrfRE.FindAllStringSubmatch(res.body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	first := tokens(a)
	if len(first) < 3 {
		t.Fatalf("%d forms on the guild page, want the setup, raw and module forms", len(first))
	}
	for round := range 3 {
		for _, c := range []*client{a, b, a} {
			got := tokens(c)
			if len(got) != len(first) {
				t.Fatalf("round %d: %d forms, then %d", round, len(first), len(got))
			}
			for _, tok := range got {
				if tok != got[0] {
					t.Fatalf("round %d: one page holds two CSRF tokens: %q", round, got)
				}
			}
			if c == b && got[0] == first[0] {
				t.Fatalf("round %d: the second session got the first's CSRF token", round)
			}
		}
	}
	if h.srv.guildCards.cards == nil || len(h.srv.guildCards.cards) < 3 {
		t.Fatalf("kept cards = %d, want every card of the page kept", len(h.srv.guildCards.cards))
	}
	// A write shows at once: the kept setup card is of the older revision.
	h.writeDocument(guildT, "---\nbot_active: true\nallowed_channel_ids: ["+h.vars["rules"]+"]\n---\n")
	if body := a.get("/guilds/42").body; !strings.Contains(body, `value="`+h.document(guildT).Revision+`"`) {
		t.Fatalf("the page after a write does not carry the new revision %s", h.document(guildT).Revision)
	}
	// A channel made in Discord is offered at once.
	ch := h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: "42", Name: "brand-new"})
	discordWait(t, "the bot knows #brand-new", func() bool { _, ok := h.bot.Channel(parseUint(ch.ID)); return ok })
	if body := b.get("/guilds/42").body; !strings.Contains(body, "brand-new") {
		t.Fatal("a channel created in Discord is not offered by the kept page")
	}
	// A save's notice is beside its card for that request only.
	res := a.post(rawURL, withRev(url.Values{form.GuildDocumentText: {"---\nbot_active: true\n---\n"}}, h.document(guildT).Revision))
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("save = %d %s", res.StatusCode, res.body)
	}
	if body := a.get(res.Header.Get("Location")).body; !strings.Contains(body, "Saved as a new revision") {
		t.Fatalf("no notice after the save:\n%.2000s", body)
	}
	if body := b.get("/guilds/42").body; strings.Contains(body, "Saved as a new revision") {
		t.Fatal("another session's page shows the first one's notice")
	}
}

// TestGuildCardOfAnEmptyDocumentIsNotTheAbsentOne: a module document written
// with the empty text has the revision of one never written; its kept card
// follows the write all the same (whether it exists is in the key).
func TestGuildCardOfAnEmptyDocumentIsNotTheAbsentOne(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	a := h.newClient()
	a.login(testUser, testPassword)
	const unwritten = "not written yet: the defaults apply"
	card := func() string {
		t.Helper()
		b := a.get("/guilds/42").body
		i := strings.Index(b, `id="module-allkinds"`)
		if i < 0 {
			t.Fatal("no allkinds card on the guild page")
		}
		return b[i : i+strings.Index(b[i:], "</section>")]
	}
	if !strings.Contains(card(), unwritten) {
		t.Fatal("the card of a document never written does not say so")
	}
	target := guildcfg.GuildModuleTarget(42, "allkinds")
	h.writeDocument(target, "")
	if !h.document(target).Exists {
		t.Fatal("the empty document was not written")
	}
	if strings.Contains(card(), unwritten) {
		t.Error("the kept card still says the written (empty) document is not written")
	}
}
