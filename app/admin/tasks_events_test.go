package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTaskEvents: a task page's stream sends its state at once, again
// after a change the service signals (a pause by someone else), and ends
// when the task is deleted; an id no task can have is a 404.
func TestTaskEvents(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	seedTask(taskDef("Standup", "Standup time"))(t, h)
	id := h.vars["task"]

	if res := c.get("/tasks/events?id=nope"); res.StatusCode != http.StatusNotFound {
		t.Errorf("stream of a malformed id = %d, want 404", res.StatusCode)
	}
	stream, _ := openStream(t, c, "/tasks/events?id="+id)
	if first := readEvent(t, stream); !strings.Contains(first, `data-testid="task-state-badge"`) || !strings.Contains(first, ">active<") {
		t.Fatalf("first fragment: %.600s", first)
	}
	ctx := context.Background()
	if _, err := h.tasks.admin.SetPaused(ctx, "other", id, true); err != nil {
		t.Fatal(err)
	}
	for ev := readEvent(t, stream); !strings.Contains(ev, ">paused<"); ev = readEvent(t, stream) {
	}
	if err := h.tasks.admin.Delete(ctx, "other", id); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case _, open := <-stream:
			if !open {
				return
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the stream of a deleted task did not end")
		}
	}
}
