package discord

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// Flapping-gateway tests: the real Bot against fakediscord's flapping
// gateway, with the reconnect loop on a clock the test drives. Each timer
// the loop sets is handed to the test (flapClock.timers), which reads the
// wait asked for and fires it: no test sleeps for a backoff, and no
// assertion depends on how fast the machine is.

// flapTimer is one timer the loop set.
type flapTimer struct {
	d    time.Duration
	fire func()
}

// flapClock is a clock moved only by the test; the fake Discord reads it
// too, so its session start window resets on it.
type flapClock struct {
	mu     sync.Mutex
	now    time.Time
	timers chan flapTimer
}

func newFlapClock() *flapClock {
	return &flapClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), timers: make(chan flapTimer, 16)}
}

func (c *flapClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *flapClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// After hands the timer to the test; firing it moves the clock by d.
func (c *flapClock) After(d time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	var once sync.Once
	stopped := make(chan struct{})
	c.timers <- flapTimer{d: d, fire: func() {
		once.Do(func() {
			select {
			case <-stopped:
			default:
				c.add(d)
				ch <- c.Now()
			}
		})
	}}
	return ch, func() { once.Do(func() { close(stopped) }) }
}

var _ clock = (*flapClock)(nil)

// flapBot is a connBot on clk with the real backoff base.
func flapBot(t *testing.T, f *fakediscord.Server, clk *flapClock) *Bot {
	t.Helper()
	b, _ := connBot(t, f, connStore(t), connOpts{token: f.Token()})
	b.backoffBase, b.clock = backoffBase, clk
	return b
}

// nextTimer waits for the loop's next timer.
func nextTimer(t *testing.T, clk *flapClock) flapTimer {
	t.Helper()
	select {
	case tm := <-clk.timers:
		return tm
	case <-time.After(connWait):
		t.Fatal("timed out waiting for the reconnect loop's next wait")
		return flapTimer{}
	}
}

// backoffWindow is the range backoff draws attempt n's wait from.
func backoffWindow(n int) (lo, hi time.Duration) {
	d := backoffBase
	for i := 1; i < n && d < backoffMax; i++ {
		d *= 2
	}
	d = min(d, backoffMax)
	return d / 2, d
}

// TestFlappingGatewayGetsGrowingDelays: a gateway that closes every
// connection right after READY or RESUMED is re-dialled after ever longer
// waits (each in its attempt's window: 1 s, 2 s, 4 s … doubling, with
// jitter), not every second.
func TestFlappingGatewayGetsGrowingDelays(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	f.FlapGateway(fakediscord.CloseUnknownError) // resumable: each re-dial resumes
	clk := newFlapClock()
	b := flapBot(t, f, clk)
	b.Start(context.Background())
	var prev time.Duration
	for n := 1; n <= 9; n++ {
		tm := nextTimer(t, clk)
		lo, hi := backoffWindow(n)
		if tm.d < lo || tm.d > hi || tm.d < prev {
			t.Fatalf("wait %d = %s, want within [%s, %s] and not below the previous %s", n, tm.d, lo, hi, prev)
		}
		prev = tm.d
		tm.fire()
	}
	if gs := f.GatewayStats(); gs.Resumes == 0 || gs.Identifies != 1 {
		t.Errorf("gateway saw %+v, want one identify, then resumes", gs)
	}
}

// TestStableConnectionResetsTheBackoff: after flapping, a connection that
// stays up for stableAfter starts the backoff again at its first window;
// one that stays up for less keeps it growing.
func TestStableConnectionResetsTheBackoff(t *testing.T) {
	const flaps = 5
	for _, tc := range []struct {
		name    string
		up      time.Duration
		attempt int // of the wait after the drop
	}{
		{"up for a minute", stableAfter, 1},
		{"up for less", stableAfter - time.Second, flaps + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, fakediscord.Options{})
			f.FlapGateway(fakediscord.CloseUnknownError)
			clk := newFlapClock()
			b := flapBot(t, f, clk)
			b.Start(context.Background())
			for n := 1; n <= flaps; n++ {
				tm := nextTimer(t, clk)
				if lo, hi := backoffWindow(n); tm.d < lo || tm.d > hi {
					t.Fatalf("flap wait %d = %s, want within [%s, %s]", n, tm.d, lo, hi)
				}
				if n == flaps {
					f.FlapGateway(0) // the gateway is healthy again
				}
				tm.fire()
			}
			connWaitState(t, b, StateConnected)
			clk.add(tc.up)
			f.DropConnections()
			tm := nextTimer(t, clk)
			if lo, hi := backoffWindow(tc.attempt); tm.d < lo || tm.d > hi {
				t.Fatalf("wait after the drop = %s, want attempt %d's window [%s, %s]", tm.d, tc.attempt, lo, hi)
			}
		})
	}
}

// TestFlapping4009StaysInsideTheSessionStartBudget: a gateway that closes
// every session with 4009 (session timed out: not resumable) costs an
// Identify per connection, discordgo's own answer to the refused resume
// included; the loop stops while the reserve is left, explains it, and
// goes on by itself when the window resets.
func TestFlapping4009StaysInsideTheSessionStartBudget(t *testing.T) {
	clk := newFlapClock()
	f := newFake(t, fakediscord.Options{Now: clk.Now})
	const total, left = 1000, 60 // reserve: 5% of 1,000 = 50, so 10 identifies
	f.SetSessionStartLimit(total, left, 5*time.Hour)
	f.FlapGateway(fakediscord.CloseSessionTimedOut)
	b := flapBot(t, f, clk)
	b.Start(context.Background())
	reserve := startReserve(total)
	var budgetWait flapTimer
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatalf("no budget stop after %d waits; gateway saw %+v", i, f.GatewayStats())
		}
		tm := nextTimer(t, clk)
		if tm.d > backoffMax {
			budgetWait = tm
			break
		}
		tm.fire()
	}
	_, remaining, resetAfter := f.SessionStarts()
	if remaining != reserve {
		t.Fatalf("session starts left at the stop = %d, want the reserve %d", remaining, reserve)
	}
	if gs := f.GatewayStats(); gs.Identifies != left-reserve {
		t.Fatalf("identifies = %d, want %d", gs.Identifies, left-reserve)
	}
	// gateway/bot's reset_after is in milliseconds; the loop waits a
	// margin past it.
	if budgetWait.d != resetAfter.Truncate(time.Millisecond)+startBudgetMargin {
		t.Errorf("budget wait = %s, want until the reset (%s)", budgetWait.d, resetAfter)
	}
	st := connWaitState(t, b, StateStopped)
	if st.StartLimitStop == nil || st.StartLimitStop.Remaining != reserve || st.StartLimitStop.Total != total ||
		!st.RetryAt.Equal(clk.Now().Add(budgetWait.d-startBudgetMargin)) || st.Identifies != left-reserve {
		t.Fatalf("status = %+v", st)
	}
	for _, want := range []string{"session start budget is nearly spent", "50 of 1000 left", "resets at 2030-01-02 08:04 UTC"} {
		if !strings.Contains(st.Summary(clk.Now()), want) {
			t.Errorf("summary %q lacks %q", st.Summary(clk.Now()), want)
		}
	}
	// At the reset the loop goes on by itself, on a full window.
	f.FlapGateway(0)
	budgetWait.fire()
	connWaitState(t, b, StateConnected)
	if _, remaining, _ := f.SessionStarts(); remaining != total-1 {
		t.Fatalf("after the reset %d left, want %d", remaining, total-1)
	}
	if st := b.Status(); st.StartLimitStop != nil || st.SessionStartLimit.Remaining != total-1 {
		t.Fatalf("status after the reset = %+v", st)
	}
}
