package tasks

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// postCall is one call of fakePoster.
type postCall struct {
	channel uint64
	content string
	files   int
	embed   bool
}

// fakePoster records its calls; fail (nil: none) decides each call's
// error by its 1-based number.
type fakePoster struct {
	mu    sync.Mutex
	calls []postCall
	fail  func(n int, c PostChunk) error
	// gate, when set, is waited on by every call (entered is signalled
	// first); inFlight and maxInFlight count concurrent calls.
	gate              chan struct{}
	entered           chan struct{}
	inFlight, maxSeen int
}

var _ Poster = (*fakePoster)(nil)

func (f *fakePoster) Post(ctx context.Context, guild, channel uint64, c PostChunk) (uint64, string, error) {
	f.mu.Lock()
	f.inFlight++
	f.maxSeen = max(f.maxSeen, f.inFlight)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }()
	if f.gate != nil {
		f.entered <- struct{}{}
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.calls) + 1
	if f.fail != nil {
		if err := f.fail(n, c); err != nil {
			if pe := (*PostError)(nil); errors.As(err, &pe) && pe.Started || !errors.As(err, &pe) {
				f.calls = append(f.calls, postCall{channel: channel, content: c.Content, files: len(c.Files), embed: c.Embed != nil}) // reached Discord
			}
			return 0, "", err
		}
	}
	f.calls = append(f.calls, postCall{channel: channel, content: c.Content, files: len(c.Files), embed: c.Embed != nil})
	embed := ""
	if c.Embed != nil {
		embed = `{"title":"` + c.Embed.Title + `"}`
	}
	return uint64(1000 + n), embed, nil
}

func (f *fakePoster) contents() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.content)
	}
	return out
}

// deliverWorld is a world with a task (with the given log channel), a
// subscriber kudos/reports in the guild and a Deliverer.
type deliverWorld struct {
	*world
	task Task
	p    *fakePoster
	d    *Deliverer
}

func newDeliverWorld(t *testing.T, logChannel uint64) *deliverWorld {
	t.Helper()
	ctx := context.Background()
	w := newWorld(t, t0)
	def := validDef()
	def.LogChannelID = logChannel
	task, err := w.svc.Create(ctx, "alice", enabled, w.chk, def)
	if err != nil {
		t.Fatal(err)
	}
	b := w.res.Bind("kudos", results.Hooks{Declared: []string{"reports"}})
	if err := b.Subscribe(ctx, "reports", testGuild, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil }); err != nil {
		t.Fatal(err)
	}
	p := &fakePoster{}
	d, err := NewDeliverer(w.svc, DeliverOptions{Poster: p, RetryDelay: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	return &deliverWorld{world: w, task: task, p: p, d: d}
}

// run makes a pending run of the task (Advance at its next occurrence).
func (w *deliverWorld) run(t *testing.T) string {
	t.Helper()
	adv, err := w.svc.Advance(context.Background(), w.task.ID, w.task.NextDue)
	if err != nil || adv.RunID == "" {
		t.Fatalf("Advance = %+v, %v", adv, err)
	}
	w.task.NextDue = adv.Plan.Next
	return adv.RunID
}

// output is two posts: a long one (two chunks) with the file, then one
// with an embed.
func output() Output {
	return Output{Posts: []Post{
		{ChannelID: 100, Content: strings.Repeat("word ", 500) + "\n\n" + strings.Repeat("more ", 100), Files: []Attachment{{Name: "agenda.txt", Data: []byte("agenda")}}},
		{ChannelID: 101, Content: "second post", Embed: &Embed{Title: "Digest"}},
	}}
}

func (w *deliverWorld) runStatus(t *testing.T, id string) RunStatus {
	t.Helper()
	var s string
	if err := w.st.Reader().QueryRow(`SELECT status FROM kimi_task_runs WHERE id = ?`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return RunStatus(s)
}

func (w *deliverWorld) postStatuses(t *testing.T, id string) []string {
	t.Helper()
	rows, err := w.st.Reader().Query(`SELECT kind || ':' || status || ':' || attempts FROM kimi_task_posts WHERE run_id = ? ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func (w *deliverWorld) taskState(t *testing.T) State {
	t.Helper()
	got, err := w.svc.Get(context.Background(), w.task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got.State
}

func (w *deliverWorld) notifications(t *testing.T, runID string) (pubs, notes int) {
	t.Helper()
	return w.count(t, `SELECT count(*) FROM kimi_result_publications WHERE run_id = ?`, runID),
		w.count(t, `SELECT count(*) FROM kimi_result_notifications WHERE run_id = ? AND module = 'kudos' AND name = 'reports'`, runID)
}

func eq(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

// TestDeliverInOrderAndConfirmedPublication: PrepareRun stores every
// chunk in order plus the log row; Deliver posts them in that order (files
// and embed on the first chunk of their post), completes the run and
// enqueues exactly one notification with the sent non-log posts; a second
// Deliver posts nothing again.
func TestDeliverInOrderAndConfirmedPublication(t *testing.T) {
	ctx := context.Background()
	w := newDeliverWorld(t, 102)
	runID := w.run(t)
	out := output()
	if err := w.svc.PrepareRun(ctx, runID, out); err != nil {
		t.Fatal(err)
	}
	if got := w.runStatus(t, runID); got != RunDelivering {
		t.Fatalf("prepared run is %s", got)
	}
	if got, want := w.postStatuses(t, runID), []string{"post:pending:0", "post:pending:0", "post:pending:0", "log:pending:0"}; !eq(got, want) {
		t.Fatalf("rows = %v, want %v", got, want)
	}
	if err := w.svc.PrepareRun(ctx, runID, out); err == nil {
		t.Fatal("a second PrepareRun was accepted")
	}
	status, err := w.d.Deliver(ctx, runID)
	if err != nil || status != RunCompleted {
		t.Fatalf("Deliver = %s, %v", status, err)
	}
	var want []string
	for _, p := range out.Posts {
		for _, c := range Chunk(p) {
			want = append(want, c.Content)
		}
	}
	want = append(want, LogLine(w.task.Name, "completed", "2 posts"))
	if got := w.p.contents(); !eq(got, want) {
		t.Fatalf("posted %d chunks %q…, want %d", len(got), got, len(want))
	}
	if c := w.p.calls; c[0].files != 1 || c[1].files != 0 || !c[2].embed || c[0].embed || c[0].channel != 100 || c[2].channel != 101 || c[3].channel != 102 {
		t.Errorf("calls = %+v", c)
	}
	if pubs, notes := w.notifications(t, runID); pubs != 1 || notes != 1 {
		t.Fatalf("publications %d, notifications %d, want 1 and 1", pubs, notes)
	}
	var msgs string
	if err := w.st.Reader().QueryRow(`SELECT messages FROM kimi_result_publications WHERE run_id = ?`, runID).Scan(&msgs); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"message_id":"1001"`, `"message_id":"1002"`, `"message_id":"1003"`, `"embed_json":"{\"title\":\"Digest\"}"`, `"content":"second post"`,
		// The first chunk's file, by the id the producer's ReadFile takes.
		`"attachments":[{"id":"agenda.txt","filename":"agenda.txt","size_bytes":6}]`} {
		if !strings.Contains(msgs, s) {
			t.Errorf("publication messages lack %s: %s", s, msgs)
		}
	}
	if strings.Contains(msgs, "1004") {
		t.Errorf("the log row was published: %s", msgs)
	}
	if status, err := w.d.Deliver(ctx, runID); err != nil || status != RunCompleted || len(w.p.contents()) != 4 {
		t.Fatalf("second Deliver = %s, %v, %d calls", status, err, len(w.p.contents()))
	}
	if w.taskState(t) != StateActive {
		t.Errorf("task state %s", w.taskState(t))
	}
}

// TestDeliverCompletesBeforeTheLogRow: the run completes (and publishes)
// in the transaction of its last post row, before the log row is sent: a
// failing log row leaves the run completed and the task active.
func TestDeliverCompletesBeforeTheLogRow(t *testing.T) {
	ctx := context.Background()
	w := newDeliverWorld(t, 102)
	runID := w.run(t)
	w.p.fail = func(n int, c PostChunk) error {
		if c.ChannelID == 102 {
			if got := w.runStatus(t, runID); got != RunCompleted {
				t.Errorf("run is %s when its log row is posted", got)
			}
			return &PostError{Status: 403}
		}
		return nil
	}
	if err := w.svc.PrepareRun(ctx, runID, Output{Posts: []Post{{ChannelID: 100, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	status, err := w.d.Deliver(ctx, runID)
	if err != nil || status != RunCompleted {
		t.Fatalf("Deliver = %s, %v", status, err)
	}
	if got, want := w.postStatuses(t, runID), []string{"post:sent:1", "log:failed:1"}; !eq(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	if w.taskState(t) != StateActive {
		t.Errorf("task state %s after a failed log row", w.taskState(t))
	}
	if pubs, notes := w.notifications(t, runID); pubs != 1 || notes != 1 {
		t.Errorf("publications %d, notifications %d", pubs, notes)
	}
}

// TestDeliverErrors: 429 is retried with the attempt counted (and gives
// up failed at MaxPostAttempts); a 4xx fails the row, blocks the later
// ones and puts the task in needs_attention; a 5xx or an unknown error
// after the send started is uncertain and never re-posted by a second
// Deliver. Nothing is published.
func TestDeliverErrors(t *testing.T) {
	cases := []struct {
		name       string
		fail       func(n int) error
		wantRun    RunStatus
		wantRows   []string
		wantCalls  int
		wantState  State
		wantPublic int
	}{
		{"429 then sent", func(n int) error {
			if n <= 3 {
				return &PostError{Status: 429, Started: true}
			}
			return nil
		}, RunCompleted, []string{"post:sent:4", "post:sent:1"}, 5, StateActive, 1},
		{"429 ten times", func(n int) error { return &PostError{Status: 429, Started: true} },
			RunFailed, []string{"post:failed:10", "post:pending:0"}, 10, StateNeedsAttention, 0},
		{"4xx", func(n int) error {
			if n == 1 {
				return &PostError{Status: 403, Started: true}
			}
			return nil
		}, RunFailed, []string{"post:failed:1", "post:pending:0"}, 1, StateNeedsAttention, 0},
		{"5xx after start", func(n int) error {
			if n == 2 {
				return &PostError{Status: 502, Started: true}
			}
			return nil
		}, RunUncertain, []string{"post:sent:1", "post:uncertain:1"}, 2, StateNeedsAttention, 0},
		{"unknown error", func(n int) error {
			if n == 1 {
				return errors.New("connection reset")
			}
			return nil
		}, RunUncertain, []string{"post:uncertain:1", "post:pending:0"}, 1, StateNeedsAttention, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Generous, not a timing assertion: without the 429 cap or the
			// blocking rule Deliver retries forever, and the deadline turns
			// that hang into a failure with Deliver's ctx error.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			w := newDeliverWorld(t, 0)
			runID := w.run(t)
			w.p.fail = func(n int, _ PostChunk) error { return tc.fail(n) }
			if err := w.svc.PrepareRun(ctx, runID, Output{Posts: []Post{{ChannelID: 100, Content: "first"}, {ChannelID: 101, Content: "second"}}}); err != nil {
				t.Fatal(err)
			}
			for i := range 2 { // the second Deliver re-posts nothing
				status, err := w.d.Deliver(ctx, runID)
				if err != nil || status != tc.wantRun {
					t.Fatalf("Deliver %d = %s, %v, want %s", i+1, status, err, tc.wantRun)
				}
				if got := w.postStatuses(t, runID); !eq(got, tc.wantRows) {
					t.Fatalf("Deliver %d: rows = %v, want %v", i+1, got, tc.wantRows)
				}
				w.p.mu.Lock()
				calls := len(w.p.calls)
				w.p.mu.Unlock()
				if calls != tc.wantCalls {
					t.Fatalf("Deliver %d: %d calls reached Discord, want %d", i+1, calls, tc.wantCalls)
				}
			}
			if got := w.taskState(t); got != tc.wantState {
				t.Errorf("task state %s, want %s", got, tc.wantState)
			}
			if pubs, notes := w.notifications(t, runID); pubs != tc.wantPublic || notes != tc.wantPublic {
				t.Errorf("publications %d, notifications %d, want %d", pubs, notes, tc.wantPublic)
			}
		})
	}
}

// TestDeliverConfirmationIsOneTransaction: when the enqueue in the
// confirming transaction fails, the transaction rolls back: the run is not
// completed and no publication or notification exists.
func TestDeliverConfirmationIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	w := newDeliverWorld(t, 0)
	runID := w.run(t)
	if _, err := w.st.Writer().Exec(`CREATE TRIGGER refuse_notifications BEFORE INSERT ON kimi_result_notifications BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	if err := w.svc.PrepareRun(ctx, runID, Output{Posts: []Post{{ChannelID: 100, Content: "only"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.d.Deliver(ctx, runID); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Deliver error = %v, want the refused enqueue", err)
	}
	if got := w.runStatus(t, runID); got != RunDelivering {
		t.Errorf("run is %s after the rolled-back confirmation", got)
	}
	if got := w.postStatuses(t, runID); !eq(got, []string{"post:sending:1"}) {
		t.Errorf("rows = %v: the sent record must roll back with it", got)
	}
	if pubs, notes := w.notifications(t, runID); pubs != 0 || notes != 0 {
		t.Errorf("publications %d, notifications %d after the rollback", pubs, notes)
	}
}

// TestDeliverPreview: a preview run is delivered but keeps its status,
// enqueues nothing and leaves the task's state, even when a post fails.
func TestDeliverPreview(t *testing.T) {
	for _, failing := range []bool{false, true} {
		ctx := context.Background()
		w := newDeliverWorld(t, 102)
		runID, err := newID()
		if err != nil {
			t.Fatal(err)
		}
		err = w.st.Write(ctx, func(tx *sql.Tx) error {
			return insertRun(ctx, tx, Run{ID: runID, TaskID: w.task.ID, Revision: 1, Due: t0, Status: RunPreview, CreatedAt: t0})
		})
		if err != nil {
			t.Fatal(err)
		}
		if failing {
			w.p.fail = func(int, PostChunk) error { return &PostError{Status: 500, Started: true} }
		}
		if err := w.svc.PrepareRun(ctx, runID, Output{Posts: []Post{{ChannelID: 100, Content: "preview"}}}); err != nil {
			t.Fatal(err)
		}
		status, err := w.d.Deliver(ctx, runID)
		if err != nil || status != RunPreview {
			t.Fatalf("failing %v: Deliver = %s, %v", failing, status, err)
		}
		wantRows := []string{"post:sent:1"} // no log row for a preview
		if failing {
			wantRows = []string{"post:uncertain:1"}
		}
		if got := w.postStatuses(t, runID); !eq(got, wantRows) {
			t.Errorf("failing %v: rows = %v, want %v", failing, got, wantRows)
		}
		if pubs, notes := w.notifications(t, runID); pubs != 0 || notes != 0 {
			t.Errorf("failing %v: a preview published (%d, %d)", failing, pubs, notes)
		}
		if got := w.taskState(t); got != StateActive {
			t.Errorf("failing %v: task state %s", failing, got)
		}
	}
}

// TestDeliverConcurrency: with four runs delivering at once, at most
// MaxDeliveries are posting; the others wait for a slot.
func TestDeliverConcurrency(t *testing.T) {
	ctx := context.Background()
	w := newDeliverWorld(t, 0)
	w.p.gate, w.p.entered = make(chan struct{}), make(chan struct{}, 8)
	var waitingMu sync.Mutex
	waiting := 0
	allWaiting := make(chan struct{})
	w.d.waiting = func() {
		waitingMu.Lock()
		defer waitingMu.Unlock()
		if waiting++; waiting == 4 {
			close(allWaiting)
		}
	}
	var runs []string
	for range 4 {
		id := w.run(t)
		if err := w.svc.PrepareRun(ctx, id, Output{Posts: []Post{{ChannelID: 100, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, id)
	}
	errs := make(chan error, len(runs))
	for _, id := range runs {
		go func() {
			_, err := w.d.Deliver(ctx, id)
			errs <- err
		}()
	}
	bound := time.After(time.Minute)
	for range MaxDeliveries {
		select {
		case <-w.p.entered:
		case <-bound:
			t.Fatal("the first deliveries never posted")
		}
	}
	select {
	case <-allWaiting:
	case <-bound:
		t.Fatal("not every Deliver started")
	}
	// Every Deliver asked for a slot and two hold one: a third must not
	// post while they do.
	select {
	case <-w.p.entered:
		t.Fatal("a third run posted while two were delivering")
	case <-time.After(200 * time.Millisecond):
	}
	close(w.p.gate)
	for range runs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if w.p.maxSeen != MaxDeliveries {
		t.Errorf("%d posts in flight at most, want %d", w.p.maxSeen, MaxDeliveries)
	}
	for _, id := range runs {
		if got := w.runStatus(t, id); got != RunCompleted {
			t.Errorf("run %s is %s", id, got)
		}
	}
}
