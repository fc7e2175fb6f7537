package sdktest

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// ServiceKey identifies a service: name@version.
type ServiceKey struct {
	Name    string
	Version int
}

// fakeProvided is one provision; alive turns false for good when its
// registration closes, so handles obtained from it stay dead even if the
// service is provided again later (as in the host).
type fakeProvided struct {
	impl     any
	provider string
	alive    bool
}

// FakeServices is a service registry shared by the modules of a test.
// Module-bound views (For) enforce a module's declared Provides and
// Consumes like the host; the registry's own Provide and Get are unbound,
// for a test acting as a provider or consumer. At most one live provider
// per name@version ("service n@v is already provided by 'p'"); Get of a
// service nobody provides fails with *sdk.ServiceUnavailableError ("service n@v
// is not provided"), and a handle's Value fails with "service n@v closed
// with module 'p'" once its provider closed.
type FakeServices struct {
	mu   sync.Mutex
	live map[ServiceKey]*fakeProvided
}

var _ sdk.Services = (*FakeServices)(nil)

// TestProvider is the provider name of services the test provides itself
// through the unbound registry.
const TestProvider = "sdktest"

// NewFakeServices returns an empty registry.
func NewFakeServices() *FakeServices { return &FakeServices{live: map[ServiceKey]*fakeProvided{}} }

// Provide provides a service as TestProvider, without declaration checks.
func (s *FakeServices) Provide(name string, version int, impl any) (sdk.Registration, error) {
	return s.provide(TestProvider, name, version, impl)
}

// Get returns a handle on a live service, without declaration checks.
func (s *FakeServices) Get(name string, version int) (sdk.ServiceHandle, error) {
	return s.get(name, version)
}

func (s *FakeServices) provide(provider, name string, version int, impl any) (sdk.Registration, error) {
	if !hostkit.ValidServiceName(name) || version < 1 {
		return nil, &sdk.ModuleContractError{Message: "invalid service " + hostkit.Repr(name) + " version " + strconv.Itoa(version)}
	}
	key := ServiceKey{name, version}
	s.mu.Lock()
	defer s.mu.Unlock()
	if current := s.live[key]; current != nil {
		return nil, hostkit.NewServiceAlreadyProvided(name, version, current.provider)
	}
	record := &fakeProvided{impl: impl, provider: provider, alive: true}
	s.live[key] = record
	return newRegistration(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		record.alive = false
		if s.live[key] == record {
			delete(s.live, key)
		}
	}), nil
}

func (s *FakeServices) get(name string, version int) (sdk.ServiceHandle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	record := s.live[ServiceKey{name, version}]
	if record == nil {
		return nil, hostkit.NewServiceNotProvided(name, version)
	}
	return &fakeHandle{registry: s, record: record, name: name, version: version}, nil
}

// Provided returns the keys of the live services,
// sorted by name and version.
func (s *FakeServices) Provided() []ServiceKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := slices.Collect(maps.Keys(s.live))
	slices.SortFunc(keys, func(a, b ServiceKey) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	return keys
}

// ProvidedBy returns the live services provided by module.
func (s *FakeServices) ProvidedBy(module string) []ServiceKey {
	var out []ServiceKey
	for _, k := range s.Provided() {
		s.mu.Lock()
		record := s.live[k]
		s.mu.Unlock()
		if record != nil && record.provider == module {
			out = append(out, k)
		}
	}
	return out
}

// For returns the module-bound view the host would hand module: Provide
// only declared services, Get only consumed ones.
func (s *FakeServices) For(module string, provides []sdk.ServiceDeclaration, consumes []sdk.ServiceRequirement) sdk.Services {
	return &boundServices{registry: s, module: module, provides: slices.Clone(provides), consumes: slices.Clone(consumes)}
}

type boundServices struct {
	registry *FakeServices
	module   string
	provides []sdk.ServiceDeclaration
	consumes []sdk.ServiceRequirement
}

var _ sdk.Services = (*boundServices)(nil)

func (b *boundServices) Provide(name string, version int, impl any) (sdk.Registration, error) {
	if !slices.Contains(b.provides, sdk.ServiceDeclaration{Name: name, Version: version}) {
		return nil, hostkit.NewUndeclaredProvide(b.module, name, version)
	}
	return b.registry.provide(b.module, name, version, impl)
}

func (b *boundServices) Get(name string, version int) (sdk.ServiceHandle, error) {
	if !slices.ContainsFunc(b.consumes, func(r sdk.ServiceRequirement) bool { return r.Name == name && r.Version == version }) {
		return nil, hostkit.NewUndeclaredConsume(b.module, name, version)
	}
	return b.registry.get(name, version)
}

type fakeHandle struct {
	registry *FakeServices
	record   *fakeProvided
	name     string
	version  int
}

var _ sdk.ServiceHandle = (*fakeHandle)(nil)

func (h *fakeHandle) Name() string { return h.name }
func (h *fakeHandle) Version() int { return h.version }
func (h *fakeHandle) Value() (any, error) {
	h.registry.mu.Lock()
	defer h.registry.mu.Unlock()
	if !h.record.alive {
		return nil, hostkit.NewServiceClosed(h.name, h.version, h.record.provider)
	}
	return h.record.impl, nil
}
