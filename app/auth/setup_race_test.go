package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestConcurrentSetupCreatesOneAdmin: many set-ups racing with one token
// (a double-clicked submit, or an attacker who saw the link) create exactly
// one admin, one session and one audit row; every other attempt is refused
// as a used token or an existing admin, with nothing written.
func TestConcurrentSetupCreatesOneAdmin(t *testing.T) {
	ctx := context.Background()
	const n = 16
	_, st, _ := newTestService(t)
	// A hashing queue with room for every attempt: this test is about the
	// set-up race, not about refusing a flood (busy_test.go).
	svc := New(st, nil, Options{BcryptCost: bcrypt.MinCost, HashQueue: n})
	token, _, err := svc.NewSetupToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		errs    = make([]error, n)
		winners = make([]string, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			user := fmt.Sprintf("admin%d", i)
			issued, err := svc.CompleteSetup(ctx, token, user, "a long enough password", ClientMeta{IP: "192.0.2.1"})
			errs[i] = err
			if err == nil && issued.Cookie != "" {
				winners[i] = user
			}
		}()
	}
	close(start)
	wg.Wait()

	var won []string
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, winners[i])
		case errors.Is(err, ErrInvalidSetupToken), errors.Is(err, ErrAdminExists):
		default:
			t.Errorf("attempt %d: unexpected error %v", i, err)
		}
	}
	if len(won) != 1 || won[0] == "" {
		t.Fatalf("successful set-ups = %v, want exactly one", won)
	}
	var admins, sessions, tokens int
	for q, dst := range map[string]*int{
		`SELECT count(*) FROM kimi_admins`:       &admins,
		`SELECT count(*) FROM kimi_sessions`:     &sessions,
		`SELECT count(*) FROM kimi_setup_tokens`: &tokens,
	} {
		if err := st.Reader().QueryRowContext(ctx, q).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	if admins != 1 || sessions != 1 || tokens != 0 {
		t.Fatalf("admins=%d sessions=%d setup tokens=%d, want 1 1 0", admins, sessions, tokens)
	}
	if got, want := auditActions(t, st), []string{ActionSetup + ":" + won[0]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit = %v, want %v", got, want)
	}
	if err := svc.CheckSetupToken(ctx, token); !errors.Is(err, ErrAdminExists) {
		t.Fatalf("token after set-up: %v, want ErrAdminExists", err)
	}
}
