package admin

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsLabelsAreBounded: the request method is client-chosen text, so
// it must not become a metric label as sent — each unknown method would add
// a counter and a histogram series, and an unauthenticated client could
// grow the server's memory without bound. Unknown methods count as "other".
func TestMetricsLabelsAreBounded(t *testing.T) {
	h := newHarness(t)
	c := h.newClient()
	for i := range 20 {
		req, err := http.NewRequest(fmt.Sprintf("FLOOD%d", i), h.ts.URL+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		c.do(req)
	}
	wantStatus(t, c.get("/healthz"), http.StatusOK)
	res := c.get("/metrics", "Authorization", "Bearer metrics-secret-token")
	wantStatus(t, res, http.StatusOK)
	if strings.Contains(res.body, "FLOOD") {
		t.Fatal("a client-chosen method became a metric label")
	}
	var other, get bool
	for _, line := range strings.Split(res.body, "\n") {
		if !strings.HasPrefix(line, "kimi_http_requests_total{") {
			continue
		}
		other = other || strings.Contains(line, `method="other"`) && strings.HasSuffix(line, " 20")
		get = get || strings.Contains(line, `method="GET"`) && strings.Contains(line, `route="/healthz"`)
	}
	if !other || !get {
		t.Fatalf("want the 20 unknown-method requests counted once as method=\"other\" and GET /healthz counted; metrics:\n%s",
			grepLines(res.body, "kimi_http_requests_total"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
