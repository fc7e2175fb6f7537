package results

import (
	"context"
	"slices"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// files is one handler invocation's sdk.ScheduledResultFiles: reads are
// serialized, each within 1 byte..sdk.MaxResultFileBytes, all of them
// (repeated reads too) within sdk.MaxResultTotalFileBytes, only of the
// publication's attachments, with the delivery's checks before and after
// every read; it closes when the handler returns.
type files struct {
	s *Service
	c *claim

	mu        sync.Mutex
	open      bool
	remaining int64
}

var _ sdk.ScheduledResultFiles = (*files)(nil)

func newFiles(s *Service, c *claim) *files {
	return &files{s: s, c: c, open: true, remaining: sdk.MaxResultTotalFileBytes}
}

// close ends the invocation: later reads fail with MessageFilesClosed.
func (f *files) close() {
	f.mu.Lock()
	f.open = false
	f.mu.Unlock()
}

// has reports whether id is one of the publication's attachments.
func (f *files) has(id string) bool {
	for _, m := range f.c.pub.Messages {
		if slices.ContainsFunc(m.Attachments, func(a sdk.ScheduledResultAttachment) bool { return a.ID == id }) {
			return true
		}
	}
	return false
}

// Read returns an attachment's bytes (see the type's rules). A bad limit
// fails with hostkit's validation message; a closed reader or a used
// budget with MessageFilesClosed; a failed check with its detail; a file
// that is not the run's, is gone or is larger than the limit (or the
// budget left) with MessageFileUnavailable. All are
// *sdk.ScheduledResultAccessError.
func (f *files) Read(ctx context.Context, attachmentID string, maxBytes int64) ([]byte, error) {
	if err := hostkit.ValidateResultReadLimit(maxBytes); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.open || f.remaining <= 0 {
		return nil, hostkit.NewScheduledResultAccessError(MessageFilesClosed)
	}
	if _, d := f.s.fullCheck(ctx, f.c); d != "" {
		return nil, hostkit.NewScheduledResultAccessError(d)
	}
	if !f.has(attachmentID) {
		return nil, hostkit.NewScheduledResultAccessError(MessageFileUnavailable)
	}
	p := f.s.getProducer()
	if p == nil {
		return nil, hostkit.NewScheduledResultAccessError(MessageFileUnavailable)
	}
	limit := min(maxBytes, f.remaining)
	data, err := p.ReadFile(ctx, f.c.pub.RunID, attachmentID, limit)
	if err != nil || int64(len(data)) > limit {
		if err != nil {
			f.s.log.Debug("scheduled-result file unavailable", "module", f.c.key.Module, "run", f.c.pub.RunID, "err", err)
		}
		return nil, hostkit.NewScheduledResultAccessError(MessageFileUnavailable)
	}
	f.remaining -= int64(len(data))
	if _, d := f.s.fullCheck(ctx, f.c); d != "" {
		return nil, hostkit.NewScheduledResultAccessError(d)
	}
	return data, nil
}
