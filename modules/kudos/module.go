package kudos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// module implements sdk.Module. Its LLM tools exist from Create on, but the
// ports arrive only with Start, so every entry point goes through started().
type module struct {
	cfg   config
	clock func() time.Time

	mu            sync.RWMutex
	rt            *sdk.Runtime
	ledger        *ledger
	registrations []sdk.Registration
}

var _ sdk.Module = (*module)(nil)

// errNotStarted is returned by entry points called outside Start..Close.
var errNotStarted = errors.New("kudos: " + Name + " is not started")

// Migrations returns the module's schema steps.
func (m *module) Migrations() []sdk.Migration { return migrations() }

// Start binds the module to the runtime. Returning an error aborts the
// appliance's startup, by design: a configured module that cannot start is
// a deployment error, not something to limp past.
func (m *module) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.mu.Lock()
	m.rt, m.ledger = rt, newLedger(rt.Storage)
	if m.clock == nil {
		m.clock = rt.Now
	}
	m.mu.Unlock()
	if err := m.bind(ctx, rt); err != nil {
		m.release()
		return err
	}
	// The host reports healthy after a clean Start anyway; reporting
	// explicitly is how a module attaches its own metrics from the outset.
	m.reportHealth()
	return nil
}

// bind registers every surface; each registration is kept so Close can
// release them newest first.
func (m *module) bind(ctx context.Context, rt *sdk.Runtime) error {
	// Durable background work. The job row outlives the process, so the
	// handler is bound by name on every start; RunEvery with the same key
	// replaces the stored schedule, so a changed interval applies at the
	// next restart.
	if err := rt.Scheduler.Register(DigestHandler, m.postDigest); err != nil {
		return err
	}
	if err := rt.Scheduler.RunEvery(ctx, DigestJobKey, m.cfg.digestInterval, DigestHandler, nil, sdk.EveryOptions{Jitter: DigestJitter}); err != nil {
		return err
	}

	// A core event. The topic is declared in Permissions.EventTopics;
	// subscribing to an undeclared topic fails right here.
	sub, err := rt.Events.Subscribe(sdk.TopicMemberRemove, m.onMemberRemove)
	if err != nil {
		return err
	}
	m.keep(sub)

	// The /kudos commands and the persistent button.
	if err := m.registerInteractions(rt.Interactions); err != nil {
		return err
	}

	// A service other modules may consume.
	reg, err := rt.Services.Provide(ServiceName, ServiceVersion, Board(&boardService{m: m}))
	if err != nil {
		return err
	}
	m.keep(reg)

	if rt.GuildSettings != nil {
		m.keep(rt.GuildSettings.OnChange(m.onGuildChange))
	}
	return m.subscribeResults(ctx, rt)
}

func (m *module) keep(r sdk.Registration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.registrations = append(m.registrations, r)
}

// Close releases everything Start acquired, newest first. Scheduled jobs
// and result subscriptions are durable by design and stay.
func (m *module) Close(ctx context.Context) error {
	m.release()
	return nil
}

func (m *module) release() {
	m.mu.Lock()
	regs := m.registrations
	m.registrations, m.rt, m.ledger = nil, nil, nil
	m.mu.Unlock()
	for _, r := range slices.Backward(regs) {
		r.Close()
	}
}

// started returns the runtime and ledger, or errNotStarted.
func (m *module) started() (*sdk.Runtime, *ledger, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.rt == nil {
		return nil, nil, errNotStarted
	}
	return m.rt, m.ledger, nil
}

// guildSettings returns a guild's settings snapshot; without the port (no
// schema granted) it is empty and every field reads as its zero value.
func (m *module) guildSettings(ctx context.Context, rt *sdk.Runtime, guildID uint64) (sdk.GuildSettingsSnapshot, error) {
	if rt.GuildSettings == nil {
		return sdk.GuildSettingsSnapshot{Values: map[string]any{}, Valid: true}, nil
	}
	snap, err := rt.GuildSettings.Get(ctx, guildID)
	if err != nil {
		return snap, fmt.Errorf("kudos: guild %d settings: %w", guildID, err)
	}
	return snap, nil
}

// onGuildChange runs after a guild's settings change (an approved
// proposal, an admin edit); ctx is the module's lifetime.
func (m *module) onGuildChange(ctx context.Context, guildID uint64) {
	if rt, _, err := m.started(); err == nil {
		rt.Logger.Info("kudos guild settings changed", "guild", guildID)
	}
	m.reportHealth()
}

// reportHealth sets the module's overall state with the guild count. The
// digest's own concern is keyed (see postDigest), so a failing digest shows
// as degraded without this report having to remember it.
func (m *module) reportHealth() {
	rt, _, err := m.started()
	if err != nil {
		return
	}
	metrics := map[string]float64{}
	if rt.GuildSettings != nil {
		metrics["guilds"] = float64(len(rt.GuildSettings.GuildIDs()))
	}
	rt.Health.Report(sdk.HealthHealthy, "", metrics)
}
