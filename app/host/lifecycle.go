package host

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Start reads the selection and starts the selected modules: they show as
// starting at once, wait for Options.AwaitDiscord when set (the bot's
// first READY, bounded by the caller), then start in dependency order.
// Only a failure to read the selection is an error: modules that fail are
// marked failed with their reason and the rest start.
func (h *Host) Start(ctx context.Context) error {
	h.op.Lock()
	defer h.op.Unlock()
	if h.isClosed() {
		return fmt.Errorf("host: start: %w", ErrClosed)
	}
	h.goroutines.start()
	defer func() {
		// The modules start after Discord's READY, whose command sync was
		// held back (CommandsRegistered): sync the full set now.
		h.booted.Store(true)
		if r, ok := h.discord.(CommandsReadier); ok {
			r.CommandsReady() // the whole set, at once: no burst to debounce
		} else {
			h.commandsChanged()
		}
	}()
	return h.boot(ctx, h.opts.AwaitDiscord)
}

// CommandsRegistered reports whether the modules' commands are registered:
// Start's boot ended, so every module that started registered its own.
// Until then the Discord connection holds its command syncs back, since
// the set would lack the modules still to start (discord.CommandGate).
func (h *Host) CommandsRegistered() bool { return h.booted.Load() }

// reasonAwaitingDiscord is a starting module's reason while the host waits
// for the Discord connection before starting any module.
const reasonAwaitingDiscord = "waiting for Discord to be ready"

// reasonShuttingDown is the reason of a module left unstarted because the
// appliance began shutting down while it was starting.
const reasonShuttingDown = "not started: the appliance is shutting down"

// awaitDiscord runs await (nil: nothing to wait for) with the selected
// modules shown as starting and waiting for Discord; a wait that ends
// without Discord being ready is logged, and the modules start anyway.
func (h *Host) awaitDiscord(ctx context.Context, await func(context.Context) error, order []string) {
	if await == nil {
		return
	}
	var waiting []string
	h.mu.Lock()
	for _, n := range order {
		if e := h.entries[n]; e.state == StateStarting {
			e.reason = reasonAwaitingDiscord
			waiting = append(waiting, n)
		}
	}
	h.mu.Unlock()
	if len(waiting) == 0 {
		return
	}
	h.watch.Notify()
	began := h.now()
	if err := await(ctx); err != nil {
		h.log.Warn("starting the modules without a ready Discord connection; their Discord calls fail until it is", "waited_ms", h.now().Sub(began).Milliseconds(), "reason", err)
	} else {
		h.log.Info("Discord is ready; starting the modules", "waited_ms", h.now().Sub(began).Milliseconds())
	}
	h.mu.Lock()
	for _, n := range waiting {
		if e := h.entries[n]; e.state == StateStarting && e.reason == reasonAwaitingDiscord {
			e.reason = ""
		}
	}
	h.mu.Unlock()
	h.watch.Notify()
}

func (h *Host) selectionNow(ctx context.Context) ([]string, error) {
	if h.opts.SelectionSet {
		return slices.Clone(h.opts.Selection), nil
	}
	return h.storedSelection(ctx)
}

// boot plans the whole selection and launches every module in it, after
// await when it is not nil; op held, nothing running.
func (h *Host) boot(ctx context.Context, await func(context.Context) error) error {
	sel, err := h.selectionNow(ctx)
	if err != nil {
		return err
	}
	p := preflight(h.specs, sel, h.caps, h.opts.HasFileReader)
	h.mu.Lock()
	h.selection = sel
	h.problems = slices.DeleteFunc(h.problems, func(s string) bool { return !isBuildProblem(s) })
	h.problems = append(h.problems, p.problems...)
	now := h.now()
	for _, e := range h.entries {
		e.selected = slices.Contains(sel, e.spec.Name)
		e.state, e.since, e.reason, e.fieldErrors = StateNotSelected, now, "", nil
		if e.selected {
			e.state = StateStarting
		}
	}
	h.mu.Unlock()
	h.watch.Notify()
	for _, prob := range p.problems {
		h.log.Error("module selection refused", "problem", prob)
	}
	if h.opts.SelectionSet {
		h.log.Info("module selection from KIMI_MODULES", "modules", sel)
	}
	for _, n := range p.order {
		if r, ok := p.failed[n]; ok {
			h.mark(n, StateFailed, r)
		} else if r, ok := p.disabled[n]; ok {
			h.mark(n, StateDisabled, r)
		}
	}
	h.awaitDiscord(ctx, await, p.order)
	h.launch(ctx, p.order)
	return nil
}

func isBuildProblem(s string) bool {
	return len(s) > 10 && s[:10] == "Duplicate "
}

// mark sets a module's state and reason, logging refusals.
func (h *Host) mark(name string, state State, reason string) {
	h.mu.Lock()
	e := h.entries[name]
	if e.state != state {
		e.since = h.now()
	}
	e.state, e.reason = state, reason
	version := e.spec.Version
	h.mu.Unlock()
	if h.opts.Directory != nil {
		h.opts.Directory.set(name, state == StateRunning)
	}
	h.watch.Notify()
	switch state {
	case StateDisabled:
		h.moduleLogger(name).Warn(fmt.Sprintf("Kimi module disabled: %s %s (%s)", name, version, reason))
	case StateFailed:
		h.moduleLogger(name).Error(fmt.Sprintf("Kimi module failed: %s %s (%s)", name, version, reason))
	}
}

func (h *Host) stateOf(name string) (State, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[name]
	if e == nil {
		return StateNotSelected, ""
	}
	return e.state, e.reason
}

// blockedBy returns the reason a module cannot go on because of a
// dependency ("" when every dependency is running or about to).
func (h *Host) blockedBy(name string, pending map[string]bool) string {
	for _, d := range h.specs[name].Dependencies {
		if pending[d] {
			continue
		}
		switch st, _ := h.stateOf(d); st {
		case StateRunning:
		case StateDisabled:
			return "dependency disabled: " + d
		default:
			return "dependency failed: " + d
		}
	}
	return ""
}

// launch runs settings → create → migrate all → start for the modules of
// order that are not refused (order is dependency order).
func (h *Host) launch(ctx context.Context, order []string) {
	pending := map[string]bool{}
	for _, n := range order {
		if st, _ := h.stateOf(n); st == StateStarting || st == StateStopped {
			pending[n] = true
		}
	}
	drop := func(inst *instance, state State, reason string) {
		delete(pending, inst.name)
		h.tools.remove(inst)
		h.mark(inst.name, state, reason)
	}
	var created []*instance
	for _, n := range order {
		if !pending[n] {
			continue
		}
		if r := h.blockedBy(n, pending); r != "" {
			delete(pending, n)
			h.mark(n, StateDisabled, r)
			continue
		}
		inst, err := h.create(ctx, n)
		if err != nil {
			delete(pending, n)
			var se *SettingsError
			if errors.As(err, &se) {
				h.mu.Lock()
				h.entries[n].fieldErrors = se.Fields
				h.mu.Unlock()
			}
			h.mark(n, StateFailed, err.Error())
			continue
		}
		created = append(created, inst)
	}
	var migrated []*instance
	for _, inst := range created {
		if r := h.blockedBy(inst.name, pending); r != "" {
			drop(inst, StateDisabled, r)
			continue
		}
		if err := h.migrate(ctx, inst); err != nil {
			drop(inst, StateFailed, err.Error())
			continue
		}
		migrated = append(migrated, inst)
	}
	for _, inst := range migrated {
		if ctx.Err() != nil {
			// The host's Start was ended (a shutdown during start-up):
			// the modules not started yet stay stopped.
			drop(inst, StateStopped, reasonShuttingDown)
			continue
		}
		if r := h.blockedBy(inst.name, pending); r != "" {
			drop(inst, StateDisabled, r)
			continue
		}
		delete(pending, inst.name)
		if err := h.start(ctx, inst); err != nil {
			h.mark(inst.name, StateFailed, err.Error())
			continue
		}
		h.mark(inst.name, StateRunning, "")
	}
}

// create prepares settings and calls the spec's Create, contained and
// bounded; tools registered by a failed create are removed.
func (h *Host) create(ctx context.Context, name string) (*instance, error) {
	spec := h.specs[name]
	raw, origins, err := h.rawSettings(ctx, spec)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.entries[name].origins = origins
	h.mu.Unlock()
	settings, err := prepareSettings(spec, raw)
	if err != nil {
		return nil, err
	}
	inst := h.newInstance(spec, settings)
	h.tools.removeModule(name) // a previous incarnation's tools
	reg := &loadRegistry{book: h.tools, inst: inst}
	lc := &loadContext{inst: inst, reg: reg, h: h}
	var mod sdk.Module
	err, how := runBounded(ctx, h.opts.StartTimeout, h.opts.CancelGrace, func(context.Context) error {
		m, err := spec.Create(lc)
		mod = m
		return err
	})
	reg.seal()
	if err == nil && how == finished && mod == nil {
		err = fmt.Errorf("create() returned no module")
	}
	if err != nil || how != finished {
		h.tools.remove(inst)
		inst.cancel()
		detail := lifecycleDetail("create", h.opts.StartTimeout, err, how)
		h.logFailure(inst, "create", err)
		return nil, errors.New("create() failed: " + detail)
	}
	inst.mod = mod
	inst.log.Info(fmt.Sprintf("Kimi module composed: %s %s", name, spec.Version))
	return inst, nil
}

func (h *Host) logFailure(inst *instance, what string, err error) {
	var pe *PanicError
	if errors.As(err, &pe) {
		inst.log.Error(what+" panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		return
	}
	if err != nil {
		inst.log.Error(what+" failed", "err", err)
	}
}

// migrate runs the module's migrations (module code: contained).
func (h *Host) migrate(ctx context.Context, inst *instance) error {
	var migs []sdk.Migration
	if err := call(ctx, func(context.Context) error { migs = inst.mod.Migrations(); return nil }); err != nil {
		h.logFailure(inst, "migrations", err)
		return fmt.Errorf("migrate failed: %w", err)
	}
	if err := hostkit.ValidateMigrations(inst.name, migs); err != nil {
		return fmt.Errorf("migrate failed: %w", err)
	}
	// Bounded like start(): the storage rolls the running step back and
	// releases the writer when the ctx ends, so Migrate returns promptly.
	var applied []string
	err, how := runBounded(ctx, h.opts.MigrateTimeout, h.opts.CancelGrace, func(ctx context.Context) error {
		var err error
		applied, err = h.storage.Migrate(ctx, inst.name, inst.spec.Permissions, migs)
		return err
	})
	if how != finished {
		detail := lifecycleDetail("migrate", h.opts.MigrateTimeout, err, how)
		inst.log.Error("migrate stopped; the running step was rolled back", "detail", detail, "err", err)
		return fmt.Errorf("migrate failed: %s", detail)
	}
	if err != nil {
		h.logFailure(inst, "migrate", err)
		return fmt.Errorf("migrate failed: %w", err)
	}
	if len(applied) > 0 {
		inst.log.Info("module migrations applied", "applied", applied)
	}
	return nil
}

// start builds the runtime and calls Start, bounded (60 s, then
// cancellation and a grace period). A failed start is closed and revoked.
func (h *Host) start(ctx context.Context, inst *instance) error {
	spec := inst.spec
	httpPort, err := h.newHTTPPort(inst)
	if err != nil {
		inst.cancel()
		return fmt.Errorf("cannot start: %w", err)
	}
	inst.http = httpPort
	port, err := h.storage.Open(ctx, inst.name, spec.Permissions)
	if err != nil {
		inst.cancel()
		return fmt.Errorf("cannot start: storage: %w", err)
	}
	inst.storage = port
	inst.jobs = h.sched.Bind(inst.name, scheduler.Hooks{
		Invoke: func(ctx context.Context, key string, fn func(context.Context) error) error {
			err := h.callback(ctx, inst, "job", key, fn)
			if err != nil && !inst.running() {
				// the module is closing: the run was cut short, not failed
				return fmt.Errorf("%w: %w", scheduler.ErrInterrupted, err)
			}
			return err
		},
		Health: func(source string, state sdk.HealthState, detail string) {
			h.health.constrain(inst.name, source, state, detail)
		},
		Live: func() error {
			if inst.revoked() {
				return inst.revokedErr("scheduler")
			}
			return nil
		},
	})
	inst.events = h.events.Module(inst.ctx, inst.name, spec.Permissions, inst.guildActive)
	rt := &sdk.Runtime{
		ModuleName:    inst.name,
		IsGuildActive: inst.guildActive,
		Capabilities:  h.caps,
		Logger:        inst.log,
		Events:        &revocableEvents{inst: inst, p: inst.events},
		Scheduler:     inst.jobs,
		Storage:       &revocableStorage{inst: inst, p: port},
		Health:        &reporter{inst: inst, book: h.health},
		Discord:       &discordActions{inst: inst, d: h.discord},
		Interactions:  &interactions{inst: inst, r: h.router},
		HTTP:          httpPort,
		Services:      &services{inst: inst, book: h.services},
		Clock:         h.now,
	}
	if h.guilds != nil {
		rt.Trust = &trust{inst: inst, g: h.guilds, d: h.discord}
		if spec.GuildSettings != nil {
			rt.GuildSettings = &guildSettings{inst: inst, g: h.guilds}
		}
	}
	if h.opts.Proposals != nil {
		rt.Proposals = &revocableProposals{inst: inst, p: h.opts.Proposals.Port(inst.name)}
	}
	if spec.Permissions.RawStorage {
		rt.RawStorage = port.Raw()
	}
	if rp := h.bindResults(inst, h.caps); rp != nil {
		inst.results = rp
		rt.ScheduledResults = rp
	}
	if missing := rt.MissingPorts(); len(missing) > 0 {
		h.revoke(inst, h.opts.CancelGrace)
		return fmt.Errorf("Kimi module %s cannot start: core provided no %s port", hostkit.Repr(inst.name), joinComma(missing))
	}
	h.health.report(inst.name, sdk.HealthStarting, "", nil)
	inst.starting.Store(true)
	// The host's own Start ending (a shutdown during start-up) cancels the
	// module's start as its lifetime ending would.
	stopCancel := context.AfterFunc(ctx, inst.cancel)
	defer stopCancel()
	err, how := runBounded(inst.ctx, h.opts.StartTimeout, h.opts.CancelGrace, func(ctx context.Context) error { return inst.mod.Start(ctx, rt) })
	if err == nil && how == finished {
		inst.runningFlag.Store(true) // before starting ends: resultsOpen never sees a gap
	}
	inst.starting.Store(false)
	if err != nil || how != finished {
		detail := lifecycleDetail("start", h.opts.StartTimeout, err, how)
		if how != finished && ctx.Err() != nil {
			// Cut short by the host's Start ending, not by the timeout.
			detail = "start() was cut short: the appliance is shutting down"
			if how == abandoned {
				detail += "; it ignored cancellation"
			}
		}
		h.logFailure(inst, "start", err)
		h.health.report(inst.name, sdk.HealthFailed, detail, nil)
		h.closeModule(context.Background(), inst, 0)
		return errors.New(detail)
	}
	inst.runningFlag.Store(true)
	inst.jobs.Activate() // handlers are registered: the module's jobs may run
	h.mu.Lock()
	h.started = append(h.started, inst)
	h.entries[inst.name].inst = inst
	h.mu.Unlock()
	h.health.settleStarted(inst.name)
	if missing := h.services.missing(inst.name, spec.Provides); len(missing) > 0 {
		h.health.constrain(inst.name, "services", sdk.HealthDegraded, joinServices(missing))
	}
	h.checkGuildSettings(ctx, inst)
	inst.log.Info(fmt.Sprintf("Kimi module started: %s %s", inst.name, spec.Version))
	return nil
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
