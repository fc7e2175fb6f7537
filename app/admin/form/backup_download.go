package form

import "net/http"

// Field names and values of the backup download form (Settings page).
const (
	// FieldBackupSecrets says which backup to download: the button of the
	// backup without secrets submits BackupSecretsOmit; the full backup's
	// button submits nothing.
	FieldBackupSecrets = "secrets"
	// BackupSecretsOmit asks for a backup without the secret settings.
	BackupSecretsOmit = "omit"
)

// BackupDownload is the backup download form.
type BackupDownload struct {
	// WithoutSecrets asks for a copy without the secret settings (the
	// Worldtree keys); false is a full backup.
	WithoutSecrets bool
}

// ParseBackupDownload reads the form from r. Any value of the field other
// than BackupSecretsOmit is a full backup, as the field's absence is.
func ParseBackupDownload(r *http.Request) BackupDownload {
	return BackupDownload{WithoutSecrets: value(r, FieldBackupSecrets) == BackupSecretsOmit}
}
