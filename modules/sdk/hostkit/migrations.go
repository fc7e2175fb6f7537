package hostkit

import "github.com/kimiapp/kimi/modules/sdk"

// ValidateMigrations checks a module's migration list: every step has a
// non-empty unique name and an Up function.
func ValidateMigrations(module string, migrations []sdk.Migration) error {
	seen := make(map[string]bool, len(migrations))
	for i, m := range migrations {
		if m.Name == "" {
			return contractErrorf("module %s migration %d has no name", pyRepr(module), i+1)
		}
		if seen[m.Name] {
			return contractErrorf("module %s declares migration %s twice", pyRepr(module), pyRepr(m.Name))
		}
		seen[m.Name] = true
		if m.Up == nil {
			return contractErrorf("module %s migration %s has no function", pyRepr(module), pyRepr(m.Name))
		}
	}
	return nil
}
