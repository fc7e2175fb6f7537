package admin

import (
	"context"

	"github.com/kimiapp/kimi/app/scheduler"
)

// JobScheduler is what the admin needs of the durable scheduler: the
// runner's standing (the overview, /readyz) and, on /modules/{name}, a
// module's jobs with the two audited controls.
type JobScheduler interface {
	Status(ctx context.Context) (scheduler.Status, error)
	Jobs(ctx context.Context, module string) ([]scheduler.Job, error)
	RunNow(ctx context.Context, module, key, actor string) error
	CancelJob(ctx context.Context, module, key, actor string) (bool, error)
}

var _ JobScheduler = (*scheduler.Scheduler)(nil)

// readyStandby is /readyz's detail while another process holds the runner
// lease: the server is ready (it serves), but it runs no jobs.
const readyStandby = "ready (scheduler standby: another Kimi process holds the runner lease; jobs run there)\n"
