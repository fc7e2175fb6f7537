package sdktest

import (
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
)

// registration is the fakes' sdk.Registration: Close runs its release
// function once, however often and from however many goroutines it is
// called.
type registration struct {
	once    sync.Once
	release func()
}

var _ sdk.Registration = (*registration)(nil)

func newRegistration(release func()) *registration { return &registration{release: release} }

// Close releases the registration; later calls do nothing.
func (r *registration) Close() { r.once.Do(r.release) }
