package all

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMENamesTheBundledModules: the README's status line names the
// bundled modules as their specs do (the name the admin shows), and every
// bundled module has a description for the admin's module pages.
func TestREADMENamesTheBundledModules(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("bundled modules \\(([^)]*)\\)").FindSubmatch(b)
	if m == nil {
		t.Fatal("the README no longer lists the bundled modules")
	}
	var listed []string
	for _, n := range strings.Split(string(m[1]), ",") {
		listed = append(listed, strings.Trim(strings.TrimSpace(n), "`"))
	}
	var names []string
	for _, s := range Specs() {
		names = append(names, s.Name)
		if s.Description == "" {
			t.Errorf("module %s has no description", s.Name)
		}
	}
	slices.Sort(listed)
	slices.Sort(names)
	if !slices.Equal(listed, names) {
		t.Errorf("the README lists the bundled modules as %v; their specs name them %v", listed, names)
	}
}
