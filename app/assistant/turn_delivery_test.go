package assistant

// Progress and delivery: the status message on the turn's clock, its id
// recorded, the answer's chunks and their retry, a STOP between chunks.

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
)

// TestStatusThrottledOnTheClock: at most one Status a second (the newest
// text wins), and the idle notice after 30 s, re-counted every 15 s.
func TestStatusThrottledOnTheClock(t *testing.T) {
	c := &fakeClock{now: rigStart}
	s := newSurface()
	var sent []uint64
	p := newProgress(context.Background(), s, c, nil, func(id uint64) { sent = append(sent, id) })
	p.log = discardLogger()
	p.set("A")
	p.set("B")
	p.set("C")
	if got := s.Events(); !slices.Equal(got, []string{"status A"}) {
		t.Fatalf("before a second: %q", got)
	}
	c.Advance(999 * time.Millisecond)
	if got := s.Events(); len(got) != 1 {
		t.Fatalf("before a second: %q", got)
	}
	c.Advance(time.Millisecond)
	c.Advance(29 * time.Second)
	c.Advance(15 * time.Second)
	p.close(context.Background())
	want := []string{"status A", "status C", "status Still thinking… (30s)", "status Still thinking… (45s)", "clear status"}
	if got := s.Events(); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if !slices.Equal(sent, []uint64{900}) {
		t.Errorf("the status message's id handed on %v, want once [900]", sent)
	}
}

// TestTurnRecordsItsStatusMessage: the id of the status message a turn
// sent is on its row from the first Status on (a crash leaves it there for
// the next start to delete); a surface without a message of its own (0,
// /ask's) records none.
func TestTurnRecordsItsStatusMessage(t *testing.T) {
	for _, c := range []struct {
		name     string
		statusID uint64
	}{
		{"a status message", 900},
		{"no message of its own", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTurnRig(t, llmfake.Step{Plan: llmfake.Text("an answer")})
			s := newSurface()
			s.statusID = c.statusID
			r.a.Handle(context.Background(), incoming(77, "hi"), s)
			r.a.wg.Wait()
			var got int64
			var status string
			if err := r.st.Reader().QueryRow(`SELECT status_message_id, status FROM kimi_assistant_turns`).Scan(&got, &status); err != nil {
				t.Fatal(err)
			}
			if uint64(got) != c.statusID || status != StatusDone {
				t.Fatalf("the turn's status message %d (%s), want %d; events %q", got, status, c.statusID, s.Events())
			}
		})
	}
}

// TestDeliveryChunksAndRetriesOnce: a long answer goes out in (i/n)
// chunks, the first a reply; a failed chunk is retried once; each sent
// message is mapped to the conversation; a chunk failing twice ends the
// turn with ❌.
func TestDeliveryChunksAndRetriesOnce(t *testing.T) {
	long := strings.Repeat("word ", 900) // 4,500 characters
	for _, c := range []struct {
		name      string
		fail      map[int]bool
		delivered int
		status    string
		reaction  string
	}{
		{name: "retry succeeds", fail: map[int]bool{2: true}, delivered: 3, status: StatusDone, reaction: ReactDone},
		{name: "second failure", fail: map[int]bool{2: true, 3: true}, delivered: 1, status: StatusFailed, reaction: ReactFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTurnRig(t, llmfake.Step{Plan: llmfake.Text(long)})
			s := newSurface()
			s.failDeliver = c.fail
			r.a.Handle(context.Background(), incoming(77, "hi"), s)
			r.a.wg.Wait()
			got := s.Delivered()
			if len(got) != c.delivered {
				t.Fatalf("%d chunks delivered: %q", len(got), s.Events())
			}
			for i, ch := range got {
				if len([]rune(ch)) > 2000 || (c.delivered == 3 && !strings.HasSuffix(ch, "`("+string(rune('1'+i))+"/3)`")) {
					t.Errorf("chunk %d: %d runes, ends %q", i, len([]rune(ch)), ch[max(len(ch)-10, 0):])
				}
			}
			if !s.firsts[0] || (len(s.firsts) > 1 && s.firsts[1]) {
				t.Errorf("first flags %v", s.firsts)
			}
			var mapped []int64
			rows, err := r.st.Reader().Query(`SELECT message_id FROM kimi_assistant_delivered`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id int64
				rows.Scan(&id)
				mapped = append(mapped, id)
			}
			rows.Close()
			sort.Slice(mapped, func(i, j int) bool { return mapped[i] < mapped[j] })
			if len(mapped) != c.delivered {
				t.Errorf("mapped %v", mapped)
			}
			if row := r.lastTurn(t); row.Status != c.status {
				t.Errorf("turn row %+v", row)
			}
			if ev := s.Events(); ev[len(ev)-1] != "react "+c.reaction {
				t.Errorf("events %q", ev)
			}
		})
	}
}

// TestStopDuringDelivery: a STOP while the answer's chunks are posted
// stops between chunks (the posted ones stay, mapped and in the
// transcript; the rest are never sent) and ends with 🛑, status
// cancelled; the deadline passing during delivery does not cut it.
func TestStopDuringDelivery(t *testing.T) {
	long := strings.Repeat("word ", 900) // 3 chunks
	for _, tc := range []struct {
		name      string
		after     func(r *turnRig) func(n int)
		delivered int
		status    string
		reaction  string
	}{
		{"stop after the first chunk", func(r *turnRig) func(int) {
			return func(n int) {
				if n == 1 {
					if st := r.a.Cancel(5, 11); st.N != 1 {
						t.Errorf("Cancel during delivery stopped %d turns", st.N)
					}
				}
			}
		}, 1, StatusCancelled, ReactStopped},
		{"a stop after the last chunk is too late: the answer is whole", func(r *turnRig) func(int) {
			return func(n int) {
				if n == 3 {
					r.a.Cancel(5, 11)
				}
			}
		}, 3, StatusDone, ReactDone},
		{"the deadline passing during delivery", func(r *turnRig) func(int) {
			return func(n int) {
				if n == 1 {
					r.clock.Advance(settings.DefaultTurnDeadline + time.Second)
				}
			}
		}, 3, StatusDone, ReactDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTurnRig(t, llmfake.Step{Plan: llmfake.Text(long)})
			s := newSurface()
			s.afterDeliver = tc.after(r)
			r.a.Handle(context.Background(), incoming(77, "hi"), s)
			r.a.wg.Wait()
			got := s.Delivered()
			if len(got) != tc.delivered {
				t.Fatalf("%d chunks delivered, want %d: %q", len(got), tc.delivered, s.Events())
			}
			ev := s.Events()
			if ev[len(ev)-1] != "react "+tc.reaction || !slices.Contains(ev, "unreact ⏳") || !slices.Contains(ev, "clear status") {
				t.Errorf("events %q", ev)
			}
			if row := r.lastTurn(t); row.Status != tc.status {
				t.Errorf("turn row %+v, want status %s", row, tc.status)
			}
			var mapped int
			var reply string
			if err := r.st.Reader().QueryRow(`SELECT count(*) FROM kimi_assistant_delivered`).Scan(&mapped); err != nil || mapped != tc.delivered {
				t.Errorf("%d delivered messages mapped (%v), want %d", mapped, err, tc.delivered)
			}
			if err := r.st.Reader().QueryRow(`SELECT content FROM kimi_assistant_messages WHERE role = 'assistant'`).Scan(&reply); err != nil ||
				reply != strings.Join(got, "\n") {
				t.Errorf("transcript reply %q (%v), want the posted chunks", clip(reply, 40), err)
			}
		})
	}
}
