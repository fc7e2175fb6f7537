package host

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// PanicError is what a contained callback's panic becomes.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// outcome says how a bounded call ended.
type outcome int

const (
	finished  outcome = iota // fn returned (nil or an error, or panicked)
	timedOut                 // fn returned after its ctx was cancelled at the deadline
	abandoned                // fn ignored cancellation past the grace period: left running
	cancelled                // the parent ctx ended first (shutdown), fn returned
)

// call runs fn under recover: a panic becomes a *PanicError.
func call(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx)
}

// runBounded runs fn with a ctx derived from parent and cancelled after
// timeout; fn that ignores the cancellation is given grace, then
// abandoned — leaked, not killed: Go cannot stop a goroutine.
func runBounded(parent context.Context, timeout, grace time.Duration, fn func(context.Context) error) (error, outcome) {
	// fn sees the bound as its ctx's deadline (ctx.Deadline), as Go code
	// expects; the timer below tells a timeout from a cancelled parent.
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		// fn and the goroutines it starts carry ctx's labels (withModule).
		pprof.SetGoroutineLabels(ctx)
		done <- call(ctx, fn)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var why outcome
	select {
	case err := <-done:
		// fn may honour the deadline and return before the timer's case
		// is chosen: an error after the bound is still its timeout (or
		// the parent's cancellation), not an ordinary failure.
		if err != nil && ctx.Err() != nil {
			if parent.Err() != nil {
				return err, cancelled
			}
			return err, timedOut
		}
		return err, finished
	case <-timer.C:
		why = timedOut
	case <-parent.Done():
		why = cancelled
	}
	cancel()
	graceTimer := time.NewTimer(grace)
	defer graceTimer.Stop()
	select {
	case err := <-done:
		return err, why
	case <-graceTimer.C:
		return nil, abandoned
	}
}

// seconds renders a duration as the original's details do: "60s", "0.05s".
func seconds(d time.Duration) string {
	if d > 100*time.Millisecond {
		d = d.Round(10 * time.Millisecond) // a bound cut to fit a deadline: "3.92s", not nanoseconds
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// boundedDetail is an error as a health detail: at most n characters.
func boundedDetail(err error, n int) string {
	s := err.Error()
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n])
	}
	return s
}

// lifecycleDetail is the original's health detail of a failed start() or
// close(): the timeout, the cancellation or the error.
func lifecycleDetail(what string, limit time.Duration, err error, how outcome) string {
	switch how {
	case timedOut:
		return what + "() exceeded " + seconds(limit)
	case abandoned:
		return what + "() exceeded " + seconds(limit) + " and ignored cancellation"
	case cancelled:
		return what + "() was cancelled before it finished"
	}
	if err == nil {
		return ""
	}
	return boundedDetail(err, 200)
}

// errRevoked is the error of a port view used after its module closed.
type errRevoked struct{ module, port string }

func (e *errRevoked) Error() string {
	return fmt.Sprintf("host: module %s is closed: its %s port was revoked", strconv.Quote(e.module), e.port)
}

func (e *errRevoked) Is(target error) bool { return target == ErrRevoked }

// ErrRevoked matches (errors.Is) every call through a port view after the
// module that received it closed.
var ErrRevoked = errors.New("host: port revoked")

// oneLine flattens an error for a log attribute or detail.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
