package app

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/assistant"
)

// heldRemover is a bot whose removals wait for release (or their ctx)
// and record how each ended.
type heldRemover struct {
	entered chan struct{} // a value per call begun
	release chan struct{}
	mu      sync.Mutex
	calls   []string // "reaction ok", "message canceled", ...
}

func (r *heldRemover) hold(ctx context.Context, what string) error {
	r.entered <- struct{}{}
	var err error
	select {
	case <-r.release:
	case <-ctx.Done():
		err = ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.calls = append(r.calls, what+" canceled")
	} else {
		r.calls = append(r.calls, what+" ok")
	}
	return err
}

func (r *heldRemover) RemoveOwnReaction(ctx context.Context, _, _ uint64, _ string) error {
	return r.hold(ctx, "reaction")
}

func (r *heldRemover) DeleteOwnMessage(ctx context.Context, _, _ uint64) error {
	return r.hold(ctx, "message")
}

func (r *heldRemover) ended() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// TestInterruptedCleanupStop: a stop while the bot is not yet ready ends
// the clean-up at once; a stop once the removal has begun lets it finish
// (nothing cut off mid-request, the rest done too) within the stop's ctx,
// and cancels it only when that ctx ends.
func TestInterruptedCleanupStop(t *testing.T) {
	turn := assistant.Interrupted{Kind: assistant.KindMessage, ChannelID: 1, TriggerMessageID: 2, StatusMessageID: 3}
	tests := []struct {
		name       string
		ready      bool          // the bot becomes ready
		stopBudget time.Duration // the stop's ctx
		release    bool          // the removals are answered once stop waits
		want       []string
		log        string
	}{
		{name: "not ready", stopBudget: time.Minute, log: "discord not ready: the interrupted turns keep their ⏳"},
		{name: "removing", ready: true, stopBudget: time.Minute, release: true, want: []string{"reaction ok", "message ok"},
			log: "removed=1 status_messages_deleted=1 turns=1"},
		{name: "removing past the stop's budget", ready: true, stopBudget: 50 * time.Millisecond, want: []string{"reaction canceled", "message canceled"},
			log: "removed=0 status_messages_deleted=0 turns=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &heldRemover{entered: make(chan struct{}, 4), release: make(chan struct{})}
			var logs syncBuffer
			c := &interruptedCleanup{bot: r, logger: slog.New(slog.NewTextHandler(&logs, nil)),
				await: func(ctx context.Context) error {
					if tt.ready {
						return nil
					}
					<-ctx.Done()
					return ctx.Err()
				}}
			c.set([]assistant.Interrupted{turn})
			c.start(context.Background())
			if tt.ready {
				select {
				case <-r.entered:
				case <-time.After(30 * time.Second):
					t.Fatal("the removal did not begin within 30 s")
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.stopBudget)
			defer cancel()
			stopped := make(chan struct{})
			go func() { c.stop(ctx); close(stopped) }()
			if tt.release {
				select {
				case <-stopped:
					t.Fatal("stop returned with a removal still in flight")
				case <-time.After(20 * time.Millisecond):
				}
				close(r.release)
			}
			select {
			case <-stopped:
			case <-time.After(30 * time.Second):
				t.Fatal("stop did not return within 30 s")
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) != (tt.stopBudget < time.Second) {
				t.Fatalf("the stop's ctx ended: %v", ctx.Err())
			}
			<-c.done
			if got := r.ended(); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("removals = %q, want %q", got, tt.want)
			}
			if !strings.Contains(logs.String(), tt.log) {
				t.Fatalf("log lacks %q:\n%s", tt.log, logs.String())
			}
		})
	}
}
