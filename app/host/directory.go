package host

import "sync"

// Directory answers which modules are running. It is built before the
// host and handed to it (Options.Directory) and to whatever is built
// before the host and needs the answer — the proposals service, which the
// host in turn hands to the modules — so neither waits for the other to
// exist. The zero value is ready to use.
type Directory struct {
	mu      sync.RWMutex
	running map[string]bool
}

// NewDirectory returns an empty directory: no module runs yet.
func NewDirectory() *Directory { return &Directory{} }

// Running reports whether the module named name is running.
func (d *Directory) Running(name string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.running[name]
}

// set records whether name is running.
func (d *Directory) set(name string, running bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running == nil {
		d.running = map[string]bool{}
	}
	if running {
		d.running[name] = true
	} else {
		delete(d.running, name)
	}
}
