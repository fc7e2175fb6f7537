package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// refuser is an Authorizer refusing one channel.
type refuser struct{ channel uint64 }

func (r refuser) Authorize(_ context.Context, guild, owner, channel uint64, _ Needs) error {
	if guild != testGuild || owner != testOwner {
		return errors.New("wrong guild or owner asked")
	}
	if channel == r.channel {
		return errors.New("the owner's tier is below the server's minimum for scheduled tasks")
	}
	return nil
}

// needsRecorder is an Authorizer recording what each check asked.
type needsRecorder struct {
	mu    sync.Mutex
	asked []string // "channel:needs"
}

func (r *needsRecorder) Authorize(_ context.Context, _, _, channel uint64, needs Needs) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, fmt.Sprintf("%d:%d", channel, needs))
	return nil
}

// TestDeliverAuthorizesWhatEachChunkNeeds: the Authorizer is asked for
// what each message carries: the first chunk of a post with a file and an
// embed needs both, its next chunk and a text-only post neither (so an
// owner who may post text is not refused for permissions a message does
// not use).
func TestDeliverAuthorizesWhatEachChunkNeeds(t *testing.T) {
	ctx := context.Background()
	rec := &needsRecorder{}
	w := newRunnerWorld(t, nil, t0, DeliverOptions{Authorize: rec})
	task := w.create(t, nil)
	adv, err := w.svc.Advance(ctx, task.ID, task.NextDue)
	if err != nil {
		t.Fatal(err)
	}
	out := Output{Posts: []Post{
		{ChannelID: 100, Content: strings.Repeat("word ", MaxChunk/5+10), Embed: &Embed{Title: "Digest"}, Files: []Attachment{{Name: "agenda.txt", Data: []byte("agenda")}}},
		{ChannelID: 101, Content: "plain"},
	}}
	if err := w.svc.PrepareRun(ctx, adv.RunID, out); err != nil {
		t.Fatal(err)
	}
	if status, err := w.d.Deliver(ctx, adv.RunID); err != nil || status != RunCompleted {
		t.Fatalf("Deliver = %s, %v; want completed", status, err)
	}
	want := fmt.Sprintf("100:%d,100:0,101:0", NeedFiles|NeedEmbeds)
	if got := strings.Join(rec.asked, ","); got != want {
		t.Fatalf("asked %s, want %s", got, want)
	}
}

// TestDeliverAuthorizerRefusal: a refused row is failed with the
// refusal as its detail before anything is sent to its channel; the run
// fails and the task needs attention.
func TestDeliverAuthorizerRefusal(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{Authorize: refuser{channel: 101}})
	task := w.create(t, nil)
	adv := w.preparedRun(t, task)
	status, err := w.d.Deliver(ctx, adv.RunID)
	if err != nil || status != RunFailed {
		t.Fatalf("Deliver = %s, %v; want failed", status, err)
	}
	posts, _ := w.svc.RunPosts(ctx, adv.RunID)
	if len(posts) != 2 || posts[0].Status != PostSent || posts[1].Status != PostFailed || posts[1].Attempts != 0 ||
		posts[1].Detail != "the owner's tier is below the server's minimum for scheduled tasks" {
		t.Fatalf("posts = %+v", posts)
	}
	if got := w.p.contents(); strings.Join(got, ",") != "one" {
		t.Fatalf("posted %q, want only the authorized channel's", got)
	}
	if got := w.task(t, task.ID).State; got != StateNeedsAttention {
		t.Fatalf("task is %s", got)
	}
}

// TestDeliverLogLineTellsOutcome: a run whose post failed still posts its
// log line, saying failed and why (it was written as "completed" up front
// and stayed pending behind the failed row).
func TestDeliverLogLineTellsOutcome(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.p.fail = func(_ int, c PostChunk) error {
		if c.ChannelID == 100 {
			return &PostError{Status: 403, Err: errors.New("Missing Permissions")}
		}
		return nil
	}
	task := w.create(t, func(d *Definition) { d.LogChannelID = 102 })
	adv := w.preparedRun(t, task)
	status, err := w.d.Deliver(ctx, adv.RunID)
	if err != nil || status != RunFailed {
		t.Fatalf("Deliver = %s, %v; want failed", status, err)
	}
	posts, _ := w.svc.RunPosts(ctx, adv.RunID)
	if len(posts) != 3 || posts[0].Status != PostFailed || posts[1].Status != PostPending || !posts[2].Log || posts[2].Status != PostSent {
		t.Fatalf("posts = %+v", posts)
	}
	got := w.p.contents()
	if len(got) != 1 || !strings.HasPrefix(got[0], "Task Morning digest: failed.") || !strings.Contains(got[0], "Missing Permissions") {
		t.Fatalf("posted %q, want the log line telling the failure", got)
	}
	if w.p.calls[0].channel != 102 {
		t.Fatalf("log line went to %d", w.p.calls[0].channel)
	}
}

// unavailableAuth answers ErrUnavailable for its first n checks (n < 0:
// always), then nil.
type unavailableAuth struct {
	mu sync.Mutex
	n  int
}

func (a *unavailableAuth) Authorize(context.Context, uint64, uint64, uint64, Needs) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 {
		return nil
	}
	a.n--
	return Unavailable(errors.New("the owner's trust tier could not be read: discord: 503"))
}

// TestDeliverRetriesAnUnavailableCheck: a check that could not be made
// (Discord briefly unreachable) is made again after a wait instead of
// failing the row; one that stays unavailable fails the row after
// MaxAuthorizeWaits re-checks, with the error as its reason.
func TestDeliverRetriesAnUnavailableCheck(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		n          int
		want       RunStatus
		wantDetail string
	}{
		{"a brief outage", 2, RunCompleted, ""},
		{"an outage that lasts", -1, RunFailed, "the owner's trust tier could not be read: discord: 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := &unavailableAuth{n: tc.n}
			w := newRunnerWorld(t, nil, t0, DeliverOptions{Authorize: auth, RetryDelay: time.Millisecond})
			task := w.create(t, nil)
			adv := w.preparedRun(t, task)
			status, err := w.d.Deliver(ctx, adv.RunID)
			if err != nil || status != tc.want {
				t.Fatalf("Deliver = %s, %v; want %s", status, err, tc.want)
			}
			posts, _ := w.svc.RunPosts(ctx, adv.RunID)
			if tc.want == RunFailed && (posts[0].Status != PostFailed || posts[0].Detail != tc.wantDetail) {
				t.Fatalf("first post = %+v", posts[0])
			}
			if tc.want == RunFailed && auth.n != -1-(MaxAuthorizeWaits+1) {
				t.Fatalf("%d checks made, want %d", -1-auth.n, MaxAuthorizeWaits+1)
			}
		})
	}
}
