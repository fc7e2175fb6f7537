package admin

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/store"
)

// ActionBackupDownload is the audit action of a backup downloaded from the UI.
const ActionBackupDownload = "backup.download"

// downloadBackup takes a consistent online snapshot (store.BackupWith) into a
// temporary file beside the database — same filesystem, so no tmpfs RAM is
// spent on a large database — streams it as an attachment and removes it.
// The form chooses a full backup (the Worldtree keys in plain text) or one
// without the secret settings, either with or without the assistant's
// transcripts; the audit row says which was downloaded.
func (s *Server) downloadBackup(c echo.Context) error {
	ctx, cancel := withTimeout(c, 10*time.Minute)
	defer cancel()
	sess := sessionOf(c)
	f := form.ParseBackupDownload(c.Request())
	tmpDir, err := os.MkdirTemp(filepath.Dir(s.opts.Store.Path()), ".kimi-download-")
	if err != nil {
		return fmt.Errorf("admin: backup: temp dir: %w", err)
	}
	defer func() {
		if err := os.RemoveAll(tmpDir); err != nil {
			s.log.Warn("remove backup temp dir", "err", err)
		}
	}()
	kind, suffix := "full backup (holds the secrets: Worldtree and model-provider keys, the Discord token)", ""
	if f.WithoutSecrets {
		kind, suffix = "backup without secrets", "-without-secrets"
	}
	if f.WithoutTranscripts {
		kind, suffix = kind+", without transcripts", suffix+"-without-transcripts"
	} else {
		kind += ", holds the assistant's transcripts"
	}
	name := "kimi-backup-" + time.Now().UTC().Format("20060102T150405Z") + suffix + ".db"
	dest := filepath.Join(tmpDir, name)
	if _, err := s.opts.Store.BackupWith(ctx, dest, store.BackupOptions{
		WithoutSecrets: f.WithoutSecrets, WithoutTranscripts: f.WithoutTranscripts, Actor: sess.Username}); err != nil {
		s.log.Error("backup failed", "err", err, "request_id", requestIDOf(c))
		return echo.NewHTTPError(http.StatusInternalServerError, msgBackupFailed).SetInternal(err)
	}
	s.status.invalidateBackup()
	file, err := os.Open(dest)
	if err != nil {
		return fmt.Errorf("admin: backup: open: %w", err)
	}
	defer file.Close()
	// Unlink now: the open descriptor keeps the data readable on Unix, and
	// nothing is left behind even if the client disconnects mid-download.
	if err := os.RemoveAll(tmpDir); err != nil {
		s.log.Warn("remove backup temp dir", "err", err)
	}
	fi, err := file.Stat()
	if err != nil {
		return fmt.Errorf("admin: backup: stat: %w", err)
	}
	if err := s.opts.Store.Audit(ctx, store.AuditEntry{
		At: time.Now(), Actor: sess.Username, Action: ActionBackupDownload, Target: name,
		Detail: kind + ", " + humanBytes(fi.Size()), IP: c.RealIP(),
	}); err != nil {
		return fmt.Errorf("admin: backup: audit: %w", err)
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	h.Set(echo.HeaderContentType, "application/vnd.sqlite3")
	h.Set(echo.HeaderContentLength, strconv.FormatInt(fi.Size(), 10))
	return c.Stream(http.StatusOK, "application/vnd.sqlite3", file)
}
