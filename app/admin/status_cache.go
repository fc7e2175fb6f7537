package admin

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

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
		sc.log.Warn("schema version", "err", err)
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
