package assistant

import (
	"slices"
	"sync"
)

// MeterModels bounds the models a Meter tells apart: responses of any
// further model count under MeterOtherModel, so a provider that names a
// new model per response cannot grow /metrics without bound.
const MeterModels = 32

// MeterOtherModel is the model label of the models past MeterModels.
const MeterOtherModel = "other"

// Meter counts the assistant's usage since the process started, for
// /metrics: the model calls and tokens of every response recorded (as it
// arrives, so a turn that fails later still counts what was billed), and
// the turns finished by model and outcome (done, failed, cancelled). It
// holds no user, guild or content, only goes up, and is safe for
// concurrent use. The roll-up (kimi_assistant_usage) is the durable
// record; it is pruned and may be rewritten, so the counters are kept in
// the process instead of read from it.
type Meter struct {
	mu     sync.Mutex
	models map[string]*MeterModel
}

// MeterModel is one model's counts ("" when no response named one).
type MeterModel struct {
	Model                                        string
	Calls                                        int64
	PromptTokens, CompletionTokens, CachedTokens int64
	// Turns counts the finished turns by outcome (their Finish status).
	Turns map[string]int64
}

// model returns m's entry for name, creating it; m.mu is held.
func (m *Meter) model(name string) *MeterModel {
	if m.models == nil {
		m.models = map[string]*MeterModel{}
	}
	if e, ok := m.models[name]; ok {
		return e
	}
	if len(m.models) >= MeterModels {
		name = MeterOtherModel
		if e, ok := m.models[name]; ok {
			return e
		}
	}
	e := &MeterModel{Model: name, Turns: map[string]int64{}}
	m.models[name] = e
	return e
}

// response counts one model response.
func (m *Meter) response(model string, u Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.model(model)
	e.Calls++
	e.PromptTokens += u.PromptTokens
	e.CompletionTokens += u.CompletionTokens
	e.CachedTokens += u.CachedTokens
}

// turn counts one finished turn.
func (m *Meter) turn(model, outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.model(model).Turns[outcome]++
}

// Snapshot returns the counts by model, in model order.
func (m *Meter) Snapshot() []MeterModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MeterModel, 0, len(m.models))
	for _, e := range m.models {
		c := *e
		c.Turns = make(map[string]int64, len(e.Turns))
		for k, v := range e.Turns {
			c.Turns[k] = v
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b MeterModel) int {
		switch {
		case a.Model < b.Model:
			return -1
		case a.Model > b.Model:
			return 1
		}
		return 0
	})
	return out
}

// UsageMeter returns the counts of the usage recorded through c since it
// was made.
func (c *Conversations) UsageMeter() []MeterModel { return c.meter.Snapshot() }
