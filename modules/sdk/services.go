package sdk

import (
	"fmt"
	"reflect"
	"slices"
)

// Services is the inter-module service port. A provider declares
// Spec.Provides and calls Provide in Start; a consumer declares
// Spec.Consumes (and depends on the provider) and calls Get.
type Services interface {
	// Provide publishes impl as name@version. The service must be declared
	// ("module 'm' did not declare that it provides n@v") and have no other
	// live provider ("service n@v is already provided by 'p'"). Closing the
	// registration (or the module) retires it.
	Provide(name string, version int, impl any) (Registration, error)
	// Get returns a handle on a consumed service ("module 'm' did not
	// declare that it consumes n@v"); *ServiceUnavailableError when nobody
	// provides it.
	Get(name string, version int) (ServiceHandle, error)
}

// ServiceHandle is a consumer's handle on a provided service. Call Value
// for every use rather than caching its result: once the provider closes,
// Value fails with *ServiceUnavailableError ("service n@v closed with module
// 'p'"), even if the service is provided again later.
type ServiceHandle interface {
	// Name is the service's name.
	Name() string
	// Version is the service's version.
	Version() int
	// Value returns the provider's implementation, or *ServiceUnavailableError
	// once the provider closed.
	Value() (any, error)
}

// ServiceAs returns the handle's current value as T, or an error when the
// provider closed or the value is not a T ("service n@v is not a T").
func ServiceAs[T any](h ServiceHandle) (T, error) {
	var zero T
	v, err := h.Value()
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("service %s@%d is not a %v", h.Name(), h.Version(), reflect.TypeFor[T]())
	}
	return t, nil
}

// ServiceDeclaration is a service a module provides.
type ServiceDeclaration struct {
	Name    string
	Version int
}

// String renders the reference's repr, ServiceDeclaration(name='n', version=v).
func (d ServiceDeclaration) String() string {
	return fmt.Sprintf("ServiceDeclaration(name=%s, version=%d)", pyRepr(d.Name), d.Version)
}

// ServiceRequirement is a service a module consumes from Provider.
type ServiceRequirement struct {
	Name     string
	Version  int
	Provider string
}

// String renders the reference's repr.
func (r ServiceRequirement) String() string {
	return fmt.Sprintf("ServiceRequirement(name=%s, version=%d, provider=%s)", pyRepr(r.Name), r.Version, pyRepr(r.Provider))
}

// validateServices checks a module's service declarations. Messages:
// "module 'm' provides invalid service ServiceDeclaration(…)",
// "module 'm' provides ('n', v) twice",
// "module 'm' consumes invalid service ServiceRequirement(…)",
// "module 'm' cannot consume its own service",
// "module 'm' consumes 'n' from 'p' without depending on it",
// "module 'm' consumes n@v twice" / "… from multiple providers".
func validateServices(module string, dependencies []string, provides []ServiceDeclaration, consumes []ServiceRequirement) error {
	type key struct {
		name    string
		version int
	}
	seen := map[key]bool{}
	for _, d := range provides {
		if !serviceNameRE.MatchString(d.Name) || d.Version < 1 {
			return contractErrorf("module %s provides invalid service %s", pyRepr(module), d)
		}
		k := key{d.Name, d.Version}
		if seen[k] {
			return contractErrorf("module %s provides (%s, %d) twice", pyRepr(module), pyRepr(d.Name), d.Version)
		}
		seen[k] = true
	}
	required := map[key]string{}
	for _, r := range consumes {
		if !serviceNameRE.MatchString(r.Name) || r.Version < 1 {
			return contractErrorf("module %s consumes invalid service %s", pyRepr(module), r)
		}
		if r.Provider == module {
			return contractErrorf("module %s cannot consume its own service", pyRepr(module))
		}
		if !slices.Contains(dependencies, r.Provider) {
			return contractErrorf("module %s consumes %s from %s without depending on it", pyRepr(module), pyRepr(r.Name), pyRepr(r.Provider))
		}
		k := key{r.Name, r.Version}
		if prev, ok := required[k]; ok {
			detail := "from multiple providers"
			if prev == r.Provider {
				detail = "twice"
			}
			return contractErrorf("module %s consumes %s@%d %s", pyRepr(module), r.Name, r.Version, detail)
		}
		required[k] = r.Provider
	}
	return nil
}
