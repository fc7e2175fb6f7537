// Command hangkimi is Kimi built with three misbehaving test modules for
// the start-order and shutdown tests (cmd/kimi/startorder_test.go):
//   - hang_start: its Start never returns and ignores its ctx, while
//     KIMI_TEST_HANG contains "start";
//   - hang_close: its Close never returns and ignores its ctx, while
//     KIMI_TEST_HANG contains "close";
//   - hang_handler: publishes one event of its own at Start and handles it
//     with a handler that never returns and ignores its ctx, while
//     KIMI_TEST_HANG contains "handler". Its Start returns once the
//     handler is running, so the handler is hung when serve is ready.
package main

import (
	"context"
	"os"
	"strings"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/modules/all"
	"github.com/kimiapp/kimi/modules/sdk"
)

func main() {
	hang := os.Getenv("KIMI_TEST_HANG")
	specs := append(all.Specs(),
		spec("hang_start", &module{hangStart: strings.Contains(hang, "start")}),
		spec("hang_close", &module{hangClose: strings.Contains(hang, "close")}),
		spec("hang_handler", &module{hangHandler: strings.Contains(hang, "handler")}),
	)
	os.Exit(app.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr, specs...))
}

func spec(name string, m *module) sdk.Spec {
	return sdk.Spec{Name: name, Version: "1.0.0", APIVersion: sdk.APIVersion,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return m, nil }}
}

type module struct {
	hangStart, hangClose, hangHandler bool
}

func (m *module) Migrations() []sdk.Migration { return nil }

func (m *module) Start(ctx context.Context, rt *sdk.Runtime) error {
	if m.hangStart {
		select {} // ignores ctx: the host's start timeout must contain it
	}
	if m.hangHandler {
		running := make(chan struct{})
		topic := rt.ModuleName + ".ping"
		if _, err := rt.Events.Subscribe(topic, func(context.Context, sdk.Event) error {
			close(running)
			select {} // ignores ctx: the bus's close grace must contain it
		}); err != nil {
			return err
		}
		if err := rt.Events.Publish(topic, map[string]any{"n": 1}); err != nil {
			return err
		}
		select {
		case <-running:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (m *module) Close(context.Context) error {
	if m.hangClose {
		select {} // ignores ctx: the host's close bound must contain it
	}
	return nil
}
