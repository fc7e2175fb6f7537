package admin

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/store"
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
	if n, err := s.status.dbSize(); err == nil {
		o.DBSize = humanBytes(n)
	} else {
		s.log.Warn("admin: database size", "err", err)
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

// statusCache keeps the overview's rarely changing facts off the database
// and the filesystem for most page views: the schema version cannot change
// while serving once it is current, the last backup is re-read at most every
// backupTTL (or at once after a download from this server), the size every
// sizeTTL.
type statusCache struct {
	st  *store.Store
	log *slog.Logger

	mu          sync.Mutex
	schema      string
	schemaFinal bool
	backup      store.BackupInfo
	backupOK    bool
	backupRead  time.Time
	size        int64
	sizeRead    time.Time
}

const (
	backupTTL = 2 * time.Second
	sizeTTL   = time.Second
)

// dbSize is the database + WAL size, re-read at most once a second (two
// stat calls were a tenth of an overview's server time).
func (sc *statusCache) dbSize() (int64, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.sizeRead.IsZero() && time.Since(sc.sizeRead) < sizeTTL {
		return sc.size, nil
	}
	n, err := sc.st.Size()
	if err != nil {
		return 0, err
	}
	sc.size, sc.sizeRead = n, time.Now()
	return n, nil
}

func (sc *statusCache) schemaVersion(ctx context.Context) string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.schemaFinal {
		return sc.schema
	}
	cur, latest, err := sc.st.SchemaVersion(ctx)
	if err != nil {
		sc.log.Warn("admin: schema version", "err", err)
		return "unknown"
	}
	sc.schema = fmt.Sprintf("%d", cur)
	if cur != latest {
		return fmt.Sprintf("%d (binary knows %d)", cur, latest)
	}
	sc.schemaFinal = true
	return sc.schema
}

func (sc *statusCache) lastBackup(ctx context.Context) (store.BackupInfo, bool, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.backupRead.IsZero() && time.Since(sc.backupRead) < backupTTL {
		return sc.backup, sc.backupOK, nil
	}
	info, ok, err := sc.st.LastBackup(ctx)
	if err != nil {
		return store.BackupInfo{}, false, err
	}
	sc.backup, sc.backupOK, sc.backupRead = info, ok, time.Now()
	return info, ok, nil
}

func (sc *statusCache) invalidateBackup() {
	sc.mu.Lock()
	sc.backupRead = time.Time{}
	sc.mu.Unlock()
}

// humanDuration renders an uptime such as "3d 4h", "2h 5m" or "42s".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	sec := (d - m*time.Minute) / time.Second
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, sec)
	default:
		return fmt.Sprintf("%ds", sec)
	}
}

// humanBytes renders a size in binary units ("1.5 MiB").
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
