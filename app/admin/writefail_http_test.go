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
// actions answered by the error page.
var writeRoutes = []struct {
	name string
	url  string
	form func() url.Values
	kept []string
	// ok is the status of the same request once the write succeeds.
	ok int
}{
	{"guild document", "/guilds/42/document", func() url.Values {
		return withRev(rawForm("---\nbot_active: true\n---\nKept line 7341.\n"), guildcfg.EmptyRevision)
	}, []string{"Kept line 7341."}, http.StatusSeeOther},
	{"guild setup", "/guilds/42/setup", func() url.Values {
		return withRev(setupForm(form.GuildStaffRoleIDs, "7341777"), guildcfg.EmptyRevision)
	}, []string{"7341777"}, http.StatusSeeOther},
	{"task create", "/tasks", func() url.Values {
		return taskForm(func(v url.Values) { v.Set(tasks.FieldContent, "Kept content 7341") })
	}, []string{"Kept content 7341"}, http.StatusSeeOther},
	{"guild module settings", "/guilds/42/modules/allkinds", func() url.Values {
		return withRev(moduleForm("greeting", "Kept greeting 7341"), guildcfg.EmptyRevision)
	}, []string{"Kept greeting 7341"}, http.StatusSeeOther},
	{"guild add", "/guilds", func() url.Values { return url.Values{form.GuildID: {"7341"}} }, nil, http.StatusSeeOther},
	{"proposal notifications", "/settings/proposals", func() url.Values {
		return url.Values{form.ProposalNotifyMode: {form.ProposalNotifyDM}}
	}, []string{`value="` + form.ProposalNotifyDM + `" selected`}, http.StatusSeeOther},
	{"revoke sessions", "/settings/sessions/revoke", func() url.Values { return url.Values{"confirm": {"yes"}} }, nil, http.StatusSeeOther},
}

func TestWriteRoutesOnFullDiskAnswer503SayWhereAndSaveNothing(t *testing.T) {
	for _, route := range writeRoutes {
		t.Run(route.name, func(t *testing.T) {
			h := newHarness(t)
			h.createAdmin()
			c := h.newClient()
			c.login(testUser, testPassword)
			ctx := context.Background()
			if err := fulldisk.Fill(ctx, h.st); err != nil {
				t.Fatal(err)
			}
			before := h.savedAudit(t)
			res := c.post(route.url, route.form())
			wantStatus(t, res, http.StatusServiceUnavailable)
			want := fmt.Sprintf("Kimi&#39;s disk is full: nothing was saved. Free space in %s and try again.", h.st.DataDir())
			wantBody(t, res, want)
			wantBody(t, res, route.kept...)
			if strings.Contains(res.body, "Something went wrong") {
				t.Error("a full disk answered the generic error text")
			}
			if n := h.savedAudit(t); n != before {
				t.Errorf("audit rows %d → %d: something was saved on a full disk", before, n)
			}
			// Every page says so while writes fail, and readiness drops.
			page := c.get("/")
			wantStatus(t, page, http.StatusOK)
			wantBody(t, page, `data-testid="write-banner"`, "Kimi&#39;s disk is full: writes have failed since", " free in "+h.st.DataDir())
			ready := c.get("/readyz")
			wantStatus(t, ready, http.StatusServiceUnavailable)
			wantBody(t, ready, "the disk is full")

			if err := fulldisk.Free(ctx, h.st); err != nil {
				t.Fatal(err)
			}
			c.get("/") // a fresh CSRF token for the retry
			wantStatus(t, c.post(route.url, route.form()), route.ok)
			if strings.Contains(c.get("/").body, `data-testid="write-banner"`) {
				t.Error("the banner stayed after a write succeeded")
			}
			wantStatus(t, c.get("/readyz"), http.StatusOK)
		})
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

func TestWriteUnderAnotherProgramsLockAnswers503RetryAfterAndKeepsTheForm(t *testing.T) {
	h := newHarnessStore(t, store.Options{WriteWait: 300 * time.Millisecond})
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	// The other program: a second connection on kimi.db holding the write
	// lock, as a sqlite3 shell inside BEGIN IMMEDIATE does.
	other, err := sql.Open("sqlite", store.DSN(h.st.Path(), false))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(`UPDATE kimi_settings SET key = key WHERE 0`); err != nil {
		t.Fatal(err)
	}
	route := writeRoutes[0]
	for range 2 {
		c.get("/")
		res := c.post(route.url, route.form())
		wantStatus(t, res, http.StatusServiceUnavailable)
		if got := res.Header.Get("Retry-After"); got != lockRetryAfter {
			t.Errorf("Retry-After = %q, want %q", got, lockRetryAfter)
		}
		wantBody(t, res, "The database is busy (another program holds a lock on kimi.db); nothing was saved.")
		wantBody(t, res, route.kept...)
	}
	if d := h.document(guildT); d.Exists {
		t.Errorf("the document was saved under another program's lock: %q", d.Text)
	}
	if n := strings.Count(h.logs.String(), "another process holds a write lock on kimi.db"); n != 1 {
		t.Errorf("%d lock warnings for one episode, want 1", n)
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	c.get("/")
	wantStatus(t, c.post(route.url, route.form()), http.StatusSeeOther)
	if d := h.document(guildT); !strings.Contains(d.Text, "Kept line 7341.") {
		t.Errorf("after the lock was released the document is %q", d.Text)
	}
}
