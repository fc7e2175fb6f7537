package kimi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchReportMarksOverBudget runs `make bench-report` on a made-up
// benchmark output: every figure past its budget is marked OVER BUDGET and
// counted, figures within budget are not marked.
func TestBenchReportMarksOverBudget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("make is not installed, and CI needs it")
		}
		t.Skip("make is not installed")
	}
	out := filepath.Join(t.TempDir(), "bench.txt")
	bench := strings.Join([]string{
		"BenchmarkOverviewParallel-2   1000   5000 ns/op   6.0 p50-ms   25.50 p99-ms",
		"BenchmarkBinarySize-2         1      1 ns/op      15.80 binary-MB",
		"BenchmarkServeReady-2         10     1 ns/op      1200 ready-ms",
		"BenchmarkIdleRSS-2            1      1 ns/op      19.0 idle-RSS-MB",
		"BenchmarkSchedulerDurable/latency-2 100 1 ns/op      1.1 p50-ms    29.0 p99-ms",
		"BenchmarkGatewayIngest-2      9000   1 ns/op      70.0 allocs/event  9493 events/s  0.31 ratio  30471 unmarshals/s",
		"BenchmarkGatewayIngestZlib-2  900    1 ns/op      98.0 allocs/event  1206 events/s  0.04 ratio  30394 unmarshals/s",
		"BenchmarkMemberCacheHeap-2    60     1 ns/op      2274240 heap-bytes/10k-members",
	}, "\n")
	if err := os.WriteFile(out, []byte(bench+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command("make", "--no-print-directory", "-s", "bench-report", "BENCHOUT="+out).CombinedOutput()
	if err != nil {
		t.Fatalf("make bench-report: %v\n%s", err, got)
	}
	lines := map[string]string{}
	labels := []string{"/ p99", "static binary size", "ready on an empty data dir", "idle RSS",
		"scheduler due→start p99", "gateway ingest", "gateway / plain unmarshal", "member cache, 10k"}
	for _, l := range strings.Split(string(got), "\n") {
		for _, key := range labels {
			if strings.HasPrefix(strings.TrimSpace(l), key+" ") && strings.Contains(l, "Benchmark") {
				lines[key] = l
			}
		}
	}
	for key, over := range map[string]bool{
		"/ p99":                      true,  // 25.5 ms over the pages' 20
		"static binary size":         false, // 15.8 MB within 40
		"ready on an empty data dir": true,  // 1,200 ms over 1,000
		"idle RSS":                   false,
		"scheduler due→start p99":    false, // 29 ms: within the scheduler's 50 ms, over the pages' 20
		"gateway ingest":             true,  // 9493 events/s: under its 50,000 minimum (the Zlib variant has no row)
		"gateway / plain unmarshal":  true,  // 0.31 under 0.8
		"member cache, 10k":          false, // 2.27 MB within 4 MB
	} {
		l, ok := lines[key]
		if !ok {
			t.Errorf("no line for %s in:\n%s", key, got)
			continue
		}
		if marked := strings.Contains(l, "OVER BUDGET") || strings.Contains(l, "UNDER BUDGET"); marked != over {
			t.Errorf("%s: marked past its budget = %t, want %t: %q", key, marked, over, l)
		}
	}
	if !strings.Contains(string(got), "4 figure(s) past their budget") {
		t.Errorf("report does not count the four figures past their budgets:\n%s", got)
	}
	// A budgeted figure missing from the output is listed, never passed over.
	if !strings.Contains(string(got), "not in this output:") || !strings.Contains(string(got), "/guilds/{id} p99 (p99-ms of ^BenchmarkGuildPage)") {
		t.Errorf("report does not list the budgeted figures missing from the output:\n%s", got)
	}
	if n := strings.Count(string(got), "gateway ingest"); n != 1 {
		t.Errorf("%d gateway ingest rows, want 1 (BenchmarkGatewayIngestZlib is not budgeted):\n%s", n, got)
	}
}
