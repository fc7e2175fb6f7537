package admin

import (
	"fmt"
	"github.com/kimiapp/kimi/app/internal/ratelog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/auth"
)

// overloadLineRE is one overload summary line of the text handler.
var overloadLineRE = regexp.MustCompile(`level=(\w+) msg="password checks at capacity: answered 503" answers=(\d+)`)

// TestOverloadAnswersAreSummarizedAtWarn checks that the 503s answered for a
// full password-check queue (auth.ErrBusy) are not logged at ERROR (before,
// each was logged twice: "request failed" and its access line) but summarized
// at WARN, at most one line per second of the server's clock, each line
// counting the answers since the previous one.
func TestOverloadAnswersAreSummarizedAtWarn(t *testing.T) {
	h := newHarness(t)
	h.srv.overload = ratelog.New(overloadEvery, h.clk.Now)
	h.srv.echo.GET("/test-busy", func(echo.Context) error {
		return fmt.Errorf("admin: sign in: %w", auth.ErrBusy)
	})
	steps := []struct {
		advance   time.Duration
		answers   int
		wantLines []string // the summary lines this step adds, as "LEVEL count"
	}{
		{0, 5, []string{"WARN 1"}},                      // the first answer is logged at once
		{500 * time.Millisecond, 3, nil},                // within the second: counted only
		{500 * time.Millisecond, 1, []string{"WARN 8"}}, // a second on: the 4+3 held back and this one
		{999 * time.Millisecond, 2, nil},
		{time.Hour, 1, []string{"WARN 3"}},
	}
	c := h.newClient()
	seen := 0
	for i, st := range steps {
		h.clk.Add(st.advance)
		for range st.answers {
			if r := c.get("/test-busy"); r.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("step %d: answered %d, want 503", i, r.StatusCode)
			}
		}
		var got []string
		for _, m := range overloadLineRE.FindAllStringSubmatch(h.logs.String(), -1)[seen:] {
			got = append(got, m[1]+" "+m[2])
		}
		seen += len(got)
		if strings.Join(got, ", ") != strings.Join(st.wantLines, ", ") {
			t.Errorf("step %d: summary lines %q, want %q", i, got, st.wantLines)
		}
	}
	if logs := h.logs.String(); strings.Contains(logs, "level=ERROR") {
		t.Errorf("an overload answer was logged at ERROR:\n%s", logs)
	}
}
