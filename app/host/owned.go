package host

// commandDeclarers maps each top-level command name that a selected module
// other than module declares to that module: a module's guild command set
// must not take a name another module owns (sdk.Spec.Commands), or the
// owner's AddCommand would fail once it starts.
func (h *Host) commandDeclarers(module string) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for name, e := range h.entries {
		if name == module || !e.selected {
			continue
		}
		for _, c := range e.spec.Commands {
			out[c] = name
		}
	}
	return out
}
