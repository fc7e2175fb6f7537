package host

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// serviceKey is name@version.
type serviceKey struct {
	name    string
	version int
}

func (k serviceKey) String() string { return fmt.Sprintf("%s@%d", k.name, k.version) }

// provision is one live (or retired) provision of a service.
type provision struct {
	key      serviceKey
	provider string
	impl     any
	dead     atomic.Bool
}

// serviceBook is the services registry (§2.8): one live provider per
// name@version; a handle binds to the provision it resolved and dies with it.
type serviceBook struct {
	mu   sync.Mutex
	live map[serviceKey]*provision
}

func newServiceBook() *serviceBook { return &serviceBook{live: map[serviceKey]*provision{}} }

func (b *serviceBook) retire(p *provision) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p.dead.Store(true)
	if b.live[p.key] == p {
		delete(b.live, p.key)
	}
}

// retireModule retires every provision of module.
func (b *serviceBook) retireModule(module string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, p := range b.live {
		if p.provider == module {
			p.dead.Store(true)
			delete(b.live, k)
		}
	}
}

// missing lists module's declared services it does not provide now.
func (b *serviceBook) missing(module string, declared []sdk.ServiceDeclaration) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, d := range declared {
		p := b.live[serviceKey{d.Name, d.Version}]
		if p == nil || p.provider != module {
			out = append(out, serviceKey{d.Name, d.Version}.String())
		}
	}
	return out
}

// services is a module's sdk.Services view.
type services struct {
	inst *instance
	book *serviceBook
}

var _ sdk.Services = (*services)(nil)

// Provide implements sdk.Services.
func (s *services) Provide(name string, version int, impl any) (sdk.Registration, error) {
	if s.inst.revoked() {
		return nil, s.inst.revokedErr("services")
	}
	if !slices.Contains(s.inst.spec.Provides, sdk.ServiceDeclaration{Name: name, Version: version}) {
		return nil, hostkit.NewUndeclaredProvide(s.inst.name, name, version)
	}
	k := serviceKey{name, version}
	s.book.mu.Lock()
	// Checked again under the book's lock: revoke sets the flag before
	// retireModule takes the lock, so a provision inserted here is either
	// seen by retireModule or refused.
	if s.inst.revoked() {
		s.book.mu.Unlock()
		return nil, s.inst.revokedErr("services")
	}
	if cur := s.book.live[k]; cur != nil {
		s.book.mu.Unlock()
		return nil, hostkit.NewServiceAlreadyProvided(name, version, cur.provider)
	}
	p := &provision{key: k, provider: s.inst.name, impl: impl}
	s.book.live[k] = p
	s.book.mu.Unlock()
	return registration(func() { s.book.retire(p) }), nil
}

// Get implements sdk.Services.
func (s *services) Get(name string, version int) (sdk.ServiceHandle, error) {
	if s.inst.revoked() {
		return nil, s.inst.revokedErr("services")
	}
	if !slices.ContainsFunc(s.inst.spec.Consumes, func(r sdk.ServiceRequirement) bool { return r.Name == name && r.Version == version }) {
		return nil, hostkit.NewUndeclaredConsume(s.inst.name, name, version)
	}
	s.book.mu.Lock()
	p := s.book.live[serviceKey{name, version}]
	s.book.mu.Unlock()
	if p == nil {
		return nil, hostkit.NewServiceNotProvided(name, version)
	}
	return &handle{p: p, consumer: s.inst}, nil
}

// handle is a consumer's handle on one provision.
type handle struct {
	p        *provision
	consumer *instance
}

func (h *handle) Name() string { return h.p.key.name }
func (h *handle) Version() int { return h.p.key.version }

// Value returns the implementation, or *sdk.ServiceUnavailableError once the
// provider closed (or the consumer did: its views are revoked).
func (h *handle) Value() (any, error) {
	if h.p.dead.Load() {
		return nil, hostkit.NewServiceClosed(h.p.key.name, h.p.key.version, h.p.provider)
	}
	if h.consumer.revoked() {
		return nil, h.consumer.revokedErr("services")
	}
	return h.p.impl, nil
}

// registration adapts a func to sdk.Registration (idempotent).
type registration func()

func (r registration) Close() { r() }

// once wraps fn so it runs at most once.
func once(fn func()) registration {
	var o sync.Once
	return registration(func() { o.Do(fn) })
}

// joinServices renders "declared but did not provide n@v, m@w".
func joinServices(missing []string) string {
	return "declared but did not provide " + strings.Join(missing, ", ")
}
