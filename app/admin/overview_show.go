package admin

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// overview renders the dashboard: version, uptime, database, last backup,
// Discord and modules.
func (s *Server) overview(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	now := time.Now()
	o := templates.Overview{
		Version:     s.opts.Version,
		Commit:      s.opts.Commit,
		StartedAt:   s.opts.StartedAt,
		Uptime:      humanDuration(now.Sub(s.opts.StartedAt)),
		DBPath:      s.opts.Store.Path(),
		DataDir:     s.opts.DataDir,
		Discord:     "not configured",
		ModuleCount: len(s.opts.Modules),
		GoVersion:   runtime.Version(),
	}
	for _, m := range s.opts.Modules {
		o.Modules = append(o.Modules, templates.Module{Name: m.Name, Version: m.Version})
	}
	if s.opts.Discord != nil {
		st := s.opts.Discord.Status()
		o.Discord, o.DiscordKind, o.DiscordGuilds = st.Summary(now), discordStateKind(st.State), len(st.Guilds)
		o.DiscordLinked = true
	}
	if s.opts.Host != nil {
		mh := s.moduleHealthView()
		o.ModuleHealth, o.ModuleCount = &mh, len(mh.Rows)
	}
	if s.opts.Scheduler != nil {
		o.Scheduler = s.schedulerView(ctx)
	}
	if n, err := s.status.dbSize(); err == nil {
		o.DBSize = humanBytes(n)
	} else {
		s.log.Warn("database size", "err", err)
		o.DBSize = "unknown"
	}
	o.Checklist = s.checklistView(ctx, s.csrfToken(c))
	o.SchemaVersion = s.status.schemaVersion(ctx)
	info, ok, err := s.status.lastBackup(ctx)
	if err != nil {
		return fmt.Errorf("admin: overview: %w", err)
	}
	if ok {
		o.LastBackup = fmt.Sprintf("%s · %s", info.At.UTC().Format("2006-01-02 15:04 UTC"), humanBytes(info.Bytes))
		o.LastBackupAgo = humanDuration(now.Sub(info.At)) + " ago"
	}
	return render(c, http.StatusOK, templates.OverviewPage(s.chrome(c, "Overview", "overview"), o))
}

const (
	backupTTL = 2 * time.Second
	sizeTTL   = time.Second
)

// schedulerView is the overview's scheduler card: the runner's state and
// the overdue jobs. A failed count shows as unknown (and is logged): the
// rest of the overview still renders.
func (s *Server) schedulerView(ctx context.Context) *templates.SchedulerView {
	st, err := s.opts.Scheduler.Status(ctx)
	v := &templates.SchedulerView{Running: st.Running, Overdue: st.Overdue}
	switch {
	case st.Active:
		v.State, v.Detail = "active", "this process runs the jobs"
	case st.Standby:
		v.State, v.Detail = "standby", "another Kimi process holds the runner lease and runs the jobs"
		if st.Holder != "" {
			v.Detail += " (" + st.Holder + ")"
		}
	default:
		v.State, v.Detail = "starting", "the runner has not taken or seen the lease yet"
	}
	if err != nil {
		s.log.Warn("scheduler status", "err", err)
		v.Error = "could not be counted"
	}
	return v
}
