package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// AssistantRetention is what /assistant needs of the transcript retention
// job; *assistant.Retention implements it.
type AssistantRetention interface {
	Plan(ctx context.Context) (assistant.RetentionPlan, error)
}

var _ AssistantRetention = (*assistant.Retention)(nil)

const flashAssistantRetentionSaved = "arsaved"

func init() {
	flashes[flashAssistantRetentionSaved] = templates.Flash{Kind: templates.FlashSuccess,
		Message: "Transcript retention saved; the next run of the retention job applies it."}
}

// assistantRetentionView is the retention card's model: the stored days
// in the form, and the job's next run and what it will delete (none when
// the job is not wired or its plan cannot be read, which is logged).
func (s *Server) assistantRetentionView(ctx context.Context) (templates.AssistantRetentionView, error) {
	days, err := settings.LoadAssistantRetention(ctx, s.opts.Store)
	if err != nil {
		return templates.AssistantRetentionView{}, fmt.Errorf("admin: retention: %w", err)
	}
	v := templates.AssistantRetentionView{Form: form.AssistantRetentionOf(days), Current: retentionCurrent(days)}
	if s.opts.Retention == nil {
		return v, nil
	}
	p, err := s.opts.Retention.Plan(ctx)
	if err != nil {
		s.log.Warn("retention plan", "err", err)
		return v, nil
	}
	if p.NextRun.IsZero() {
		return v, nil
	}
	now := time.Now()
	v.NextRun, v.NextRunExact = relativeNext(p.NextRun, now), exactTime(p.NextRun)
	v.Plan = retentionPlanText(p)
	return v, nil
}

func retentionCurrent(days int) string {
	if days == 0 {
		return "for ever"
	}
	return "for " + settings.RetentionLabel(days) + " after a conversation's last activity"
}

// retentionPlanText says what the next run does, as the data stands now.
func retentionPlanText(p assistant.RetentionPlan) string {
	switch {
	case p.Days == 0:
		return "deletes nothing (transcripts are kept for ever)"
	case p.Pending == 0:
		return "deletes nothing yet (no transcript is last active before " + exactTime(p.Cutoff) + ")"
	case p.Pending == 1:
		return "deletes the transcript of 1 conversation last active before " + exactTime(p.Cutoff)
	}
	return fmt.Sprintf("deletes the transcripts of %d conversations last active before %s", p.Pending, exactTime(p.Cutoff))
}
