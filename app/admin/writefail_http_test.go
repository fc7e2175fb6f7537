package admin

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/internal/fulldisk"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
)

// savedAudit counts the audit rows other than fulldisk's filler: every
// write route records one, so an unchanged count means nothing was saved.
func (h *harness) savedAudit(t *testing.T) int {
	t.Helper()
	var n int
	if err := h.st.Reader().QueryRow(`SELECT count(*) FROM kimi_audit_log WHERE action != 'fulldisk.fill'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// writeRoutes are admin write routes of every shape: forms that re-render
// with what was typed (kept lists the values that must come back) and
// actions answered by the error page. url may name {task}, set by setup.
var writeRoutes = []struct {
	name  string
	url   string
	setup func(*testing.T, *harness)
	form  func() url.Values
	kept  []string
	// ok is the status of the same request once the write succeeds.
	ok int
}{
	{"guild document", "/guilds/42/document", nil, func() url.Values {
		return withRev(rawForm("---\nbot_active: true\n---\nKept line 7341.\n"), guildcfg.EmptyRevision)
	}, []string{"Kept line 7341."}, http.StatusSeeOther},
	{"guild setup", "/guilds/42/setup", nil, func() url.Values {
		return withRev(setupForm(form.GuildStaffRoleIDs, "7341777"), guildcfg.EmptyRevision)
	}, []string{"7341777"}, http.StatusSeeOther},
	{"guild module settings", "/guilds/42/modules/allkinds", nil, func() url.Values {
		return withRev(moduleForm("greeting", "Kept greeting 7341"), guildcfg.EmptyRevision)
	}, []string{"Kept greeting 7341"}, http.StatusSeeOther},
	{"task create", "/tasks", nil, func() url.Values {
		return taskForm(func(v url.Values) { v.Set(tasks.FieldContent, "Kept content 7341") })
	}, []string{"Kept content 7341"}, http.StatusSeeOther},
	{"task update", "/tasks/{task}/edit", seedTask(taskDef("Standup", "Standup time")), func() url.Values {
		return taskForm(func(v url.Values) { v.Set(tasks.FieldContent, "Kept edit 7341") })
	}, []string{"Kept edit 7341"}, http.StatusSeeOther},
	{"guild add", "/guilds", nil, func() url.Values { return url.Values{form.GuildID: {"7341"}} }, nil, http.StatusSeeOther},
	{"proposal notifications", "/settings/proposals", nil, func() url.Values {
		return url.Values{form.ProposalNotifyMode: {form.ProposalNotifyDM}}
	}, []string{`value="` + form.ProposalNotifyDM + `" selected`}, http.StatusSeeOther},
	{"assistant behaviour", "/assistant/behaviour", nil, func() url.Values {
		return behaviourForm(form.AssistantPersona, "Kept persona 7341")
	}, []string{"Kept persona 7341</textarea>"}, http.StatusSeeOther},
	{"revoke sessions", "/settings/sessions/revoke", nil, func() url.Values { return url.Values{"confirm": {"yes"}} }, nil, http.StatusSeeOther},
	{"assistant", "/assistant", nil, func() url.Values {
		return url.Values{form.AssistantBaseURL: {"https://llm.example.org/v7341"}, form.AssistantAPIKey: {llmTestKey},
			form.AssistantModel: {"kept-model-7341"}, form.AssistantMaxTokens: {"7341"}, form.AssistantTimeout: {"120"}}
	}, []string{`value="https://llm.example.org/v7341"`, "kept-model-7341", `value="7341"`}, http.StatusSeeOther},
	// Nothing listens on port 1: the retry's connection test fails at once
	// (the save still redirects).
	{"worldtree settings", "/settings/worldtree", nil, func() url.Values {
		return url.Values{form.WorldtreeBaseURL: {"http://127.0.0.1:1/kept7341"}, form.WorldtreeDefaultKey: {wtDefaultKey}}
	}, []string{`value="http://127.0.0.1:1/kept7341"`}, http.StatusSeeOther},
	{"discord cache", "/discord/cache", nil, func() url.Values {
		return url.Values{form.DiscordCacheMessages: {"7341"}, form.DiscordCacheMembers: {"7342"}}
	}, []string{`value="7341"`, `value="7342"`}, http.StatusSeeOther},
	{"proposal reject", "/proposals/{id}/reject", proposeKudos, func() url.Values {
		return url.Values{form.ProposalReason: {"Kept reason 7341"}}
	}, []string{"Kept reason 7341"}, http.StatusSeeOther},
}

// refusal is a way the database refuses writes for real: break starts it,
// mend ends it.
type refusal struct {
	name       string
	store      store.Options
	break_     func(*testing.T, *harness) (mend func())
	message    func(*harness) string // the answer's sentence, as HTML
	retryAfter string
	banner     string
	// notReady: /readyz is 503 with this text while it lasts ("": 200).
	notReady string
}

var refusals = []refusal{
	{
		name: "full disk",
		break_: func(t *testing.T, h *harness) func() {
			if err := fulldisk.Fill(context.Background(), h.st); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := fulldisk.Free(context.Background(), h.st); err != nil {
					t.Fatal(err)
				}
			}
		},
		message: func(h *harness) string {
			return fmt.Sprintf("Kimi&#39;s disk is full: nothing was saved. Free space in %s and try again.", h.st.DataDir())
		},
		banner:   "Kimi&#39;s disk is full: writes have failed since",
		notReady: "the disk is full",
	},
	{
		name:  "another program's lock",
		store: store.Options{WriteWait: 300 * time.Millisecond},
		break_: func(t *testing.T, h *harness) func() {
			// A second connection on kimi.db holding the write lock, as a
			// sqlite3 shell inside BEGIN IMMEDIATE does.
			other, err := sql.Open("sqlite", store.DSN(h.st.Path(), false))
			if err != nil {
				t.Fatal(err)
			}
			held, err := other.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := held.Exec(`UPDATE kimi_settings SET key = key WHERE 0`); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := held.Rollback(); err != nil {
					t.Fatal(err)
				}
				other.Close()
			}
		},
		message: func(*harness) string {
			return "The database is busy (another program holds a lock on kimi.db); nothing was saved."
		},
		retryAfter: lockRetryAfter,
		banner:     "The database is busy: another program has held a lock on kimi.db since",
	},
}

func TestWriteRoutesRefusedByTheDatabaseAnswer503SayWhyAndSaveNothing(t *testing.T) {
	for _, refused := range refusals {
		for _, route := range writeRoutes {
			t.Run(refused.name+"/"+route.name, func(t *testing.T) {
				h := newHarnessStore(t, refused.store)
				h.createAdmin()
				if route.setup != nil {
					route.setup(t, h)
				}
				path := h.expand(route.url)
				c := h.newClient()
				c.login(testUser, testPassword)
				mend := refused.break_(t, h)
				before := h.savedAudit(t)
				c.get("/")
				res := c.post(path, route.form())
				wantStatus(t, res, http.StatusServiceUnavailable)
				wantBody(t, res, refused.message(h))
				wantBody(t, res, route.kept...)
				if got := res.Header.Get("Retry-After"); got != refused.retryAfter {
					t.Errorf("Retry-After = %q, want %q", got, refused.retryAfter)
				}
				if strings.Contains(res.body, "Something went wrong") {
					t.Error("the refusal answered the generic error text")
				}
				if n := h.savedAudit(t); n != before {
					t.Errorf("audit rows %d → %d: something was saved", before, n)
				}
				// Every signed-in page says so while writes fail.
				page := c.get("/")
				wantStatus(t, page, http.StatusOK)
				wantBody(t, page, `data-testid="write-banner"`, refused.banner)
				ready := c.get("/readyz")
				if refused.notReady != "" {
					wantStatus(t, ready, http.StatusServiceUnavailable)
					wantBody(t, ready, refused.notReady)
				} else {
					wantStatus(t, ready, http.StatusOK)
				}

				mend()
				c.get("/") // a fresh CSRF token for the retry
				wantStatus(t, c.post(path, route.form()), route.ok)
				if n := h.savedAudit(t); n <= before {
					t.Errorf("audit rows %d → %d after the retry: nothing was saved", before, n)
				}
				if strings.Contains(c.get("/").body, `data-testid="write-banner"`) {
					t.Error("the banner stayed after a write succeeded")
				}
				wantStatus(t, c.get("/readyz"), http.StatusOK)
			})
		}
	}
}

func TestSignInOnFullDiskSaysTheSessionCouldNotBeSaved(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.get("/login")
	if err := fulldisk.Fill(context.Background(), h.st); err != nil {
		t.Fatal(err)
	}
	res := c.post("/login", url.Values{"username": {testUser}, "password": {testPassword}})
	wantStatus(t, res, http.StatusServiceUnavailable)
	wantBody(t, res, "Your username and password are right, but you could not be signed in: Kimi&#39;s disk is full",
		`value="`+testUser+`"`)
	if n := h.sessionCount(); n != 0 {
		t.Errorf("%d sessions saved on a full disk", n)
	}
	if err := fulldisk.Free(context.Background(), h.st); err != nil {
		t.Fatal(err)
	}
	c.login(testUser, testPassword)
}

func TestALockIsWarnedOncePerEpisode(t *testing.T) {
	lock := refusals[1]
	h := newHarnessStore(t, lock.store)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	route := writeRoutes[0]
	const warn = "another process holds a write lock on kimi.db"
	for episode := 1; episode <= 2; episode++ {
		mend := lock.break_(t, h)
		for range 2 {
			c.get("/")
			wantStatus(t, c.post(route.url, route.form()), http.StatusServiceUnavailable)
		}
		if n := strings.Count(h.logs.String(), warn); n != episode {
			t.Errorf("episode %d: %d lock warnings in all, want %d (one per episode, not per request)", episode, n, episode)
		}
		mend()
		c.get("/")
		wantStatus(t, c.post(route.url, withRev(route.form(), h.document(guildT).Revision)), http.StatusSeeOther)
	}
}

// TestSignOutRefusedByTheDatabaseStillSignsTheBrowserOut: the session row
// cannot be deleted on a full disk or under a lock, yet the browser is
// signed out (its cookie cleared) and told that the session ends on its own
// at its expiry; the log says the same.
func TestSignOutRefusedByTheDatabaseStillSignsTheBrowserOut(t *testing.T) {
	for _, refused := range refusals {
		t.Run(refused.name, func(t *testing.T) {
			h := newHarnessStore(t, refused.store)
			h.createAdmin()
			c := h.newClient()
			c.login(testUser, testPassword)
			c.get("/")
			mend := refused.break_(t, h)
			defer mend()
			res := c.post("/logout", nil)
			wantStatus(t, res, http.StatusSeeOther)
			if loc := res.Header.Get("Location"); loc != "/login" {
				t.Errorf("Location = %q, want /login", loc)
			}
			if v := c.cookie(sessionCookie); v != "" {
				t.Errorf("the session cookie stayed in the browser: %q", v)
			}
			wantBody(t, c.get("/login"), "You are signed out in this browser", "ends by itself when it expires")
			wantStatus(t, c.get("/"), http.StatusSeeOther)
			if n := h.sessionCount(); n != 1 {
				t.Errorf("%d sessions stored, want the one that could not be deleted", n)
			}
			wantBody(t, &response{body: h.logs.String()}, "sign-out could not delete the session; it expires on its own")
		})
	}
}
