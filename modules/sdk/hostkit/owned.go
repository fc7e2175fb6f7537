package hostkit

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// A module owns the tool and command names its spec declares
// (sdk.Spec.Tools, sdk.Spec.Commands). The host and the sdktest fakes both
// refuse an undeclared registration with these checks, and preflight
// refuses two selected modules declaring one name with
// DeclaredNameConflicts, so a module that creates first cannot take a name
// another module owns.

// CheckToolDeclared refuses a tool the module does not declare:
// "module 'm' did not declare tool 'x'".
func CheckToolDeclared(module string, declared []string, name string) error {
	if slices.Contains(declared, name) {
		return nil
	}
	return &sdk.ModuleContractError{Message: fmt.Sprintf("module %s did not declare tool %s", pyRepr(module), pyRepr(name))}
}

// CheckCommandDeclared refuses a command whose top-level name (its group,
// or its own name) the module does not declare:
// "module 'm' did not declare command 'x'".
func CheckCommandDeclared(module string, declared []string, spec sdk.CommandSpec) error {
	top := cmp.Or(spec.Group, spec.Name)
	if slices.Contains(declared, top) {
		return nil
	}
	return &sdk.ModuleContractError{Message: fmt.Sprintf("module %s did not declare command %s", pyRepr(module), pyRepr(top))}
}

// DeclaredNameConflicts finds tool and command names declared by more than
// one of specs (the selected modules). It returns, for each module in
// such a conflict, the message of its first one, which names both
// modules: "Kimi modules 'a' and 'b' both declare tool 'x'" (also
// "command 'x'"), the modules in specs order. Modules in no conflict are
// absent.
func DeclaredNameConflicts(specs []sdk.Spec) map[string]string {
	out := map[string]string{}
	report := func(a, b, kind, name string) {
		msg := fmt.Sprintf("Kimi modules %s and %s both declare %s %s", pyRepr(a), pyRepr(b), kind, pyRepr(name))
		for _, m := range []string{a, b} {
			if _, ok := out[m]; !ok {
				out[m] = msg
			}
		}
	}
	for _, k := range []struct {
		kind  string
		names func(sdk.Spec) []string
	}{
		{"tool", func(s sdk.Spec) []string { return s.Tools }},
		{"command", func(s sdk.Spec) []string { return s.Commands }},
	} {
		owner := map[string]string{}
		for _, s := range specs {
			for _, n := range k.names(s) {
				if o, ok := owner[n]; ok && o != s.Name {
					report(o, s.Name, k.kind, n)
					continue
				}
				owner[n] = s.Name
			}
		}
	}
	return out
}

// The core commands (the assistant's /ask, /stop, /usage and /forget): no
// module may declare them.
const (
	CommandAsk    = "ask"
	CommandStop   = "stop"
	CommandUsage  = "usage"
	CommandForget = "forget"
)

// CoreCommands are the command names core owns.
var CoreCommands = []string{CommandAsk, CommandStop, CommandUsage, CommandForget}

// CoreCommandConflict refuses a spec declaring a core command:
// "Kimi module 'm' declares command 'ask', which is reserved for Kimi's
// assistant" ("" when none).
func CoreCommandConflict(spec sdk.Spec) string {
	for _, c := range spec.Commands {
		if slices.Contains(CoreCommands, c) {
			return fmt.Sprintf("Kimi module %s declares command %s, which is reserved for Kimi's assistant", pyRepr(spec.Name), pyRepr(c))
		}
	}
	return ""
}
