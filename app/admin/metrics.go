package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/store"
)

// metrics is a private Prometheus registry (no global state): Go runtime and
// process collectors, HTTP counters and latency histograms by route pattern,
// database pool stats plus file size, and the Discord connection's counters.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler
}

// discordStatus is what the metrics read of the bot; *discord.Bot (and
// every DiscordConn) implements it.
type discordStatus interface {
	Status() discord.Status
}

var _ discordStatus = (*discord.Bot)(nil)

// newMetrics builds the registry; dc nil (no bot) leaves out the Discord
// counters.
func newMetrics(st *store.Store, dc discordStatus) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kimi_http_requests_total",
			Help: "HTTP requests served by the admin server, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kimi_http_request_duration_seconds",
			Help:    "Latency of admin HTTP requests, by route pattern, method and status.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method", "status"}),
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(st.Writer(), "writer"),
		collectors.NewDBStatsCollector(st.Reader(), "reader"),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kimi_db_size_bytes",
			Help: "Size of the SQLite database file plus its write-ahead log.",
		}, func() float64 {
			n, err := st.Size()
			if err != nil {
				return -1
			}
			return float64(n)
		}),
		m.requests, m.latency,
	)
	if dc != nil {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "kimi_discord_gateway_frames_dropped_total",
			Help: "Malformed gateway dispatches dropped before the Discord library handled them.",
		}, func() float64 { return float64(dc.Status().FramesDropped) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "kimi_discord_identifies_total",
				Help: "Gateway Identifies (session starts) sent since start.",
			}, func() float64 { return float64(dc.Status().Identifies) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "kimi_discord_session_starts_remaining",
				Help: "Session starts Discord allows before its window resets (gateway/bot, less the Identifies sent since the reading); -1 before the first reading.",
			}, func() float64 {
				return startLimitValue(dc, func(l discord.SessionStartLimit) float64 { return float64(l.Remaining) })
			}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "kimi_discord_session_starts_total",
				Help: "Session starts Discord allows per window (gateway/bot); -1 before the first reading.",
			}, func() float64 {
				return startLimitValue(dc, func(l discord.SessionStartLimit) float64 { return float64(l.Total) })
			}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "kimi_discord_session_starts_reset_timestamp_seconds",
				Help: "When Discord's session start window resets (Unix time); -1 before the first reading.",
			}, func() float64 {
				return startLimitValue(dc, func(l discord.SessionStartLimit) float64 { return float64(l.ResetAt.Unix()) })
			}))
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return m
}

// startLimitValue is f of the bot's session start limit, -1 before
// gateway/bot was read.
func startLimitValue(dc discordStatus, f func(discord.SessionStartLimit) float64) float64 {
	l := dc.Status().SessionStartLimit
	if l.Total == 0 {
		return -1
	}
	return f(l)
}

// moduleGoroutines exports each running module's goroutine count at the
// host's last count (kimi_module_goroutines{module="x"}).
type moduleGoroutines struct{ host ModuleHost }

var _ prometheus.Collector = moduleGoroutines{}

var moduleGoroutinesDesc = prometheus.NewDesc("kimi_module_goroutines",
	"Goroutines running under a module's runtime/pprof label at the host's last count.", []string{"module"}, nil)

// Describe implements prometheus.Collector.
func (moduleGoroutines) Describe(ch chan<- *prometheus.Desc) { ch <- moduleGoroutinesDesc }

// Collect implements prometheus.Collector.
func (c moduleGoroutines) Collect(ch chan<- prometheus.Metric) {
	for name, n := range c.host.Goroutines() {
		ch <- prometheus.MustNewConstMetric(moduleGoroutinesDesc, prometheus.GaugeValue, float64(n), name)
	}
}

// metricMethods are the methods counted under their own name; any other
// (client-chosen) method is "other", so labels stay bounded.
var metricMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
	http.MethodConnect: true, http.MethodTrace: true,
}

func (m *metrics) observe(route, method string, status int, d time.Duration) {
	if !metricMethods[method] {
		method = "other"
	}
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, method, code).Inc()
	m.latency.WithLabelValues(route, method, code).Observe(d.Seconds())
}

// metricsHandler serves /metrics to an admin session or a scraper presenting
// the configured bearer token (compared in constant time on hashes, so the
// token's length does not leak either).
func (s *Server) metricsHandler(c echo.Context) error {
	if sessionOf(c) == nil && !s.metricsTokenOK(c.Request().Header.Get(echo.HeaderAuthorization)) {
		return echo.NewHTTPError(http.StatusUnauthorized,
			"Metrics need an admin session or the metrics bearer token.")
	}
	s.metrics.handler.ServeHTTP(c.Response(), c.Request())
	return nil
}

func (s *Server) metricsTokenOK(header string) bool {
	if s.opts.MetricsToken == "" {
		return false
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	want := sha256.Sum256([]byte(s.opts.MetricsToken))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// discordMetrics is dc for newMetrics: nil when no bot is configured (a nil
// DiscordConn must not become a non-nil interface holding nil).
func discordMetrics(dc DiscordConn) discordStatus {
	if dc == nil {
		return nil
	}
	return dc
}
