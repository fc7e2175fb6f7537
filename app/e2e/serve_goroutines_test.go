package e2e

import (
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/modules/sdk"
)

// parkingModule leaves n goroutines running from its Start (they inherit
// the host's module label) until it closes.
type parkingModule struct {
	n       int
	release chan struct{}
}

func (m *parkingModule) Migrations() []sdk.Migration { return nil }
func (m *parkingModule) Start(context.Context, *sdk.Runtime) error {
	for range m.n {
		go func() { <-m.release }()
	}
	return nil
}
func (m *parkingModule) Close(context.Context) error { close(m.release); return nil }

// TestServeGivesTheHostTheGoroutineLimit: KIMI_MODULE_GOROUTINE_LIMIT set
// to its smallest value reaches the module host serve builds — a module
// running more goroutines than that (and far fewer than the default
// limit) is shown degraded on /modules with the figures, once the host has
// counted them.
func TestServeGivesTheHostTheGoroutineLimit(t *testing.T) {
	const parkedN = config.MinModuleGoroutineLimit + 50
	if parkedN >= config.DefaultModuleGoroutineLimit {
		t.Fatal("the module's goroutines must be below the default limit, or the test proves nothing")
	}
	mod := &parkingModule{n: parkedN, release: make(chan struct{})}
	spec := sdk.Spec{Name: "parking", Version: "1.0", APIVersion: sdk.APIVersion,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{spec}, modules: "parking",
		env: map[string]string{"KIMI_MODULE_GOROUTINE_LIMIT": strconv.Itoa(config.MinModuleGoroutineLimit)}})
	c := a.signIn()
	// The first count comes one goroutine period (10 s) after the start.
	body := c.waitPage("the module degraded by the goroutine limit", "/modules",
		`data-testid="module-state-parking" data-state="degraded"`, "above the limit of "+strconv.Itoa(config.MinModuleGoroutineLimit)+"<")
	m := regexp.MustCompile(`data-testid="module-reason-parking">running (\d+) goroutines, above the limit of (\d+)<`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/modules does not name the figures:\n%s", body)
	}
	if n, _ := strconv.Atoi(m[1]); n < parkedN {
		t.Errorf("counted %d goroutines, the module runs at least %d", n, parkedN)
	}
}
