package admin

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/modstore"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/web/templates"
)

// ModuleHost is what the /modules pages need of the module host: the read
// model, the three audited actions and a signal when something changed.
type ModuleHost interface {
	Modules() []host.ModuleStatus
	Module(name string) (host.ModuleStatus, bool)
	Selection() host.Selection
	SetEnabled(ctx context.Context, name string, enabled bool, actor string) error
	Restart(ctx context.Context, name, actor string) error
	SaveSettings(ctx context.Context, module string, values map[string]string, actor string) error
	Watch(ctx context.Context) <-chan struct{}
	ModuleTables(ctx context.Context, name string) ([]modstore.TableInfo, error)
	// Goroutines are each running module's goroutines at the last count
	// (/metrics: kimi_module_goroutines).
	Goroutines() map[string]int
}

var _ ModuleHost = (*host.Host)(nil)

// moduleActionTimeout bounds an action that restarts modules: each start
// and close is bounded by the host, this only stops a request waiting for
// ever.
const moduleActionTimeout = 5 * time.Minute

// requireModules answers 503 on the module pages of a server without the
// module host.
func (s *Server) requireModules(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.opts.Host == nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "The module host is not available on this server.")
		}
		return next(c)
	}
}

// moduleParam is the {name} of a module address: an unknown module is a 404.
func (s *Server) moduleParam(c echo.Context) (host.ModuleStatus, error) {
	st, ok := s.opts.Host.Module(c.Param("name"))
	if !ok {
		return st, echo.ErrNotFound
	}
	return st, nil
}

// actor is the signed-in admin's name for the host's audit rows.
func actor(c echo.Context) string {
	if sess := sessionOf(c); sess != nil {
		return sess.Username
	}
	return ""
}

func modulePath(name string) string { return "/modules/" + name }

// moduleState is the state the pages show: the lifecycle state, refined by
// the visible health of a running module; the reason goes with it.
func moduleState(m host.ModuleStatus) (state, reason string) {
	switch m.State {
	case host.StateNotSelected:
		return templates.ModuleNotSelected, ""
	case host.StateDisabled:
		return templates.ModuleDisabled, m.Reason
	case host.StateFailed:
		return templates.ModuleFailed, m.Reason
	case host.StateStopped:
		return templates.ModuleStopped, m.Reason
	case host.StateStarting:
		return templates.ModuleStarting, startingReason(m, time.Now())
	}
	switch m.Health.State {
	case sdk.HealthFailed:
		return templates.ModuleFailed, m.Health.Detail
	case sdk.HealthDegraded:
		return templates.ModuleDegraded, m.Health.Detail
	case sdk.HealthStarting:
		return templates.ModuleStarting, m.Health.Detail
	}
	return templates.ModuleRunning, ""
}

// stateOrder ranks states worst first, for the overview.
var stateOrder = []string{templates.ModuleFailed, templates.ModuleDegraded, templates.ModuleDisabled,
	templates.ModuleStarting, templates.ModuleStopped, templates.ModuleRunning, templates.ModuleNotSelected}

func stateRank(state string) int { return slices.Index(stateOrder, state) }

// startingReason says how long a starting module has been starting, and
// what it waits for: "waiting for Discord to be ready; starting for 12s
// (since 14:03:07 UTC)".
func startingReason(m host.ModuleStatus, now time.Time) string {
	if m.Since.IsZero() {
		return m.Reason
	}
	r := "starting for " + humanDuration(now.Sub(m.Since)) + " (since " + m.Since.UTC().Format("15:04:05") + " UTC)"
	if m.Reason != "" {
		r = m.Reason + "; " + r
	}
	return r
}

// keyMetrics are the metrics the list shows, in this order, when present.
var keyMetrics = []string{"events_handled", "events_failed", "events_dropped", "events_pending"}

func moduleRow(m host.ModuleStatus, fromEnv bool) templates.ModuleRow {
	state, reason := moduleState(m)
	r := templates.ModuleRow{
		Name: m.Name, Version: m.Version, Description: m.Description, Enabled: m.Enabled, State: state,
		Reason: reason, FromEnv: fromEnv,
	}
	if len(m.FieldErrors) > 0 && r.Reason == "" {
		r.Reason = "invalid settings"
	}
	r.Running = m.State == host.StateRunning
	if !r.Running && m.State != host.StateStarting {
		// A module that is not running has no live figures: what it last
		// reported would read as current.
		return r
	}
	if m.HasGoroutines {
		r.Goroutines = strconv.Itoa(m.Goroutines)
	}
	r.RunningLong = m.RunningLong
	if m.HasHealth {
		if m.Health.Detail != r.Reason {
			r.Detail = m.Health.Detail
		}
		r.Age = humanDuration(m.HealthAge) + " ago"
	}
	// The module's own metrics first (sorted), then the bus counters.
	own := slices.Sorted(maps.Keys(m.Metrics))
	own = slices.DeleteFunc(own, func(k string) bool { return strings.HasPrefix(k, "events_") })
	if len(own) > 4 {
		own = own[:4]
	}
	for _, k := range append(own, keyMetrics...) {
		if v, ok := m.Metrics[k]; ok {
			r.Metrics = append(r.Metrics, templates.Stat{Label: strings.ReplaceAll(k, "_", " "), Value: metricText(v)})
		}
	}
	return r
}

func metricText(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// modulesView is the list page's data.
func (s *Server) modulesView() templates.ModulesView {
	sel := s.opts.Host.Selection()
	v := templates.ModulesView{FromEnv: sel.FromEnv, Problems: sel.Problems, Live: "/modules/events?view=list"}
	v.Selection = strings.Join(sel.Names, ", ")
	if v.Selection == "" {
		v.Selection = "empty"
	}
	for _, m := range s.opts.Host.Modules() {
		v.Rows = append(v.Rows, moduleRow(m, sel.FromEnv))
	}
	return v
}

// moduleHealthView is the overview's card: counts by state, worst first.
func (s *Server) moduleHealthView() templates.ModuleHealthView {
	v := templates.ModuleHealthView{Live: "/modules/events?view=overview"}
	counts := map[string]int{}
	for _, m := range s.opts.Host.Modules() {
		r := moduleRow(m, false)
		counts[r.State]++
		v.Rows = append(v.Rows, r)
	}
	slices.SortStableFunc(v.Rows, func(a, b templates.ModuleRow) int { return stateRank(a.State) - stateRank(b.State) })
	for _, st := range stateOrder {
		if n := counts[st]; n > 0 {
			v.Counts = append(v.Counts, templates.ModuleCount{State: st, N: n})
		}
	}
	return v
}

// healthChart places a module's health changes on the chart: x is the
// time between the first change and now, y the state's row; the line
// steps (holds a state until the next change).
func healthChart(history []host.HealthChange, now time.Time) templates.HealthChart {
	if len(history) == 0 {
		return templates.HealthChart{Empty: true}
	}
	from := history[0].At
	span := now.Sub(from)
	if span <= 0 {
		span = time.Second
	}
	x := func(t time.Time) int {
		return templates.ChartLeft + int(float64(templates.ChartRight-templates.ChartLeft)*float64(t.Sub(from))/float64(span))
	}
	ch := templates.HealthChart{From: from.UTC().Format("Jan 2 15:04:05"), To: "now"}
	var pts []string
	for i, hc := range history {
		p := templates.HealthPoint{X: x(hc.At), Y: templates.ChartY(string(hc.State)), State: string(hc.State),
			Detail: hc.Detail, At: hc.At.UTC().Format("2006-01-02 15:04:05 UTC"), Ago: humanDuration(now.Sub(hc.At)) + " ago"}
		if i > 0 {
			pts = append(pts, fmt.Sprintf("%d,%d", p.X, ch.Points[i-1].Y))
		}
		pts = append(pts, fmt.Sprintf("%d,%d", p.X, p.Y))
		ch.Points = append(ch.Points, p)
	}
	last := ch.Points[len(ch.Points)-1]
	pts = append(pts, fmt.Sprintf("%d,%d", templates.ChartRight, last.Y))
	ch.Polyline = strings.Join(pts, " ")
	return ch
}
