package templates

import "github.com/kimiapp/kimi/app/admin/form"

// AssistantRetentionView is the transcript retention card of /assistant:
// the form (the stored days, or the refused input) and what the retention
// job does next.
type AssistantRetentionView struct {
	Form   form.AssistantRetention
	Errors form.Errors
	// Current is the stored setting in words ("30 days", "for ever").
	Current string
	// NextRun is when the job runs next ("in 5 hours"), NextRunExact its
	// tooltip; "" when the job is not scheduled (not running here).
	NextRun, NextRunExact string
	// Plan says what the next run does ("deletes the transcripts of 3
	// conversations last active before …", "deletes nothing").
	Plan string
}
