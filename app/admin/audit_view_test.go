package admin

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/store"
)

func TestRelativeTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 12, 3, 0, time.UTC)
	tests := []struct {
		name string
		at   time.Time
		want string
	}{
		{"same instant", now, "just now"},
		{"seconds ago", now.Add(-59 * time.Second), "just now"},
		{"small clock skew", now.Add(30 * time.Second), "just now"},
		{"one minute", now.Add(-time.Minute), "1 minute ago"},
		{"minutes round down", now.Add(-3*time.Minute - 59*time.Second), "3 minutes ago"},
		{"59 minutes", now.Add(-59 * time.Minute), "59 minutes ago"},
		{"one hour", now.Add(-time.Hour), "1 hour ago"},
		{"23 hours", now.Add(-23*time.Hour - 59*time.Minute), "23 hours ago"},
		{"a day", now.Add(-24 * time.Hour), "yesterday"},
		{"47 hours", now.Add(-47 * time.Hour), "yesterday"},
		{"two days", now.Add(-48 * time.Hour), "2 days ago"},
		{"six days", now.Add(-6*24*time.Hour - 23*time.Hour), "6 days ago"},
		{"a week: the date", now.Add(-7 * 24 * time.Hour), "Nov 24"},
		{"earlier this year", time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC), "Jan 2"},
		{"another year", time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC), "Dec 31, 2025"},
		{"future: the date", now.Add(2 * time.Hour), "Dec 1"},
		{"other zone, same instant", now.Add(-2 * time.Minute).In(time.FixedZone("X", 5*3600)), "2 minutes ago"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := relativeTime(tt.at, now); got != tt.want {
				t.Errorf("relativeTime(%s) = %q, want %q", tt.at, got, tt.want)
			}
		})
	}
	if got, want := exactTime(now.In(time.FixedZone("X", 5*3600))), "2026-12-01 09:12:03 UTC"; got != want {
		t.Errorf("exactTime = %q, want %q", got, want)
	}
}

func TestAuditActionLabel(t *testing.T) {
	tests := []struct{ id, label string }{
		{auth.ActionLogin, "Signed in"},
		{auth.ActionLoginFailed, "Failed sign-in"},
		{auth.ActionLogout, "Signed out"},
		{auth.ActionSetup, "Completed set-up"},
		{ActionBackupDownload, "Downloaded a backup"},
		{"module.frobnicate", "module.frobnicate"}, // unknown: the raw id
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			a := auditAction(tt.id)
			if a.ID != tt.id || a.Label != tt.label {
				t.Errorf("auditAction(%q) = %+v, want label %q", tt.id, a, tt.label)
			}
		})
	}
}

// TestAuditActionsHaveLabels finds every action the code base can write to
// the audit log — string constants named Action… or AuditAction…, and every
// Action: field of an AuditEntry literal — by parsing the non-test sources
// of the module, and fails on any without a label.
func TestAuditActionsHaveLabels(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	// Names are scoped to their package directory ("app/host.action"): a
	// local constant of one package must not resolve another's variable.
	// A selector (store.ActionRestore) is looked up by its name alone.
	consts := map[string]string{} // dir + "." + constant name -> value
	byName := map[string]string{} // exported constant name -> value
	var written []string          // action expressions of AuditEntry literals, resolved below
	var unresolved []string       // dir + "." + name, or "sel:" + name for a selector
	// fromActions are local variables assigned only Action… constants
	// (guildcfg picks its save or revert action into one): their values
	// are those constants, which the const scan already counts.
	fromActions := map[string]bool{}
	// fieldActions are struct fields (dir + "." + field) that every keyed
	// literal sets to an Action… constant (app/proposals carries its
	// decision's action in one); a selector of that field is those
	// constants, which the const scan already counts.
	fieldActions := map[string]bool{}
	nameRE := regexp.MustCompile(`^(Audit)?Action[A-Z]\w*$`)
	var files []*ast.File
	dirOf := map[*ast.File]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || (strings.HasPrefix(n, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, "_templ.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
		dirOf[f] = filepath.Dir(p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		dir := dirOf[f]
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				if n.Tok != token.CONST {
					return true
				}
				for _, spec := range n.Specs {
					vs := spec.(*ast.ValueSpec)
					if typ, ok := vs.Type.(*ast.Ident); vs.Type != nil && (!ok || typ.Name != "string") {
						continue // a typed constant such as sdk.DiscordAction is not an audit action
					}
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						v, _ := strconv.Unquote(lit.Value)
						consts[dir+"."+name.Name] = v
						if ast.IsExported(name.Name) {
							byName[name.Name] = v
						}
						if nameRE.MatchString(name.Name) {
							written = append(written, v)
						}
					}
				}
			case *ast.AssignStmt:
				if len(n.Lhs) != len(n.Rhs) {
					return true
				}
				for i, lhs := range n.Lhs {
					id, ok := lhs.(*ast.Ident)
					if !ok {
						continue
					}
					var rhs string
					switch r := n.Rhs[i].(type) {
					case *ast.Ident:
						rhs = r.Name
					case *ast.SelectorExpr:
						rhs = r.Sel.Name
					}
					key := dir + "." + id.Name
					if prev, seen := fromActions[key]; !seen || prev {
						fromActions[key] = nameRE.MatchString(rhs)
					}
				}
			case *ast.CompositeLit:
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					k, ok := kv.Key.(*ast.Ident)
					if !ok || ast.IsExported(k.Name) {
						continue
					}
					var val string
					switch v := kv.Value.(type) {
					case *ast.Ident:
						val = v.Name
					case *ast.SelectorExpr:
						val = v.Sel.Name
					}
					key := dir + "." + k.Name
					if prev, seen := fieldActions[key]; !seen || prev {
						fieldActions[key] = nameRE.MatchString(val)
					}
				}
				if !isAuditEntry(n.Type) {
					return true
				}
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "Action" {
						continue
					}
					switch v := kv.Value.(type) {
					case *ast.BasicLit:
						s, _ := strconv.Unquote(v.Value)
						written = append(written, s)
					case *ast.Ident:
						unresolved = append(unresolved, dir+"."+v.Name)
					case *ast.SelectorExpr:
						if x, ok := v.X.(*ast.Ident); ok && !ast.IsExported(v.Sel.Name) {
							unresolved = append(unresolved, "field:"+dir+"."+v.Sel.Name+"|"+x.Name)
							break
						}
						unresolved = append(unresolved, "sel:"+v.Sel.Name)
					default:
						t.Errorf("%s: an AuditEntry's Action is neither a constant nor a literal; give it a constant and a label",
							fset.Position(kv.Pos()))
					}
				}
			}
			return true
		})
	}
	for _, name := range unresolved {
		if field, isField := strings.CutPrefix(name, "field:"); isField {
			field, _, _ = strings.Cut(field, "|")
			if !fieldActions[field] {
				t.Errorf("AuditEntry{Action: %s}: the field is not set only from Action… constants", field)
			}
			continue
		}
		v, ok := consts[name]
		if sel, isSel := strings.CutPrefix(name, "sel:"); isSel {
			v, ok = byName[sel]
		}
		if !ok && fromActions[name] {
			continue
		}
		if !ok {
			t.Errorf("AuditEntry{Action: %s}: no string constant of that name found", name)
			continue
		}
		written = append(written, v)
	}
	slices.Sort(written)
	written = slices.Compact(written)
	// The scan must see the actions of every package that writes them.
	for _, want := range []string{auth.ActionLogin, ActionBackupDownload, store.ActionRestore, "worldtree.settings"} {
		if !slices.Contains(written, want) {
			t.Fatalf("the source scan missed %q; found %v", want, written)
		}
	}
	for _, a := range written {
		if _, ok := auditActionLabel(a); !ok {
			t.Errorf("audit action %q has no label in auditActionLabel", a)
		}
	}
}

// isAuditEntry reports whether a composite literal's type is AuditEntry or
// store.AuditEntry.
func isAuditEntry(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "AuditEntry"
	case *ast.SelectorExpr:
		return e.Sel.Name == "AuditEntry"
	}
	return false
}

// TestAuditPageReadable renders the audit page over real rows: labels with
// the raw id in the tooltip, a failed sign-in shown as someone trying a
// username, the sign-in's user agent summarised with the raw string on hover,
// and relative times carrying the exact time.
func TestAuditPageReadable(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	ctx := context.Background()
	const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

	// A failed sign-in as "bob" and a real one with a browser's user agent.
	intruder := h.newClient()
	intruder.get("/login")
	res := intruder.post("/login", url.Values{"username": {"bob"}, "password": {"not the password"}})
	wantStatus(t, res, http.StatusUnauthorized)
	c := h.newClient()
	c.get("/login")
	res = c.post("/login", url.Values{"username": {testUser}, "password": {testPassword}}, "User-Agent", firefox)
	wantStatus(t, res, http.StatusSeeOther)

	now := time.Now()
	for _, e := range []store.AuditEntry{
		{At: now.Add(-3*time.Minute - 30*time.Second), Actor: "cli", Action: "module.frobnicate", Target: "minutes"},
		{At: now.Add(-30 * time.Hour), Actor: "cli", Action: store.ActionRestore, Target: "yesterday"},
		{At: time.Date(2020, 3, 4, 5, 6, 7, 0, time.UTC), Actor: "cli", Action: auth.ActionPasswordReset, Target: "long-ago"},
	} {
		if err := h.st.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}

	page := c.get("/audit")
	wantStatus(t, page, http.StatusOK)
	doc, err := html.Parse(strings.NewReader(page.body))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]auditRowHTML{} // by raw action id
	for _, tr := range findAll(doc, func(n *html.Node) bool { return attr(n, "data-testid") == "audit-row" }) {
		r := readAuditRow(t, tr)
		rows[r.actionID] = r
	}

	failed, ok := rows[auth.ActionLoginFailed]
	if !ok {
		t.Fatalf("no failed sign-in row in %v", rows)
	}
	if failed.actor != "Someone (tried “bob”)" {
		t.Errorf("failed sign-in actor = %q, want Someone (tried “bob”)", failed.actor)
	}
	if failed.label != "Failed sign-in" {
		t.Errorf("failed sign-in label = %q", failed.label)
	}

	login, ok := rows[auth.ActionLogin]
	if !ok {
		t.Fatalf("no sign-in row in %v", rows)
	}
	if login.label != "Signed in" || login.labelTitle != auth.ActionLogin {
		t.Errorf("sign-in label = %q title %q", login.label, login.labelTitle)
	}
	if login.actor != testUser {
		t.Errorf("sign-in actor = %q, want %q", login.actor, testUser)
	}
	if login.detail != "Firefox on Linux" || login.detailTitle != firefox {
		t.Errorf("sign-in detail = %q (title %q), want Firefox on Linux with the raw user agent on hover", login.detail, login.detailTitle)
	}
	if login.when != "just now" {
		t.Errorf("sign-in time = %q, want just now", login.when)
	}

	exactRE := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`)
	for _, tt := range []struct{ action, when, datetime string }{
		{"module.frobnicate", "3 minutes ago", ""},
		{store.ActionRestore, "yesterday", ""},
		{auth.ActionPasswordReset, "Mar 4, 2020", "2020-03-04T05:06:07Z"},
	} {
		r, ok := rows[tt.action]
		if !ok {
			t.Errorf("no %s row", tt.action)
			continue
		}
		if r.when != tt.when {
			t.Errorf("%s: time = %q, want %q", tt.action, r.when, tt.when)
		}
		if !exactRE.MatchString(r.whenTitle) {
			t.Errorf("%s: time tooltip = %q, want the exact UTC time", tt.action, r.whenTitle)
		}
		if _, err := time.Parse(time.RFC3339, r.datetime); err != nil {
			t.Errorf("%s: datetime = %q: %v", tt.action, r.datetime, err)
		}
		if tt.datetime != "" && (r.datetime != tt.datetime || r.whenTitle != "2020-03-04 05:06:07 UTC") {
			t.Errorf("%s: datetime %q title %q", tt.action, r.datetime, r.whenTitle)
		}
	}
	if r := rows["module.frobnicate"]; r.label != "module.frobnicate" {
		t.Errorf("unknown action label = %q, want the raw id", r.label)
	}
	if r := rows[store.ActionRestore]; r.label != "Restored a backup" {
		t.Errorf("restore label = %q", r.label)
	}

	// The filter offers labels and filters by id.
	wantBody(t, page, `<option value="auth.login">Signed in</option>`,
		`<option value="module.frobnicate">module.frobnicate</option>`)
	filtered := c.get("/audit?action=" + auth.ActionLoginFailed)
	wantStatus(t, filtered, http.StatusOK)
	wantBody(t, filtered, `<option value="auth.login_failed" selected>Failed sign-in</option>`)
	if n := strings.Count(filtered.body, `data-testid="audit-row"`); n != 1 {
		t.Errorf("filtered by %s: %d rows, want 1", auth.ActionLoginFailed, n)
	}
}

type auditRowHTML struct {
	when, whenTitle, datetime string
	actor                     string
	actionID, label           string
	labelTitle                string
	detail, detailTitle       string
}

func readAuditRow(t *testing.T, tr *html.Node) auditRowHTML {
	t.Helper()
	var r auditRowHTML
	if tm := findAll(tr, func(n *html.Node) bool { return n.Data == "time" }); len(tm) == 1 {
		r.when, r.whenTitle, r.datetime = textOf(tm[0]), attr(tm[0], "title"), attr(tm[0], "datetime")
	} else {
		t.Errorf("row has %d <time> elements", len(tm))
	}
	if a := findAll(tr, func(n *html.Node) bool { return attr(n, "data-testid") == "audit-actor" }); len(a) == 1 {
		if actor := findAll(a[0], func(n *html.Node) bool { return hasClass(n, "actor") }); len(actor) == 1 {
			r.actor = textOf(actor[0])
		}
	}
	if l := findAll(tr, func(n *html.Node) bool { return attr(n, "data-testid") == "audit-action-label" }); len(l) == 1 {
		r.actionID, r.label, r.labelTitle = attr(l[0], "data-action"), textOf(l[0]), attr(l[0], "title")
	} else {
		t.Errorf("row has %d action labels", len(l))
	}
	if d := findAll(tr, func(n *html.Node) bool { return attr(n, "data-testid") == "audit-detail" }); len(d) == 1 {
		r.detail, r.detailTitle = textOf(d[0]), attr(d[0], "title")
	}
	return r
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return slices.Contains(strings.Fields(attr(n, "class")), class)
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}
