package kimi_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The guards of the house's shape (docs/architecture.md): each fails with
// the files that broke the rule, so the next feature copies the rule, not
// a file.

// goFiles returns the Go files under root (slash paths) that keep passes.
func goFiles(t *testing.T, root string, keep func(path string) bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" && root != "cmd") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && keep(filepath.ToSlash(path)) {
			out = append(out, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no Go files under %s: the guard checks nothing", root)
	}
	return out
}

func isTest(path string) bool      { return strings.HasSuffix(path, "_test.go") }
func isGenerated(path string) bool { return strings.HasSuffix(path, "_templ.go") }

// imports returns the import paths of a Go file.
func imports(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		out = append(out, p)
	}
	return out
}

const (
	discordgoPath = "github.com/bwmarrin/discordgo"
	fakePath      = "github.com/kimiapp/kimi/app/discord/fakediscord"
	echoPath      = "github.com/labstack/echo/v4"
)

// sqlCall is a call that runs SQL (on a *sql.DB, *sql.Tx or *sql.Conn).
var sqlCall = regexp.MustCompile(`\.(Exec|Query|QueryRow|Prepare)(Context)?\(`)

// TestCompositionRootOnlyCallsConstructors: the non-test files at app's
// root import neither discordgo nor database/sql and run no SQL; a
// feature's Discord side lives in app/discord, its SQL in the feature.
func TestCompositionRootOnlyCallsConstructors(t *testing.T) {
	files := goFiles(t, "app", func(p string) bool { return !isTest(p) && strings.Count(p, "/") == 1 })
	for _, p := range files {
		for _, imp := range imports(t, p) {
			if imp == discordgoPath || imp == "database/sql" {
				t.Errorf("%s imports %s: the composition root only calls constructors (docs/architecture.md)", p, imp)
			}
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := sqlCall.Find(src); m != nil {
			t.Errorf("%s runs SQL (%s): a feature's SQL lives in the feature", p, m)
		}
	}
}

// TestAdminImportsNoDiscordClientNorFake: the admin (outside its tests)
// talks to Discord and to demo mode through its own interfaces.
func TestAdminImportsNoDiscordClientNorFake(t *testing.T) {
	for _, p := range goFiles(t, "app/admin", func(p string) bool { return !isTest(p) }) {
		for _, imp := range imports(t, p) {
			if imp == discordgoPath || imp == fakePath {
				t.Errorf("%s imports %s: the admin talks to an interface (app/demo, app/discord adapters)", p, imp)
			}
		}
	}
}

// TestOnlyTheAdminImportsEcho: echo stays inside the web layer.
func TestOnlyTheAdminImportsEcho(t *testing.T) {
	for _, root := range []string{"app", "cmd", "modules"} {
		for _, p := range goFiles(t, root, func(p string) bool { return !isTest(p) && !strings.HasPrefix(p, "app/admin/") }) {
			if slices.Contains(imports(t, p), echoPath) {
				t.Errorf("%s imports echo: only app/admin does", p)
			}
		}
	}
}

// featureTypePrefixes are the features whose adapters live in app/discord;
// a type there named after one is a mirror of the feature's own type.
var featureTypePrefixes = []string{"Task", "Proposal", "Result", "Assistant", "Conversation", "Demo"}

// TestDiscordDeclaresNoFeatureTypes: app/discord's adapters take and
// return the features' own types, so it declares none named after a
// feature (TaskMessage, ProposalCard, …).
func TestDiscordDeclaresNoFeatureTypes(t *testing.T) {
	fset := token.NewFileSet()
	for _, p := range goFiles(t, "app/discord", func(p string) bool { return !isTest(p) && !strings.Contains(p, "/fakediscord/") }) {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				name := s.(*ast.TypeSpec).Name.Name
				for _, pre := range featureTypePrefixes {
					if strings.HasPrefix(name, pre) {
						t.Errorf("%s declares type %s: an adapter takes the feature's own types (app/%s)", p, name, strings.ToLower(pre)+"s")
					}
				}
			}
		}
	}
}

// maxLines is the longest a non-generated Go file may be.
const maxLines = 800

// TestNoFileIsAWarehouse: no non-generated Go file, tests included,
// passes 800 lines; split it by responsibility.
func TestNoFileIsAWarehouse(t *testing.T) {
	for _, root := range []string{"app", "cmd", "modules", "web"} {
		for _, p := range goFiles(t, root, func(p string) bool { return !isGenerated(p) }) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for sc := bufio.NewScanner(bytes.NewReader(src)); sc.Scan(); {
				n++
			}
			if n > maxLines {
				t.Errorf("%s has %d lines, more than %d: split it by responsibility", p, n, maxLines)
			}
		}
	}
}

// reviewRound is a test file named for the review that found its bug.
var reviewRound = regexp.MustCompile(`audit[0-9]|audit_findings`)

// TestTestFilesAreNamedForWhatTheyTest: no test file is named after a
// review round (audit13_…, audit_findings_…).
func TestTestFilesAreNamedForWhatTheyTest(t *testing.T) {
	for _, root := range []string{"app", "cmd", "modules", "web"} {
		for _, p := range goFiles(t, root, isTest) {
			if reviewRound.MatchString(filepath.Base(p)) {
				t.Errorf("%s is named for a review round: name it for what it tests", p)
			}
		}
	}
}

// TestGuardPatterns: the guards' own patterns catch what they must.
func TestGuardPatterns(t *testing.T) {
	for _, tt := range []struct {
		re   *regexp.Regexp
		text string
		want bool
	}{
		{sqlCall, `db.QueryRowContext(ctx, "SELECT 1")`, true},
		{sqlCall, `tx.ExecContext(ctx, q)`, true},
		{sqlCall, `st.Reader().Query("x")`, true},
		{sqlCall, `props.ReportUncarded(ctx)`, false},
		{reviewRound, "audit13b_serve_test.go", true},
		{reviewRound, "audit_findings_test.go", true},
		{reviewRound, "audit_view_test.go", false},
	} {
		if got := tt.re.MatchString(tt.text); got != tt.want {
			t.Errorf("%s matches %q = %v, want %v", tt.re, tt.text, got, tt.want)
		}
	}
}
