package fakediscord

import (
	"testing"
)

// TestFaultSkip: a fault with Skip lets that many matching requests pass
// and fails the next; requests of other routes neither pass it nor take it.
func TestFaultSkip(t *testing.T) {
	t.Parallel()
	route := "POST /channels/{channel}/messages"
	w := newWorld(t, Options{})
	w.fake.InjectFault(Fault{Route: route, Status: 500, AfterHandling: true, Skip: 2})
	s := w.fake.Session()
	for i, want := range []bool{false, false, true, false} {
		if _, err := s.Channel(w.text); err != nil { // another route: does not count
			t.Fatal(err)
		}
		_, err := s.ChannelMessageSend(w.text, "m")
		if (err != nil) != want {
			t.Fatalf("send %d: err = %v, want error %v", i+1, err, want)
		}
	}
	if n := len(w.fake.Messages(w.text)); n != 4 {
		t.Fatalf("stored %d messages, want 4 (the failed one created after handling)", n)
	}
}
