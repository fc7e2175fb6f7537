package templates

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cssRule is one style rule of app.css: the @media condition it sits in
// ("" at the top level), its selectors and its declarations.
type cssRule struct {
	media     string
	selectors []string
	decls     map[string]string
}

// parseCSS reads the rules of a stylesheet without nesting beyond @media,
// which is all app.css uses.
func parseCSS(t *testing.T, src string) []cssRule {
	t.Helper()
	src = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(src, "")
	var rules []cssRule
	var parse func(s, media string)
	parse = func(s, media string) {
		for {
			open := strings.IndexByte(s, '{')
			if open < 0 {
				if strings.TrimSpace(s) != "" {
					t.Fatalf("app.css: trailing text %q", strings.TrimSpace(s))
				}
				return
			}
			head := strings.TrimSpace(s[:open])
			depth, end := 0, -1
			for i := open; i < len(s); i++ {
				switch s[i] {
				case '{':
					depth++
				case '}':
					depth--
				}
				if depth == 0 {
					end = i
					break
				}
			}
			if end < 0 {
				t.Fatalf("app.css: unbalanced braces after %q", head)
			}
			body := s[open+1 : end]
			s = s[end+1:]
			if strings.HasPrefix(head, "@") {
				parse(body, strings.TrimSpace(media+" "+head))
				continue
			}
			r := cssRule{media: media, decls: map[string]string{}}
			for _, sel := range strings.Split(head, ",") {
				r.selectors = append(r.selectors, strings.Join(strings.Fields(sel), " "))
			}
			for _, d := range strings.Split(body, ";") {
				k, v, ok := strings.Cut(d, ":")
				if ok {
					r.decls[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
			rules = append(rules, r)
		}
	}
	parse(src, "")
	return rules
}

// cssThemes returns the custom properties of the light theme (:root) and of
// the dark one (:root overridden inside prefers-color-scheme: dark).
func cssThemes(t *testing.T, rules []cssRule) map[string]map[string]string {
	t.Helper()
	light, dark := map[string]string{}, map[string]string{}
	for _, r := range rules {
		if len(r.selectors) != 1 || r.selectors[0] != ":root" {
			continue
		}
		switch {
		case r.media == "":
			for k, v := range r.decls {
				if strings.HasPrefix(k, "--") {
					light[k] = v
				}
			}
		case strings.Contains(r.media, "prefers-color-scheme: dark"):
			for k, v := range r.decls {
				if strings.HasPrefix(k, "--") {
					dark[k] = v
				}
			}
		}
	}
	for k, v := range light {
		if _, ok := dark[k]; !ok {
			dark[k] = v
		}
	}
	return map[string]map[string]string{"light": light, "dark": dark}
}

// resolveColor turns "var(--x)" or a hex colour into sRGB in [0, 1].
func resolveColor(vars map[string]string, v string) ([3]float64, error) {
	for range 8 {
		m := regexp.MustCompile(`^var\((--[\w-]+)\)$`).FindStringSubmatch(strings.TrimSpace(v))
		if m == nil {
			break
		}
		next, ok := vars[m[1]]
		if !ok {
			return [3]float64{}, fmt.Errorf("undefined %s", m[1])
		}
		v = next
	}
	hex, ok := strings.CutPrefix(strings.TrimSpace(v), "#")
	if !ok || (len(hex) != 3 && len(hex) != 6) {
		return [3]float64{}, fmt.Errorf("%q is not a #rgb or #rrggbb colour", v)
	}
	if len(hex) == 3 {
		hex = string([]byte{hex[0], hex[0], hex[1], hex[1], hex[2], hex[2]})
	}
	var c [3]float64
	for i := range 3 {
		n, err := strconv.ParseUint(hex[2*i:2*i+2], 16, 8)
		if err != nil {
			return c, fmt.Errorf("%q: %w", v, err)
		}
		c[i] = float64(n) / 255
	}
	return c, nil
}

// luminance is WCAG 2's relative luminance of an sRGB colour.
func luminance(c [3]float64) float64 {
	lin := func(v float64) float64 {
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c[0]) + 0.7152*lin(c[1]) + 0.0722*lin(c[2])
}

// contrast is WCAG 2's contrast ratio of two colours, from 1 to 21.
func contrast(a, b [3]float64) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func TestContrastFormula(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want float64
	}{
		{"#000000", "#ffffff", 21},
		{"#fff", "#fff", 1},
		{"#767676", "#ffffff", 4.54}, // the well-known lightest grey passing AA on white
		{"#949494", "#ffffff", 3.03},
	} {
		a, _ := resolveColor(nil, tt.a)
		b, _ := resolveColor(nil, tt.b)
		if got := contrast(a, b); math.Abs(got-tt.want) > 0.01 {
			t.Errorf("contrast(%s, %s) = %.3f, want %.2f", tt.a, tt.b, got, tt.want)
		}
	}
}

func loadCSS(t *testing.T) []cssRule {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "static", "app.css"))
	if err != nil {
		t.Fatal(err)
	}
	return parseCSS(t, string(src))
}

// ruleDecl returns the value a top-level rule whose selector list holds sel
// gives to one of props (the last such rule wins, as in the cascade).
func ruleDecl(rules []cssRule, sel string, props ...string) string {
	var out string
	for _, r := range rules {
		if r.media != "" {
			continue
		}
		for _, s := range r.selectors {
			if s != sel {
				continue
			}
			for _, p := range props {
				if v, ok := r.decls[p]; ok {
					out = v
				}
			}
		}
	}
	return out
}

// borderColor picks the colour out of a border shorthand ("1px solid var(--x)").
func borderColor(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// TestControlBorderContrast: the boundary of every form control (input,
// select, textarea, checkbox) is at least 3:1 against the control's own
// background and the surfaces it sits on, in both themes (WCAG 2.1 SC
// 1.4.11), and so is the focus ring.
func TestControlBorderContrast(t *testing.T) {
	rules := loadCSS(t)
	themes := cssThemes(t, rules)
	for _, sel := range []string{".field input", ".field select", ".field textarea", ".check input"} {
		border := borderColor(ruleDecl(rules, sel, "border", "border-color"))
		bg := ruleDecl(rules, sel, "background", "background-color")
		if border == "" || bg == "" {
			t.Errorf("%s: no border colour (%q) or background (%q) in app.css", sel, border, bg)
			continue
		}
		for name, vars := range themes {
			for _, against := range []string{bg, "var(--surface)", "var(--bg)"} {
				checkContrast(t, vars, name, sel+" border", border, against, 3)
			}
			checkContrast(t, vars, name, sel+" focus ring", "var(--focus)", bg, 3)
		}
	}
}

// TestTextContrast: body, muted, link and status text is at least 4.5:1 on
// every background it is drawn on, in both themes (WCAG 2.1 SC 1.4.3).
func TestTextContrast(t *testing.T) {
	themes := cssThemes(t, loadCSS(t))
	pairs := []struct{ what, fg, bg string }{
		{"body text on the page", "--text", "--bg"},
		{"body text on a card", "--text", "--surface"},
		{"body text on a stat/code", "--text", "--surface-2"},
		{"muted text on the page", "--muted", "--bg"},
		{"muted text on a card", "--muted", "--surface"},
		{"muted text on a table header/stat", "--muted", "--surface-2"},
		{"link on the page", "--accent", "--bg"},
		{"link on a card", "--accent", "--surface"},
		{"active navigation entry", "--accent", "--accent-soft"},
		{"primary button", "--accent-text", "--accent"},
		{"primary button hovered", "--accent-text", "--accent-hover"},
		{"success alert/badge", "--success", "--success-soft"},
		{"success action on a card", "--success", "--surface"},
		{"warning alert/badge", "--warning", "--warning-soft"},
		{"error alert/badge", "--danger", "--danger-soft"},
		{"field error and danger button", "--danger", "--surface"},
		{"info alert", "--info", "--info-soft"},
	}
	for name, vars := range themes {
		for _, p := range pairs {
			checkContrast(t, vars, name, p.what, "var("+p.fg+")", "var("+p.bg+")", 4.5)
		}
	}
}

func checkContrast(t *testing.T, vars map[string]string, theme, what, fg, bg string, min float64) {
	t.Helper()
	a, err := resolveColor(vars, fg)
	if err != nil {
		t.Errorf("%s, %s: %v", theme, what, err)
		return
	}
	b, err := resolveColor(vars, bg)
	if err != nil {
		t.Errorf("%s, %s: %v", theme, what, err)
		return
	}
	if got := contrast(a, b); got < min {
		t.Errorf("%s theme, %s: %s on %s is %.2f:1, want at least %.1f:1", theme, what, fg, bg, got, min)
	} else {
		t.Logf("%s theme, %s: %.2f:1", theme, what, got)
	}
}
