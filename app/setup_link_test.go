package app

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSetupLinkPrintedAtAnyLogLevel: the set-up link is the only way in on
// a first run, so it is printed even when the operator raised the log level
// to warn or error — and the printed link works.
func TestSetupLinkPrintedAtAnyLogLevel(t *testing.T) {
	linkRE := regexp.MustCompile(`(http://\S+/setup\?token=[A-Za-z0-9_-]+)`)
	for _, level := range []string{"warn", "error"} {
		t.Run(level, func(t *testing.T) {
			c, _, stderr := testCLI(map[string]string{
				"KIMI_DATA_DIR": t.TempDir(), "KIMI_ADDR": "127.0.0.1:0", "KIMI_LOG_LEVEL": level,
			}, "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			code := make(chan int, 1)
			go func() { code <- c.main(ctx, []string{"serve"}) }()

			var link string
			for i := 0; link == ""; i++ {
				if m := linkRE.FindStringSubmatch(stderr.String()); m != nil {
					link = m[1]
					break
				}
				select {
				case rc := <-code:
					t.Fatalf("serve exited with %d and printed no set-up link:\n%s", rc, stderr)
				default:
				}
				if i > 6000 { // a guard against hangs, not a speed assertion
					t.Fatalf("no set-up link at log level %s:\n%s", level, stderr)
				}
				time.Sleep(5 * time.Millisecond)
			}
			client := &http.Client{Transport: &http.Transport{Proxy: nil}}
			resp, err := client.Get(link)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Create the admin account") {
				t.Fatalf("GET printed link = %d, want the set-up form", resp.StatusCode)
			}
			if strings.Contains(stderr.String(), "level=INFO") {
				t.Errorf("info lines printed at log level %s:\n%s", level, stderr)
			}
			cancel()
			if rc := <-code; rc != ExitOK {
				t.Fatalf("exit code %d, want 0:\n%s", rc, stderr)
			}
		})
	}
}

// TestNoCommandMeansServe: plain `kimi`, or flags alone, runs `kimi serve`.
func TestNoCommandMeansServe(t *testing.T) {
	readyRE := regexp.MustCompile(`msg=ready component=kimi addr=\S+ url=(\S+)`)
	for _, args := range [][]string{nil, {"--addr", "127.0.0.1:0"}} {
		t.Run(strings.Join(append([]string{"kimi"}, args...), " "), func(t *testing.T) {
			c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": t.TempDir(), "KIMI_ADDR": "127.0.0.1:0"}, "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			code := make(chan int, 1)
			go func() { code <- c.main(ctx, args) }()
			var url string
			for i := 0; url == ""; i++ {
				if m := readyRE.FindStringSubmatch(stderr.String()); m != nil {
					url = m[1]
					break
				}
				select {
				case rc := <-code:
					t.Fatalf("kimi %v exited with %d without serving:\n%s", args, rc, stderr)
				default:
				}
				if i > 6000 { // a guard against hangs, not a speed assertion
					t.Fatalf("kimi %v never became ready:\n%s", args, stderr)
				}
				time.Sleep(5 * time.Millisecond)
			}
			client := &http.Client{Transport: &http.Transport{Proxy: nil}}
			resp, err := client.Get(url + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/readyz = %d", resp.StatusCode)
			}
			cancel()
			if rc := <-code; rc != ExitOK {
				t.Fatalf("exit code %d, want 0:\n%s", rc, stderr)
			}
		})
	}
}
