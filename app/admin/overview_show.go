package admin

import (
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
	if s.opts.Host != nil {
		mh := s.moduleHealthView()
		o.ModuleHealth, o.ModuleCount = &mh, len(mh.Rows)
	}
	if n, err := s.status.dbSize(); err == nil {
		o.DBSize = humanBytes(n)
	} else {
		s.log.Warn("database size", "err", err)
		o.DBSize = "unknown"
	}
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
