package auth

import (
	"context"
	"errors"
	"testing"
)

// FuzzAuthenticate: any cookie value is either a valid session or
// ErrSessionInvalid — never a panic, a database error or another session.
func FuzzAuthenticate(f *testing.F) {
	svc, _, _ := newTestService(f)
	ctx := context.Background()
	if err := svc.CreateAdmin(ctx, "admin", "password123", "test"); err != nil {
		f.Fatal(err)
	}
	s, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, "")
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range []string{"", ".", "a.b", s.Cookie, s.Cookie + "x", s.ID + ".", "'; DROP TABLE kimi_sessions; --.x"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cookie string) {
		got, err := svc.Authenticate(ctx, cookie)
		switch {
		case err == nil:
			if cookie != s.Cookie || got.ID != s.ID {
				t.Fatalf("cookie %q authenticated as %q", cookie, got.ID)
			}
		case !errors.Is(err, ErrSessionInvalid):
			t.Fatalf("Authenticate(%q) = %v, want ErrSessionInvalid", cookie, err)
		}
	})
}
