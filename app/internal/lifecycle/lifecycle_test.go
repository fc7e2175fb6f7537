package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder records the calls the parts receive, in order.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// part returns a part that records "start <name>" and "close <name>" and
// fails its start with startErr.
func (r *recorder) part(name string, startErr error) Part {
	return Part{Name: name,
		Start: func(context.Context) error { r.add("start " + name); return startErr },
		Close: func(context.Context) error { r.add("close " + name); return nil }}
}

func TestStartAndCloseOrder(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		parts     func(r *recorder) []Part
		wantErr   string
		wantCalls []string
	}{
		{
			name:      "all start in order and close in reverse",
			parts:     func(r *recorder) []Part { return []Part{r.part("a", nil), r.part("b", nil), r.part("c", nil)} },
			wantCalls: []string{"start a", "start b", "start c", "close c", "close b", "close a"},
		},
		{
			name:    "a failed start stops the list; the reached parts close, the others are released",
			parts:   func(r *recorder) []Part { return []Part{r.part("a", nil), r.part("b", boom), r.part("c", nil)} },
			wantErr: "lifecycle: start b: boom",
			// c never started: its Close releases what its constructor holds.
			wantCalls: []string{"start a", "start b", "close c", "close b", "close a"},
		},
		{
			name: "an optional part's failure is logged and the list goes on",
			parts: func(r *recorder) []Part {
				p := r.part("b", boom)
				p.Optional = true
				return []Part{r.part("a", nil), p, r.part("c", nil)}
			},
			wantCalls: []string{"start a", "start b", "start c", "close c", "close b", "close a"},
		},
		{
			name: "a panicking start is a failed start",
			parts: func(r *recorder) []Part {
				p := r.part("a", nil)
				p.Start = func(context.Context) error { r.add("start a"); panic("kaboom") }
				return []Part{p, r.part("b", nil)}
			},
			wantErr:   "lifecycle: start a: panic: kaboom",
			wantCalls: []string{"start a", "close b", "close a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			run := New(slog.New(slog.DiscardHandler))
			err := run.Start(context.Background(), tt.parts(rec)...)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Fatalf("Start = %v, want %q", err, tt.wantErr)
			}
			if err := run.Close(context.Background()); err != nil {
				t.Fatalf("Close = %v", err)
			}
			if got := rec.got(); !slices.Equal(got, tt.wantCalls) {
				t.Fatalf("calls = %q, want %q", got, tt.wantCalls)
			}
			if err := run.Close(context.Background()); err != nil || len(rec.got()) != len(tt.wantCalls) {
				t.Fatalf("a second Close did something: %v, %q", err, rec.got())
			}
		})
	}
}

func TestStartingNamesThePartsNotYetUp(t *testing.T) {
	run := New(slog.New(slog.DiscardHandler))
	entered, release := make(chan struct{}), make(chan struct{})
	slow := Part{Name: "modules", Start: func(context.Context) error { close(entered); <-release; return nil }}
	done := make(chan error, 1)
	go func() {
		done <- run.Start(context.Background(), Part{Name: "http"}, slow, Part{Name: "results"})
	}()
	<-entered
	if got := run.Starting(); !slices.Equal(got, []string{"modules", "results"}) {
		t.Fatalf("Starting while modules start = %q", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := run.Starting(); len(got) != 0 {
		t.Fatalf("Starting after all started = %q", got)
	}
	// A later call's parts are starting until they are up.
	if err := run.Start(context.Background(), Part{Name: "late"}); err != nil || len(run.Starting()) != 0 {
		t.Fatalf("late Start = %v, Starting = %q", err, run.Starting())
	}
	_ = run.Close(context.Background())
	if err := run.Start(context.Background(), Part{Name: "after"}); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestBudgets(t *testing.T) {
	hang := func(ctx context.Context) error { select {} }
	honour := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name    string
		start   func(context.Context) error
		close   func(context.Context) error
		closeBy time.Duration // the overall bound given to Close (0: none)
		wantErr string        // of Start, else of Close
	}{
		{name: "a start that ignores its budget is abandoned", start: hang, wantErr: "did not finish within its budget (50ms)"},
		{name: "a start that honours its budget fails with its ctx's error", start: honour, wantErr: "context deadline exceeded"},
		{name: "a close that ignores its budget is abandoned", close: hang, wantErr: "did not finish within its budget (50ms)"},
		{name: "the overall close bound cuts a part's own budget", close: func(ctx context.Context) error {
			if d, ok := ctx.Deadline(); !ok || time.Until(d) > minCloseSlice+10*time.Millisecond {
				return errors.New("the close ctx does not carry the overall bound")
			}
			<-ctx.Done()
			return nil
		}, closeBy: 30 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := New(slog.New(slog.DiscardHandler))
			p := Part{Name: "p", Start: tt.start, Close: tt.close, StartBudget: 50 * time.Millisecond, CloseBudget: 50 * time.Millisecond}
			if tt.closeBy > 0 {
				p.CloseBudget = time.Minute
			}
			err := run.Start(context.Background(), p)
			if tt.start != nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Start = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tt.closeBy > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.closeBy)
				defer cancel()
			}
			err = run.Close(ctx)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Close = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestCancelledStartStopsTheList(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{}
	first := rec.part("a", nil)
	first.Start = func(context.Context) error { rec.add("start a"); cancel(); return nil }
	run := New(slog.New(slog.DiscardHandler))
	if err := run.Start(ctx, first, rec.part("b", nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start = %v, want context.Canceled", err)
	}
	_ = run.Close(context.Background())
	if got, want := rec.got(), []string{"start a", "close b", "close a"}; !slices.Equal(got, want) {
		t.Fatalf("calls = %q, want %q", got, want)
	}
}

// TestAddedPartsStartOnTheNextStartOrAreReleased: parts added without a
// start are started by the next Start after the earlier ones, or, never
// started, released by Close; Idle is closed while no Start runs.
func TestAddedPartsStartOnTheNextStartOrAreReleased(t *testing.T) {
	t.Run("started by the next Start", func(t *testing.T) {
		rec := &recorder{}
		run := New(slog.New(slog.DiscardHandler))
		if err := run.Start(context.Background(), rec.part("store", nil)); err != nil {
			t.Fatal(err)
		}
		run.Add(rec.part("admin", nil), rec.part("modules", nil))
		if got := run.Starting(); !slices.Equal(got, []string{"admin", "modules"}) {
			t.Fatalf("Starting after Add = %q", got)
		}
		if err := run.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		_ = run.Close(context.Background())
		want := []string{"start store", "start admin", "start modules", "close modules", "close admin", "close store"}
		if got := rec.got(); !slices.Equal(got, want) {
			t.Fatalf("calls = %q, want %q", got, want)
		}
	})
	t.Run("released when never started", func(t *testing.T) {
		rec := &recorder{}
		run := New(slog.New(slog.DiscardHandler))
		run.Add(rec.part("a", nil), rec.part("b", nil))
		_ = run.Close(context.Background())
		if got, want := rec.got(), []string{"close b", "close a"}; !slices.Equal(got, want) {
			t.Fatalf("calls = %q, want %q", got, want)
		}
	})
	t.Run("idle while no Start runs", func(t *testing.T) {
		run := New(slog.New(slog.DiscardHandler))
		select {
		case <-run.Idle():
		default:
			t.Fatal("a new runner is not idle")
		}
		entered, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- run.Start(context.Background(), Part{Name: "slow", Start: func(context.Context) error { close(entered); <-release; return nil }})
		}()
		<-entered
		idle := run.Idle()
		select {
		case <-idle:
			t.Fatal("idle while a part starts")
		default:
		}
		close(release)
		<-idle
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestCloseKeepsTheLastPartsBudget: a part that hangs in Close is cut so
// that the parts closing after it (the store's checkpoint, last) still get
// their own budget before the overall deadline.
func TestCloseKeepsTheLastPartsBudget(t *testing.T) {
	var storeLeft time.Duration
	store := Part{Name: "store", CloseBudget: 200 * time.Millisecond, Close: func(ctx context.Context) error {
		d, ok := ctx.Deadline()
		if !ok {
			return errors.New("no deadline")
		}
		storeLeft = time.Until(d)
		return nil
	}}
	hung := Part{Name: "modules", CloseBudget: time.Minute, Close: func(ctx context.Context) error { select {} }}
	run := New(slog.New(slog.DiscardHandler))
	if err := run.Start(context.Background(), store, hung); err != nil {
		t.Fatal(err)
	}
	// 1 s: the store's 200 ms and its grace are set aside, the hung part
	// gets what is left less its own grace.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := run.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "lifecycle: close modules") {
		t.Fatalf("Close = %v, want the hung part's overrun", err)
	}
	if storeLeft < 150*time.Millisecond {
		t.Fatalf("the store had %s to close after the hung part, want about its 200ms budget", storeLeft)
	}
}
