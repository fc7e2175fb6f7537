package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestUnknownUserCostsABcryptCheck proves the constant-time behaviour for
// unknown users without timing anything: every sign-in — unknown username,
// over-long username or password, wrong password — must queue for a bcrypt
// slot like a real check does, so with every slot busy each one waits and
// gives up with its context instead of answering "invalid" early.
func TestUnknownUserCostsABcryptCheck(t *testing.T) {
	svc, _, _ := newTestService(t)
	ctx := context.Background()
	if err := svc.CreateAdmin(ctx, "admin", "password123", "cli"); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, user, pass string }{
		{"known user, wrong password", "admin", "wrong-password"},
		{"unknown user", "nobody", "password123"},
		{"over-long username", strings.Repeat("x", 500), "password123"},
		{"over-long password", "admin", strings.Repeat("p", 100)},
	}
	for range cap(svc.bcryptSem) {
		svc.bcryptSem <- struct{}{}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, tt := range tests {
		if _, err := svc.Login(cctx, tt.user, tt.pass, ClientMeta{}, ""); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with every bcrypt slot busy = %v, want context.Canceled (no early answer)", tt.name, err)
		}
	}
	for range cap(svc.bcryptSem) {
		<-svc.bcryptSem
	}
	for _, tt := range tests {
		if _, err := svc.Login(ctx, tt.user, tt.pass, ClientMeta{}, ""); !errors.Is(err, ErrInvalidCredentials) {
			t.Errorf("%s = %v, want ErrInvalidCredentials", tt.name, err)
		}
	}
}
