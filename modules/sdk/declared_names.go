package sdk

import "slices"

// DeclaresTool reports whether the spec declares LLM tool name.
func (s Spec) DeclaresTool(name string) bool { return slices.Contains(s.Tools, name) }

// DeclaresCommand reports whether the spec declares top-level command or
// command group name.
func (s Spec) DeclaresCommand(name string) bool { return slices.Contains(s.Commands, name) }

// validateDeclaredNames checks the declared tool and command names: each
// non-empty and listed once ("module 'm' declares tool 'x' twice").
func validateDeclaredNames(module string, tools, commands []string) error {
	for _, list := range []struct {
		kind  string
		names []string
	}{{"tool", tools}, {"command", commands}} {
		for i, n := range list.names {
			if n == "" {
				return contractErrorf("module %s declares an empty %s name", pyRepr(module), list.kind)
			}
			if slices.Contains(list.names[:i], n) {
				return contractErrorf("module %s declares %s %s twice", pyRepr(module), list.kind, pyRepr(n))
			}
		}
	}
	return nil
}
