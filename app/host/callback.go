package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// onHandlerFailure is the event bus's report of a failed handler: logged
// with the module's logger and reflected in its health.
func (h *Host) onHandlerFailure(module, topic string, err error) {
	h.moduleLogger(module).Error("event handler failed", "topic", topic, "err", err)
	h.health.constrain(module, "callback:event", sdk.HealthDegraded, "event handler for "+topic+" failed: "+boundedDetail(err, 200))
}

// callback runs a host→module callback contained: a ctx cancelled at the
// module's Close (and after the callback timeout), recover, and the
// outcome reflected in the module's health under the callback's kind.
func (h *Host) callback(ctx context.Context, inst *instance, kind, what string, fn func(context.Context) error) error {
	if !inst.running() {
		return inst.revokedErr(kind)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(inst.ctx, cancel)
	defer stop()
	// The callback and the goroutines it starts count as the module's.
	cctx = withModule(cctx, inst.name)
	// Past its budget it shows as running long at once; the timeout below
	// degrades the module.
	endLong := h.long.watch(inst.name, kind+" "+what, time.Now(), h.opts.RunningLongAfter, h.watch.Notify)
	defer endLong()
	err, how := runBounded(cctx, h.opts.CallbackTimeout, h.opts.CancelGrace, fn)
	source := "callback:" + kind
	if err == nil && how == finished {
		h.health.constrain(inst.name, source, sdk.HealthHealthy, "")
		return nil
	}
	var detail string
	switch how {
	case timedOut, abandoned:
		detail = fmt.Sprintf("%s %s exceeded %s", kind, what, seconds(h.opts.CallbackTimeout))
		if how == abandoned {
			detail += " and ignored cancellation"
		}
		if err == nil {
			err = errors.New(detail)
		}
	case cancelled:
		detail = fmt.Sprintf("%s %s was cancelled", kind, what)
		if err == nil {
			err = context.Cause(cctx)
		}
	default:
		detail = fmt.Sprintf("%s %s failed: %s", kind, what, boundedDetail(err, 200))
	}
	h.logFailure(inst, kind+" "+what, err)
	if how == timedOut || how == abandoned {
		inst.log.Error(detail)
	}
	h.health.constrain(inst.name, source, sdk.HealthDegraded, detail)
	return fmt.Errorf("host: %s: %w", detail, err)
}
