package kimitest

import (
	"context"
	"time"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/proposals"
)

// Acting as the operator: each helper calls the service the admin's form
// calls, as an admin named "kimitest", and fails the test on an error.

// operatorName is the admin the operator's actions are recorded as.
const operatorName = "kimitest"

func (a *Appliance) services() app.EmbeddedParts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.parts
}

// SetServerSetup replaces the seeded guild's server setup document (what
// /guilds/{id} saves): validated, written, applied to the running bot.
func (a *Appliance) SetServerSetup(text string) {
	a.t.Helper()
	a.setDocument(guildcfg.GuildTarget(mustID(GuildID)), text)
}

// SetModuleSettings replaces a module's settings document for the seeded
// guild (its settings card on /guilds/{id}).
func (a *Appliance) SetModuleSettings(module, text string) {
	a.t.Helper()
	a.setDocument(guildcfg.GuildModuleTarget(mustID(GuildID), module), text)
}

// Document is a guild document's text now ("" when it has none).
func (a *Appliance) Document(target guildcfg.Target) string {
	a.t.Helper()
	d, err := a.services().Guilds.Document(context.Background(), target)
	if err != nil {
		a.t.Fatalf("kimitest: read %v: %v", target, err)
	}
	return d.Text
}

func (a *Appliance) setDocument(target guildcfg.Target, text string) {
	a.t.Helper()
	if err := writeDocument(context.Background(), a.services().Guilds, target, text, guildcfg.Actor{Kind: guildcfg.ActorAdmin, Name: operatorName}); err != nil {
		a.t.Fatalf("kimitest: %v", err)
	}
}

// Proposals are the configuration proposals in a state ("" for all),
// newest first (the first page of /proposals).
func (a *Appliance) Proposals(state proposals.State) []proposals.Proposal {
	a.t.Helper()
	page, err := a.services().Proposals.List(context.Background(), proposals.Filter{State: state})
	if err != nil {
		a.t.Fatalf("kimitest: list proposals: %v", err)
	}
	return page.Items
}

// Approve approves a proposal as the operator (/proposals/{id}'s button).
func (a *Appliance) Approve(id string) proposals.Outcome {
	a.t.Helper()
	out, err := a.services().Proposals.Approve(context.Background(), id, proposals.Decider{Source: "web", Admin: operatorName})
	if err != nil {
		a.t.Fatalf("kimitest: approve %s: %v", id, err)
	}
	return out
}

// Reject rejects a proposal as the operator, with a reason.
func (a *Appliance) Reject(id, reason string) proposals.Outcome {
	a.t.Helper()
	out, err := a.services().Proposals.Reject(context.Background(), id, proposals.Decider{Source: "web", Admin: operatorName}, reason)
	if err != nil {
		a.t.Fatalf("kimitest: reject %s: %v", id, err)
	}
	return out
}

// Module is a module's status as /modules shows it: state, reason,
// health and metrics. It fails the test for a module not in the build.
func (a *Appliance) Module(name string) host.ModuleStatus {
	a.t.Helper()
	for _, m := range a.services().Host.Modules() {
		if m.Name == name {
			return m
		}
	}
	a.t.Fatalf("kimitest: no module %q in this appliance", name)
	return host.ModuleStatus{}
}

// RestartModule restarts one module (its Close, then Start), as
// /modules/{name}'s restart button does.
func (a *Appliance) RestartModule(name string) {
	a.t.Helper()
	if err := a.services().Host.Restart(context.Background(), name, operatorName); err != nil {
		a.t.Fatalf("kimitest: restart %s: %v", name, err)
	}
}

// SetModuleEnabled selects or deselects a module, as /modules' switch
// does: the modules restart on the new selection (a deselected module is
// closed, its commands and tools withdrawn; a selected one starts), and
// the selection is kept across Restart. Every module given to Start is
// selected at the first start. It has no effect while WithEnv sets
// KIMI_MODULES, which overrides the stored selection, as in serve.
func (a *Appliance) SetModuleEnabled(name string, enabled bool) {
	a.t.Helper()
	if err := a.services().Host.SetEnabled(context.Background(), name, enabled, operatorName); err != nil {
		a.t.Fatalf("kimitest: set %s enabled=%t: %v", name, enabled, err)
	}
}

// SaveModuleSettings saves a module's deployment settings (the values of
// its Spec.Settings fields by name, as the module's page on /modules
// saves them; "" removes a saved value) and restarts the module, which
// reads them at its next start. Invalid values fail the test with the
// host's message.
func (a *Appliance) SaveModuleSettings(module string, values map[string]string) {
	a.t.Helper()
	ctx := context.Background()
	h := a.services().Host
	if err := h.SaveSettings(ctx, module, values, operatorName); err != nil {
		a.t.Fatalf("kimitest: save %s's settings: %v", module, err)
	}
	if err := h.Restart(ctx, module, operatorName); err != nil {
		a.t.Fatalf("kimitest: restart %s on its settings: %v", module, err)
	}
}

// GuildSetup is the seeded guild's server setup document's target (for
// Document).
func GuildSetup() guildcfg.Target { return guildcfg.GuildTarget(mustID(GuildID)) }

// ModuleSettings is a module's settings document's target for the seeded
// guild (for Document).
func ModuleSettings(module string) guildcfg.Target {
	return guildcfg.GuildModuleTarget(mustID(GuildID), module)
}

// Advance moves the controlled clock (WithControlledClock) by d and
// returns once the jobs due by then have run and been settled. It first
// waits for the jobs due now to be settled, so that they finish at the
// moment they ran (a periodic job's next run counts from there): seven
// Advance(24*time.Hour) are seven days of a daily job.
func (a *Appliance) Advance(d time.Duration) {
	a.t.Helper()
	if a.o.clock == nil {
		a.t.Fatal("kimitest: Advance needs WithControlledClock")
	}
	a.WaitJobs()
	a.o.clock.advance(d)
	a.WaitJobs()
}

// WaitJobs waits until every job due by the module host's present time
// has run and been settled (a step of the scheduler that began after the
// call found nothing to launch and nothing running).
func (a *Appliance) WaitJobs() {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), a.o.wait)
	defer cancel()
	if err := a.services().Host.Scheduler().WaitIdle(ctx); err != nil {
		a.t.Fatalf("kimitest: wait for the due jobs: %v", err)
	}
}

// Now is the module host's time: the controlled clock's, else the wall
// clock's.
func (a *Appliance) Now() time.Time {
	if a.o.clock != nil {
		return a.o.clock.Now()
	}
	return time.Now()
}
