package benchbase

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBudgetRulesNameRealMetrics: every rule of docs/budgets.tsv (what make
// bench-report checks) is well formed and names a benchmark function and a
// metric some benchmark in the module (or benchbase's Report) reports, so a renamed benchmark or
// metric cannot silently drop out of the budget table.
func TestBudgetRulesNameRealMetrics(t *testing.T) {
	root := moduleRoot(t)
	funcs := map[string]bool{}
	metrics := map[string]bool{}
	funcRE := regexp.MustCompile(`func (Benchmark\w+)\(b \*testing\.B\)`)
	metricRE := regexp.MustCompile(`ReportMetric\([^\n]*?, "([^"]+)"\)|"([a-zA-Z][a-zA-Z0-9/_-]*(?:/s|/op|-ms|-MB|ratio|members))"`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		// Benchmarks live in test files; benchbase's own Report names
		// the counted metrics.
		if !strings.HasSuffix(path, "_test.go") && filepath.Base(filepath.Dir(path)) != "benchbase" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcRE.FindAllStringSubmatch(string(src), -1) {
			funcs[m[1]] = true
		}
		for _, m := range metricRE.FindAllStringSubmatch(string(src), -1) {
			metrics[m[1]+m[2]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p99-ms", "ratio", "events/s"} {
		if !metrics[want] {
			t.Fatalf("the scan found no %q metric: it is broken", want)
		}
	}

	f, err := os.Open(filepath.Join(root, "docs", "budgets.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules := 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		rules++
		col := strings.Split(text, "\t")
		if len(col) != 7 {
			t.Errorf("line %d: %d columns, want 7: %q", line, len(col), text)
			continue
		}
		re, metric, bound := col[0], col[1], col[2]
		if _, err := regexp.Compile(re); err != nil {
			t.Errorf("line %d: benchmark pattern %q: %v", line, re, err)
		}
		name := strings.TrimPrefix(re, "^")
		name = strings.TrimRight(strings.SplitN(name, "/", 2)[0], "-")
		if !funcs[name] {
			t.Errorf("line %d: no benchmark function %s", line, name)
		}
		if !metrics[metric] {
			t.Errorf("line %d: no benchmark reports the metric %q", line, metric)
		}
		switch bound {
		case "max", "min", "info":
		default:
			t.Errorf("line %d: bound %q, want max, min or info", line, bound)
		}
		for _, num := range col[3:5] {
			if _, err := strconv.ParseFloat(num, 64); err != nil {
				t.Errorf("line %d: %q is not a number", line, num)
			}
		}
		if s, _ := strconv.ParseFloat(col[4], 64); s <= 0 {
			t.Errorf("line %d: scale %q must be positive", line, col[4])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rules < 20 {
		t.Fatalf("only %d rules read", rules)
	}
}

// moduleRoot is the directory holding go.mod, above the test's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
