package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// plan is preflight's outcome: which requested modules start, in which
// order, and why the others do not. No module code runs to make it.
type plan struct {
	// order is every requested, installed module in dependency order
	// (dependencies first, then request order), refused ones included.
	order []string
	// problems are selection-level refusals that name no installed module
	// (a duplicate in KIMI_MODULES, a module that is not installed).
	problems []string
	// failed and disabled give the reason of each module that will not
	// start; a module in neither is to be created.
	failed   map[string]string
	disabled map[string]string
}

func (p *plan) refused(name string) bool {
	_, f := p.failed[name]
	_, d := p.disabled[name]
	return f || d
}

// preflight validates the selection against the installed specs, with the
// original's messages (reference §1.4). Unlike the original it never
// aborts: a refused module is failed (or, for activation capabilities,
// disabled) with the message as its reason, and so are its dependents.
func preflight(installed map[string]sdk.Spec, requested []string, caps sdk.Capabilities, hasFileReader bool) *plan {
	p := &plan{failed: map[string]string{}, disabled: map[string]string{}}
	var names []string
	dup := false
	for _, n := range requested {
		if slices.Contains(names, n) {
			dup = true
			continue
		}
		names = append(names, n)
	}
	if dup {
		p.problems = append(p.problems, "KIMI_MODULES contains a duplicate module name")
	}
	var present []string
	for _, n := range names {
		if _, ok := installed[n]; !ok {
			p.problems = append(p.problems, "Configured Kimi module is not installed: "+n)
			continue
		}
		present = append(present, n)
	}

	// Dependency order: depth-first, dependencies first, then request order.
	const (
		unvisited = iota
		visiting
		done
	)
	mark := map[string]int{}
	var stack []string
	var visit func(n string)
	visit = func(n string) {
		switch mark[n] {
		case done:
			return
		case visiting:
			msg := fmt.Sprintf("Kimi module dependency cycle includes %s", hostkit.Repr(n))
			for _, m := range stack[slices.Index(stack, n):] {
				if _, ok := p.failed[m]; !ok {
					p.failed[m] = msg
				}
			}
			return
		}
		mark[n] = visiting
		stack = append(stack, n)
		for _, d := range installed[n].Dependencies {
			if !slices.Contains(present, d) {
				if _, ok := p.failed[n]; !ok {
					p.failed[n] = fmt.Sprintf("Kimi module %s requires active module %s", hostkit.Repr(n), hostkit.Repr(d))
				}
				continue
			}
			visit(d)
		}
		stack = stack[:len(stack)-1]
		mark[n] = done
		p.order = append(p.order, n)
	}
	for _, n := range present {
		visit(n)
	}

	// Table prefixes: equal after normalization (the original's check), one
	// a prefix of another at a "_" boundary, or the core's reserved prefix.
	// The later module in request order is refused.
	var seen []string
	for _, n := range present {
		prefix := hostkit.TablePrefix(n)
		if prefix == store.ReservedTablePrefix || strings.HasPrefix(prefix+"_", store.ReservedTablePrefix+"_") {
			p.fail(n, fmt.Sprintf("Kimi module %s uses table prefix %s, which is reserved for core tables", hostkit.Repr(n), hostkit.Repr(prefix+"_")))
			continue
		}
		if strings.HasPrefix(strings.ToLower(prefix), "sqlite") {
			p.fail(n, fmt.Sprintf("Kimi module %s uses table prefix %s, which is reserved for SQLite's own tables", hostkit.Repr(n), hostkit.Repr(prefix+"_")))
			continue
		}
		for _, o := range seen {
			op := hostkit.TablePrefix(o)
			switch {
			case op == prefix:
				p.fail(n, fmt.Sprintf("Kimi modules %s and %s share normalized prefix %s", hostkit.Repr(o), hostkit.Repr(n), hostkit.Repr(prefix)))
			case strings.HasPrefix(prefix+"_", op+"_") || strings.HasPrefix(op+"_", prefix+"_"):
				short, long := o, n
				if len(prefix) < len(op) {
					short, long = n, o
				}
				p.fail(n, fmt.Sprintf("Kimi modules %s and %s have overlapping table prefixes: %s tables can take %s tables' names",
					hostkit.Repr(o), hostkit.Repr(n), hostkit.Repr(hostkit.TablePrefix(short)+"_"), hostkit.Repr(hostkit.TablePrefix(long)+"_")))
			}
		}
		seen = append(seen, n)
		// A compiled-in module that is not requested keeps its tables
		// (disabled modules' tables stay): a requested module whose prefix
		// overlaps it could read and write them.
		for _, o := range slices.Sorted(maps.Keys(installed)) {
			if o == n || slices.Contains(present, o) {
				continue
			}
			op := hostkit.TablePrefix(o)
			if op == prefix || strings.HasPrefix(prefix+"_", op+"_") || strings.HasPrefix(op+"_", prefix+"_") {
				p.fail(n, fmt.Sprintf("Kimi module %s has a table prefix overlapping that of compiled-in module %s (%s and %s): it could reach the kept tables of %s",
					hostkit.Repr(n), hostkit.Repr(o), hostkit.Repr(prefix+"_"), hostkit.Repr(op+"_"), hostkit.Repr(o)))
				break
			}
		}
	}

	for _, n := range p.order {
		spec := installed[n]
		// The reference's order: API version, capabilities, declarations
		// (Validate checks the API version first, then the declarations).
		if spec.APIVersion != sdk.APIVersion {
			p.fail(n, spec.Validate().Error())
			continue
		}
		if err := hostkit.CheckCapabilities(spec, caps); err != nil {
			p.fail(n, err.Error())
			continue
		}
		if err := spec.Validate(); err != nil {
			p.fail(n, err.Error())
			continue
		}
		for _, c := range spec.Consumes {
			provider, ok := installed[c.Provider]
			if ok && slices.Contains(provider.Provides, sdk.ServiceDeclaration{Name: c.Name, Version: c.Version}) {
				continue
			}
			p.fail(n, fmt.Sprintf("Kimi module %s consumes %s@%d from %s, but that provider does not declare it",
				hostkit.Repr(n), c.Name, c.Version, hostkit.Repr(c.Provider)))
			break
		}
		if spec.Permissions.ToolFiles && !hasFileReader {
			p.fail(n, fmt.Sprintf("Kimi module %s declares tool_files, but this host has no file reader", hostkit.Repr(n)))
		}
	}

	// A module owns the tool and command names it declares: two selected
	// modules declaring one name are both refused, each reason naming the
	// other, before either is created.
	presentSpecs := make([]sdk.Spec, 0, len(present))
	for _, n := range present {
		presentSpecs = append(presentSpecs, installed[n])
	}
	for n, msg := range hostkit.DeclaredNameConflicts(presentSpecs) {
		p.fail(n, msg)
	}
	// Core owns /ask and /stop.
	for _, s := range presentSpecs {
		if msg := hostkit.CoreCommandConflict(s); msg != "" {
			p.fail(s.Name, msg)
		}
	}

	// Activation capabilities soft-disable; refusals spread to dependents
	// (order has dependencies first, so one pass suffices).
	for _, n := range p.order {
		if p.refused(n) {
			continue
		}
		spec := installed[n]
		if missing := hostkit.MissingActivationCapabilities(spec, caps); len(missing) > 0 {
			p.disabled[n] = hostkit.ActivationDisabledReason(missing)
			continue
		}
		for _, d := range spec.Dependencies {
			if _, ok := p.failed[d]; ok {
				p.disabled[n] = "dependency failed: " + d
				break
			}
			if _, ok := p.disabled[d]; ok {
				p.disabled[n] = "dependency disabled: " + d
				break
			}
		}
	}
	return p
}

func (p *plan) fail(n, msg string) {
	if _, ok := p.failed[n]; !ok {
		p.failed[n] = msg
	}
}
