package fakediscord

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// manualNow is a clock the test moves.
type manualNow struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualNow) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *manualNow) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestSessionStartLimitIsSpentAndResets: gateway/bot reports the limit
// set; each Identify spends one; with none left an Identify is refused
// with 4004; at the reset (on the fake's clock) the window is full again.
func TestSessionStartLimitIsSpentAndResets(t *testing.T) {
	t.Parallel()
	clk := &manualNow{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	f := New(Options{Now: clk.Now})
	t.Cleanup(f.Close)
	if total, left, _ := f.SessionStarts(); total != DefaultSessionStarts || left != DefaultSessionStarts {
		t.Fatalf("default limit %d of %d", left, total)
	}
	f.SetSessionStartLimit(100, 2, time.Hour)
	s := f.Session()
	gb, err := s.GatewayBot()
	if err != nil {
		t.Fatal(err)
	}
	if l := gb.SessionStartLimit; l.Total != 100 || l.Remaining != 2 || l.ResetAfter != int(time.Hour/time.Millisecond) {
		t.Fatalf("gateway/bot session_start_limit = %+v", l)
	}
	for want := 1; want >= 0; want-- {
		s := f.Session()
		if err := s.Open(); err != nil {
			t.Fatalf("identify with %d left: %v", want+1, err)
		}
		_ = s.Close()
		if _, left, _ := f.SessionStarts(); left != want {
			t.Fatalf("after an identify %d left, want %d", left, want)
		}
	}
	var ce *websocket.CloseError
	if err := f.Session().Open(); !errors.As(err, &ce) || ce.Code != CloseAuthenticationFailed {
		t.Fatalf("identify with none left: %v, want close 4004", err)
	}
	clk.add(time.Hour)
	if total, left, after := f.SessionStarts(); left != total || after != time.Hour {
		t.Fatalf("after the reset %d of %d left, resets after %s", left, total, after)
	}
}

// TestFlapGatewayClosesAfterReady: a flapping gateway closes each
// connection right after READY with the code set, and forgets the session
// for a code that is not resumable.
func TestFlapGatewayClosesAfterReady(t *testing.T) {
	t.Parallel()
	f := New(Options{})
	t.Cleanup(f.Close)
	f.FlapGateway(CloseSessionTimedOut)
	s := f.Session()
	closed := make(chan struct{}, 4)
	s.ShouldReconnectOnError = false
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	go func() {
		for f.GatewayStats().Connections != 0 {
			time.Sleep(5 * time.Millisecond)
		}
		closed <- struct{}{}
	}()
	select {
	case <-closed:
	case <-time.After(waitBound):
		t.Fatal("the connection stayed open")
	}
	f.mu.Lock()
	n := len(f.gw.sessions)
	f.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d sessions kept after a 4009 flap", n)
	}
	_ = s.Close()
}
