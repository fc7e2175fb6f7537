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
	// FieldBackupTranscripts is the checkbox that leaves the assistant's
	// transcripts out of either download; checked, it submits
	// BackupTranscriptsOmit.
	FieldBackupTranscripts = "transcripts"
	// BackupTranscriptsOmit asks for a backup without the transcripts.
	BackupTranscriptsOmit = "omit"
)

// BackupDownload is the backup download form.
type BackupDownload struct {
	// WithoutSecrets asks for a copy without the secret settings (the
	// Worldtree keys); false is a full backup.
	WithoutSecrets bool
	// WithoutTranscripts asks for a copy without the assistant's
	// transcripts (messages and tool-call excerpts).
	WithoutTranscripts bool
}

// ParseBackupDownload reads the form from r. Any value of a field other
// than its omit value keeps what it names, as the field's absence does.
func ParseBackupDownload(r *http.Request) BackupDownload {
	return BackupDownload{
		WithoutSecrets:     value(r, FieldBackupSecrets) == BackupSecretsOmit,
		WithoutTranscripts: value(r, FieldBackupTranscripts) == BackupTranscriptsOmit,
	}
}
