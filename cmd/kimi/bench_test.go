package main

// Budget benchmarks for `make bench` (see README "Budgets"): the size of the
// static binary, the time from exec to /readyz 200 on an empty data
// directory, and the resident memory of an idle server.

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func BenchmarkBinarySize(b *testing.B) {
	var size int64
	for b.Loop() {
		fi, err := os.Stat(kimiBin)
		if err != nil {
			b.Fatal(err)
		}
		size = fi.Size()
	}
	b.ReportMetric(float64(size), "binary-bytes")
	b.ReportMetric(float64(size)/1e6, "binary-MB")
}

// BenchmarkServeReady measures exec -> first /readyz 200 of `kimi serve` on
// an empty data directory (migrations, set-up token, listener included).
func BenchmarkServeReady(b *testing.B) {
	var samples []time.Duration
	for b.Loop() {
		b.StopTimer()
		dataDir := filepath.Join(b.TempDir(), "data")
		addr := freeAddr(b)
		b.StartTimer()
		start := time.Now()
		cmd := benchServer(b, dataDir, addr)
		waitReady(b, cmd, addr)
		samples = append(samples, time.Since(start))
		b.StopTimer()
		stopBench(b, cmd)
		b.StartTimer()
	}
	slices.Sort(samples)
	b.ReportMetric(ms(samples[len(samples)/2]), "ready-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), "ready-max-ms")
}

// BenchmarkIdleRSS measures the resident set of a server that has started on
// an empty data directory, rendered its sign-in page once and idled for a
// second (read from /proc/<pid>/status VmRSS).
func BenchmarkIdleRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("no /proc on this system")
	}
	var rss []float64
	for b.Loop() {
		dataDir := filepath.Join(b.TempDir(), "data")
		addr := freeAddr(b)
		cmd := benchServer(b, dataDir, addr)
		waitReady(b, cmd, addr)
		if resp, err := httpClient.Get("http://" + addr + "/login"); err == nil {
			resp.Body.Close()
		}
		time.Sleep(time.Second) // idle: let start-up garbage be collected
		kb, err := vmRSS(cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		rss = append(rss, float64(kb)/1024)
		stopBench(b, cmd)
	}
	b.ReportMetric(slices.Max(rss), "idle-RSS-MB")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// freeAddr returns a loopback address with a port that was just free.
func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func benchServer(b *testing.B, dataDir, addr string) *exec.Cmd {
	cmd := exec.Command(kimiBin, "serve")
	cmd.Env = append(testEnv(dataDir), "KIMI_ADDR="+addr, "KIMI_LOG_LEVEL=warn")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return cmd
}

// waitReady polls /readyz until it answers 200.
func waitReady(b *testing.B, cmd *exec.Cmd, addr string) {
	deadline := time.Now().Add(startTimeout)
	url := "http://" + addr + "/readyz"
	for time.Now().Before(deadline) {
		resp, err := httpClient.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	_ = cmd.Process.Kill()
	b.Fatalf("kimi serve on %s not ready after %s", addr, startTimeout)
}

func stopBench(b *testing.B, cmd *exec.Cmd) {
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("kimi serve exit: %v", err)
	}
}

// vmRSS reads the resident set size in kB of pid.
func vmRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
