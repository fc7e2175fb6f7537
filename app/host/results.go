package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Results binds each module instance to the scheduled-results outbox;
// *results.Service implements it.
type Results interface {
	Bind(module string, hooks results.Hooks) *results.Binding
}

var _ Results = (*results.Service)(nil)

// resultsPort is the port name in revocation errors.
const resultsPort = "scheduled_results"

// bindResults returns inst's sdk.ScheduledResults, or nil when the module
// declares no subscription, the host does not advertise
// scheduled_results.v1 or no outbox is wired (the SDK's contract: the
// port is nil unless all three hold). The binding's health hook feeds the
// module's scheduled_results constraint and results_<status> metrics.
func (h *Host) bindResults(inst *instance, caps sdk.Capabilities) *revocableResults {
	declared := inst.spec.Permissions.ScheduledResults
	if h.opts.Results == nil || len(declared) == 0 || !caps.Has(sdk.CapScheduledResults) {
		return nil
	}
	b := h.opts.Results.Bind(inst.name, results.Hooks{
		Declared:    slices.Clone(declared),
		Running:     inst.resultsOpen,
		GuildActive: inst.guildActive,
		Health: func(state sdk.HealthState, detail string, metrics map[string]float64) {
			// A closed incarnation's counts belong to no one: checked under
			// the health book's lock, so revoke's forget cannot come between.
			h.health.constrainUnless(inst.revoked, inst.name, results.HealthSource, state, detail, metrics)
		},
	})
	return &revocableResults{inst: inst, b: b}
}

// resultsOpen is the binding's Running hook: the module's view is open
// from Start (a handler it subscribes there may be called at once, as the
// original's "module view open" check allows) until Close begins. Not
// inst.running, which turns true only once Start returned: a notification
// made due by the Subscribe in Start was then blocked again for
// BlockedRetry.
func (i *instance) resultsOpen() bool {
	return !i.revoked() && (i.runningFlag.Load() || i.starting.Load())
}

// revocableResults refuses every call once its module closed, like the
// other ports; the error is also the SDK's closed-view error
// (*sdk.ScheduledResultAccessError, "Scheduled-result subscription is
// closed or undeclared"), so a module sees what the SDK documents.
type revocableResults struct {
	inst *instance
	b    *results.Binding
}

var _ sdk.ScheduledResults = (*revocableResults)(nil)

func (r *revocableResults) closedErr() error {
	return fmt.Errorf("%w: %w", r.inst.revokedErr(resultsPort), hostkit.NewResultSubscriptionClosed())
}

// Subscribe implements sdk.ScheduledResults.
func (r *revocableResults) Subscribe(ctx context.Context, name string, guildID uint64, handler sdk.ScheduledResultHandler) error {
	if r.inst.revoked() {
		return r.closedErr()
	}
	return r.b.Subscribe(ctx, name, guildID, handler)
}

// Unsubscribe implements sdk.ScheduledResults.
func (r *revocableResults) Unsubscribe(ctx context.Context, name string, guildID uint64) error {
	if r.inst.revoked() {
		return r.closedErr()
	}
	return r.b.Unsubscribe(ctx, name, guildID)
}

// close unregisters the instance's handlers (its subscription rows stay).
func (r *revocableResults) close() { r.b.Close() }
