package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord"
)

// statusOnly is a bot whose Status reports a fixed drop count.
type statusOnly int64

func (s statusOnly) Status() discord.Status { return discord.Status{FramesDropped: int64(s)} }

var _ discordStatus = statusOnly(0)

// statusFixed is a bot whose Status is fixed.
type statusFixed discord.Status

func (s statusFixed) Status() discord.Status { return discord.Status(s) }

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
		{"session starts before gateway/bot", statusOnly(0), "kimi_discord_session_starts_remaining -1"},
		{"session starts left", statusFixed{SessionStartLimit: discord.SessionStartLimit{Total: 1000, Remaining: 57}}, "kimi_discord_session_starts_remaining 57"},
		{"session starts per window", statusFixed{SessionStartLimit: discord.SessionStartLimit{Total: 1000, Remaining: 57}}, "kimi_discord_session_starts_total 1000"},
		{"session starts reset", statusFixed{SessionStartLimit: discord.SessionStartLimit{Total: 1000, ResetAt: time.Unix(1900000000, 0)}},
			"kimi_discord_session_starts_reset_timestamp_seconds 1.9e+09"},
		{"identifies sent", statusFixed{Identifies: 12}, "kimi_discord_identifies_total 12"},
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
