package assistant

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Admission limits (the original's TURN_MAX_CONCURRENCY,
// TURN_MAX_CONCURRENCY_PER_USER and LLM_MAX_CONCURRENCY; reference
// assistant.md §2.6).
const (
	DefaultMaxTurns        = 16
	DefaultMaxTurnsPerUser = 2
	DefaultMaxModelCalls   = 8
	// StopWait bounds how long StopReply waits for cancelled turns to end
	// before it says cleanup is still finishing.
	StopWait = 10 * time.Second
)

// The original's admission and STOP texts (reference assistant.md §10).
const (
	// BusyText answers a trigger admission refused (too many turns at
	// once, for everyone or for the caller) or a conversation that is
	// already answering.
	BusyText = "I'm handling as many requests as I can right now. Please try again in a moment."
	// StopNoneText answers a STOP with nothing of the caller's running
	// in the channel.
	StopNoneText = "I couldn't find active work to stop here."
)

// StopText is the original's answer to a STOP that cancelled n (> 0)
// running turns: complete reports whether they have all ended.
func StopText(n int, complete bool) string {
	if n <= 0 {
		return StopNoneText
	}
	what := strconv.Itoa(n) + " active response"
	if n != 1 {
		what += "s"
	}
	if complete {
		return "Stopped " + what + ". Cleanup is complete."
	}
	return "Stopped " + what + ". Cleanup is still finishing in the background."
}

// Clock is the turn's time: the date in the prompt, the status throttle,
// the idle notice and the whole-turn deadline. Tests drive a fake one.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f on its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet.
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc implements Clock with time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// admission counts running turns without ever waiting: at most max at
// once and perUser for one caller.
type admission struct {
	mu      sync.Mutex
	max     int
	perUser int
	total   int
	users   map[uint64]int
}

// acquire admits one turn of user, or reports false at once.
func (a *admission) acquire(user uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.total >= a.max || a.users[user] >= a.perUser {
		return false
	}
	a.total++
	a.users[user]++
	return true
}

// release ends one admitted turn of user.
func (a *admission) release(user uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total--
	if a.users[user]--; a.users[user] <= 0 {
		delete(a.users, user)
	}
}

// running is one admitted turn, as STOP finds it.
type running struct {
	user, channel uint64
	cancel        context.CancelCauseFunc
	done          chan struct{}
}

// registry is the running turns by identity.
type registry struct {
	mu    sync.Mutex
	turns map[*running]struct{}
}

func (r *registry) add(t *running) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turns[t] = struct{}{}
}

func (r *registry) remove(t *running) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.turns, t)
}

// matching returns the running turns of user in channel.
func (r *registry) matching(user, channel uint64) []*running {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*running
	for t := range r.turns {
		if t.user == user && t.channel == channel {
			out = append(out, t)
		}
	}
	return out
}

// Stopped is what one Cancel stopped.
type Stopped struct {
	// N is how many running turns were cancelled.
	N int
	// Wait blocks until they have all ended, up to StopWait or ctx, and
	// reports whether they did (nil: nothing to wait for). Test doubles
	// of the assistant set it.
	Wait func(ctx context.Context) bool
}

// Reply is the original's answer to the STOP, the same text on every
// lane (a stop message, /stop): StopNoneText when nothing was running,
// else StopText after waiting for the cleanup (Wait). The lanes add 🛑
// (ReactStopped): a reaction on the stop message, the start of /stop's
// ephemeral answer (which can carry none).
func (s Stopped) Reply(ctx context.Context) string {
	if s.N <= 0 {
		return StopNoneText
	}
	complete := s.Wait == nil || s.Wait(ctx)
	return StopText(s.N, complete)
}

// Cancel stops userID's running turns in channelID (a thread's own id for
// a thread) and reports what it stopped: each ends at once with 🛑 and no
// further answer (chunks not yet posted are not). The Discord side calls
// it for a message that is exactly stop, cancel or abort and for /stop,
// before admission, so STOP never queues behind the work it stops. Only
// the caller's own turns stop.
func (a *Assistant) Cancel(userID, channelID uint64) Stopped {
	ts := a.active.matching(userID, channelID)
	for _, t := range ts {
		t.cancel(errStopped)
	}
	if len(ts) == 0 {
		return Stopped{}
	}
	return Stopped{N: len(ts), Wait: func(ctx context.Context) bool {
		wait, cancel := context.WithTimeout(ctx, StopWait)
		defer cancel()
		for _, t := range ts {
			select {
			case <-t.done:
			case <-wait.Done():
				return false
			}
		}
		return true
	}}
}

// StopReply cancels as Cancel does and returns the answer to the STOP
// (Stopped.Reply: it waits up to StopWait for the cleanup).
func (a *Assistant) StopReply(ctx context.Context, userID, channelID uint64) string {
	return a.Cancel(userID, channelID).Reply(ctx)
}
