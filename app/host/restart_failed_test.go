package host

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestFailedRestartLeavesNothingShownRunning: restarting one module closes
// it and its dependents; when it does not come back, the states say so. p
// (c depends on it) is restarted and either its Start fails, or the
// restart's ctx ends while the modules close (the admin's request gone)
// with the selection still to read from the database. p then shows failed
// with its start error, or stopped; c, closed for the restart, never shows
// running — not once it is closed while p still closes, not afterwards —
// and the unrelated x keeps running.
func TestFailedRestartLeavesNothingShownRunning(t *testing.T) {
	for _, tt := range []struct {
		name string
		// failStart fails p's second Start; cutShort ends the restart's
		// ctx in c's Close (the selection is the stored one).
		failStart, cutShort bool
	}{
		{name: "start fails", failStart: true},
		{name: "restart cut short while closing", cutShort: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var starts atomic.Int32
			p := &testModule{start: func(context.Context, *sdk.Runtime) error {
				if starts.Add(1) > 1 && tt.failStart {
					return errors.New("boom on restart")
				}
				return nil
			}}
			c, x := &testModule{}, &testModule{}
			specs := []sdk.Spec{spec("p", p), spec("c", c, deps("p")), spec("x", x)}
			var opts []rigOption
			if tt.cutShort {
				opts = append(opts, func(o *Options) { o.Selection, o.SelectionSet = nil, false })
			}
			r := newRig(t, specs, opts...)
			if tt.cutShort {
				for _, s := range specs {
					if err := r.h.writeSelection(ctx, s.Name, true, "test"); err != nil {
						t.Fatal(err)
					}
				}
				c.close = func(context.Context) error { cancel(); return nil }
			}
			r.start(t)
			for _, n := range []string{"p", "c", "x"} {
				if st := r.status(t, n); st.State != StateRunning {
					t.Fatalf("%s before the restart = %s %q", n, st.State, st.Reason)
				}
			}
			// c closes first (newest first): while p closes, c is closed.
			var cWhileClosingP State
			var pCloses atomic.Int32
			p.close = func(context.Context) error {
				if pCloses.Add(1) == 1 {
					cWhileClosingP = r.status(t, "c").State
				}
				return nil
			}

			err := r.h.Restart(ctx, "p", "tester")
			if tt.failStart && err != nil {
				t.Fatalf("Restart = %v", err)
			}
			if cWhileClosingP == StateRunning {
				t.Errorf("c, already closed, shown %s while p closed", cWhileClosingP)
			}
			pst, cst := r.status(t, "p"), r.status(t, "c")
			switch {
			case tt.failStart:
				if pst.State != StateFailed || !strings.Contains(pst.Reason, "boom on restart") {
					t.Errorf("p = %s %q; want failed with its start error", pst.State, pst.Reason)
				}
			case pst.State == StateRunning:
				t.Errorf("p = %s %q after a restart cut short (Restart = %v)", pst.State, pst.Reason, err)
			}
			if cst.State == StateRunning || cst.State == StateStarting {
				t.Errorf("c = %s %q; closed for the restart and not started again (Restart = %v)", cst.State, cst.Reason, err)
			}
			// A failed start is closed too.
			if want := map[bool]int{true: 2, false: 1}[tt.failStart]; p.closed != want || c.closed != 1 {
				t.Errorf("closed p %d, c %d times; want %d and 1", p.closed, c.closed, want)
			}
			if st := r.status(t, "x"); st.State != StateRunning || x.closed != 0 {
				t.Errorf("x = %s, closed %d times; a module outside the restart is left alone", st.State, x.closed)
			}
			t.Logf("Restart = %v; p = %s %q; c = %s %q", err, pst.State, pst.Reason, cst.State, cst.Reason)
		})
	}
}

// TestRestartWithAnUnreadableSelectionClosesNothing: the selection is read
// before anything closes, so a restart that cannot read it (the store's
// reader gone) fails with the reason and leaves p and its dependent
// running, not closed.
func TestRestartWithAnUnreadableSelectionClosesNothing(t *testing.T) {
	ctx := context.Background()
	p, c := &testModule{}, &testModule{}
	specs := []sdk.Spec{spec("p", p), spec("c", c, deps("p"))}
	r := newRig(t, specs, func(o *Options) { o.Selection, o.SelectionSet = nil, false })
	for _, s := range specs {
		if err := r.h.writeSelection(ctx, s.Name, true, "test"); err != nil {
			t.Fatal(err)
		}
	}
	r.start(t)
	if err := r.st.Reader().Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.h.Restart(ctx, "p", "tester"); err == nil || !strings.Contains(err.Error(), "read the module selection") {
		t.Fatalf("Restart = %v; want the selection's read error", err)
	}
	for name, m := range map[string]*testModule{"p": p, "c": c} {
		if st := r.status(t, name); st.State != StateRunning || m.closed != 0 {
			t.Errorf("%s = %s %q, closed %d times; want running, never closed", name, st.State, st.Reason, m.closed)
		}
	}
}
