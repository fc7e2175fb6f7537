package auth

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kimiapp/kimi/app/store"
)

// newQueueService is a Service with a deterministic hashing queue: one
// worker and queue waiting slots, whatever GOMAXPROCS is.
func newQueueService(t *testing.T, queue int) (*Service, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	svc := New(st, nil, Options{BcryptCost: bcrypt.MinCost, HashWorkers: 1, HashQueue: queue})
	if err := svc.CreateAdmin(ctx, "admin", "password123", "cli"); err != nil {
		t.Fatal(err)
	}
	return svc, st
}

func countAudit(t *testing.T, st *store.Store, action string) int {
	t.Helper()
	entries, _, err := st.ListAudit(context.Background(), store.AuditFilter{Action: action, Limit: store.AuditPageMax})
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// waitFor polls cond; the bound is generous (a shared, noisy machine) and
// only a broken implementation reaches it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFullHashQueueRefusesAtOnce reproduces the distributed sign-in flood
// at the auth layer: with the one worker busy and every waiting slot taken,
// the next check fails with ErrBusy immediately (before the fix it queued
// until its request's deadline, 15 s, and the admin's own sign-in answered
// 500). The waiters still run, and each checked attempt has its audit row.
func TestFullHashQueueRefusesAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		queue int // HashQueue
	}{
		{"no waiting slots", -1},
		{"two waiting slots", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, st := newQueueService(t, tt.queue)
			ctx := context.Background()
			waiting := max(tt.queue, 0)
			// Occupy the worker as a running check does.
			svc.bcryptAdmit <- struct{}{}
			svc.bcryptSem <- struct{}{}
			results := make(chan error, waiting)
			for range waiting {
				go func() {
					_, err := svc.Login(ctx, "admin", "wrong-password", ClientMeta{IP: "192.0.2.1"}, "")
					results <- err
				}()
			}
			waitFor(t, "the waiters to queue", func() bool { return len(svc.bcryptAdmit) == 1+waiting })

			refused := make(chan error, 1)
			go func() {
				_, err := svc.Login(ctx, "admin", "password123", ClientMeta{IP: "192.0.2.2"}, "")
				refused <- err
			}()
			select {
			case err := <-refused:
				if !errors.Is(err, ErrBusy) {
					t.Fatalf("check past a full queue = %v, want ErrBusy", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("check past a full queue waited instead of being refused")
			}

			<-svc.bcryptSem // the running check ends
			<-svc.bcryptAdmit
			for range waiting {
				if err := <-results; !errors.Is(err, ErrInvalidCredentials) {
					t.Errorf("queued check = %v, want ErrInvalidCredentials", err)
				}
			}
			if got := countAudit(t, st, ActionLoginFailed); got != waiting {
				t.Errorf("%d failed-login rows, want %d (one per checked attempt, none for the refused one)", got, waiting)
			}
			if len(svc.bcryptAdmit) != 0 || len(svc.bcryptSem) != 0 {
				t.Errorf("queue not drained: admit %d, workers %d", len(svc.bcryptAdmit), len(svc.bcryptSem))
			}
			if _, err := svc.Login(ctx, "admin", "password123", ClientMeta{IP: "192.0.2.2"}, ""); err != nil {
				t.Fatalf("sign-in after the flood: %v", err)
			}
		})
	}
}

// TestCheckedAttemptRecordedAfterClientGone: a client that disconnects
// (its request context cancelled) after its password was checked still
// leaves the audit row, and a correct password still gets its session;
// before the fix the row was lost ("context canceled") and the successful
// sign-in failed with a 500.
func TestCheckedAttemptRecordedAfterClientGone(t *testing.T) {
	tests := []struct {
		name       string
		run        func(ctx context.Context, svc *Service, arm func()) error
		wantErr    error // nil: success
		wantAction string
	}{
		{"wrong password", func(ctx context.Context, svc *Service, arm func()) error {
			arm()
			_, err := svc.Login(ctx, "admin", "wrong-password", ClientMeta{IP: "203.0.113.9"}, "")
			return err
		}, ErrInvalidCredentials, ActionLoginFailed},
		{"unknown username", func(ctx context.Context, svc *Service, arm func()) error {
			arm()
			_, err := svc.Login(ctx, "mallory", "password123", ClientMeta{IP: "203.0.113.9"}, "")
			return err
		}, ErrInvalidCredentials, ActionLoginFailed},
		{"correct password", func(ctx context.Context, svc *Service, arm func()) error {
			arm()
			_, err := svc.Login(ctx, "admin", "password123", ClientMeta{IP: "203.0.113.9"}, "")
			return err
		}, nil, ActionLogin},
		{"wrong current password", func(ctx context.Context, svc *Service, arm func()) error {
			sess, err := svc.Login(context.Background(), "admin", "password123", ClientMeta{}, "")
			if err != nil {
				return err
			}
			arm()
			_, err = svc.ChangePassword(ctx, sess.Session, "not-the-password", "new-password-1", ClientMeta{IP: "203.0.113.9"})
			return err
		}, ErrCurrentPasswordBad, ActionPasswordChangeFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, st := newQueueService(t, 0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			before := countAudit(t, st, tt.wantAction)
			// The client disconnects right after the comparison.
			err := tt.run(ctx, svc, func() { svc.checked = cancel })
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if ctx.Err() == nil {
				t.Fatal("the hook did not cancel the request context")
			}
			if got := countAudit(t, st, tt.wantAction); got != before+1 {
				t.Errorf("%d %s rows after the attempt, want %d", got, tt.wantAction, before+1)
			}
		})
	}
}

// TestDuplicateAdminMessage: creating a username that exists (in any case)
// says so in one sentence naming the account, and is still ErrUsernameTaken
// and ErrAdminExists for callers that branch on it.
func TestDuplicateAdminMessage(t *testing.T) {
	svc, _ := newQueueService(t, 0) // has "admin"
	ctx := context.Background()
	if err := svc.CreateAdmin(ctx, "alice", "password123", "cli"); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ username, want string }{
		{"alice", `auth: an admin named "alice" already exists`},
		{"ALICE", `auth: an admin named "alice" already exists`},
		{"Admin", `auth: an admin named "admin" already exists`},
	}
	for _, tt := range tests {
		err := svc.CreateAdmin(ctx, tt.username, "password123", "cli")
		if err == nil || err.Error() != tt.want {
			t.Errorf("CreateAdmin(%q) = %v, want %q", tt.username, err, tt.want)
		}
		if !errors.Is(err, ErrUsernameTaken) || !errors.Is(err, ErrAdminExists) {
			t.Errorf("CreateAdmin(%q) = %v, want ErrUsernameTaken and ErrAdminExists", tt.username, err)
		}
	}
}
