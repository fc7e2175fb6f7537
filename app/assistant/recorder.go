package assistant

import (
	"sync"
	"time"
)

// Call is one call to the model, as the status card counts it.
type Call struct {
	At time.Time
	// Err is the call's failure (nil: it succeeded); Outcome is its
	// scrubbed, user-facing description ("" when it succeeded).
	Err     error
	Outcome string
	// Backend served or failed it ("primary", "fallback", "demo").
	Backend string
	Latency time.Duration
}

// Recorder keeps the status card's counters in memory: the last call and
// the calls and errors of the current UTC day. The assistant feeds it with
// every model call; Test connection does too. Safe for concurrent use.
type Recorder struct {
	now func() time.Time

	mu          sync.Mutex
	day         string // the UTC date the counts are for
	calls, errs int
	last        Call
	haveLast    bool
	onChange    func()
}

// NewRecorder returns a recorder reading the time from now (nil:
// time.Now); onChange, when set, is called after each record.
func NewRecorder(now func() time.Time, onChange func()) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{now: now, onChange: onChange}
}

// Record counts c (c.At zero: now).
func (r *Recorder) Record(c Call) {
	if c.At.IsZero() {
		c.At = r.now()
	}
	r.mu.Lock()
	r.roll(c.At)
	r.calls++
	if c.Err != nil {
		r.errs++
	}
	r.last, r.haveLast = c, true
	r.mu.Unlock()
	if r.onChange != nil {
		r.onChange()
	}
}

// roll resets the day's counts when t is on a later UTC day.
func (r *Recorder) roll(t time.Time) {
	if d := t.UTC().Format(time.DateOnly); d != r.day {
		if d < r.day {
			return // a late record of an earlier day
		}
		r.day, r.calls, r.errs = d, 0, 0
	}
}

// Counts is what the recorder reports.
type Counts struct {
	// Last is the last call (zero when HaveLast is false).
	Last     Call
	HaveLast bool
	// CallsToday and ErrorsToday count the current UTC day's calls.
	CallsToday, ErrorsToday int
}

// Counts returns the current counts.
func (r *Recorder) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roll(r.now())
	return Counts{Last: r.last, HaveLast: r.haveLast, CallsToday: r.calls, ErrorsToday: r.errs}
}
