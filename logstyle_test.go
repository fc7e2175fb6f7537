package kimi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// componentPrefix is a log message that names its component ("admin: …"):
// the component belongs to the named logger (component=admin), not the
// message.
var componentPrefix = regexp.MustCompile(`\A[a-z][a-z0-9_-]*: `)

// TestLogMessagesDoNotRepeatTheComponent parses every non-test Go file and
// fails on a slog call (Info, Warn, Error, Debug, their …Context forms, Log,
// LogAttrs) whose message starts with a component prefix.
func TestLogMessagesDoNotRepeatTheComponent(t *testing.T) {
	msgArg := map[string]int{
		"Info": 0, "Warn": 0, "Error": 0, "Debug": 0,
		"InfoContext": 1, "WarnContext": 1, "ErrorContext": 1, "DebugContext": 1,
		"Log": 2, "LogAttrs": 2,
	}
	fset := token.NewFileSet()
	checked := 0
	for _, root := range []string{"app", "cmd", "modules"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				i, ok := msgArg[sel.Sel.Name]
				if !ok || len(call.Args) <= i {
					return true
				}
				lit, ok := call.Args[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				msg, err := strconv.Unquote(lit.Value)
				if err == nil && componentPrefix.MatchString(msg) {
					t.Errorf("%s: log message %q repeats its component; the named logger carries it", fset.Position(lit.Pos()), msg)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files; is the test running from the repo root?", checked)
	}
}
