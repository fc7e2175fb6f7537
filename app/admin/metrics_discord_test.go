package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/discord"
)

// statusOnly is a bot whose Status reports a fixed drop count.
type statusOnly int64

func (s statusOnly) Status() discord.Status { return discord.Status{FramesDropped: int64(s)} }

var _ discordStatus = statusOnly(0)

// TestMetricsCountDroppedGatewayFrames: the bot's count of malformed
// gateway dispatches it dropped is on /metrics, and a server without a bot
// has no such series.
func TestMetricsCountDroppedGatewayFrames(t *testing.T) {
	h := newHarness(t)
	res := h.newClient().get("/metrics", "Authorization", "Bearer metrics-secret-token")
	wantStatus(t, res, http.StatusOK)
	if !strings.Contains(res.body, "\nkimi_discord_gateway_frames_dropped_total 0\n") {
		t.Errorf("the harness's bot has no dropped-frames counter on /metrics:\n%s", grepLines(res.body, "kimi_discord"))
	}
	cases := []struct {
		name string
		dc   discordStatus
		want string // "" no series
	}{
		{"no bot", nil, ""},
		{"three dropped", statusOnly(3), "kimi_discord_gateway_frames_dropped_total 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			newMetrics(h.st, tc.dc).handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			body := rec.Body.String()
			if tc.want == "" && strings.Contains(body, "kimi_discord_gateway_frames_dropped_total") ||
				tc.want != "" && !strings.Contains(body, "\n"+tc.want+"\n") {
				t.Errorf("metrics want %q:\n%s", tc.want, grepLines(body, "kimi_discord"))
			}
		})
	}
}
