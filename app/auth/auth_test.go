package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kimiapp/kimi/app/store"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestService(t testing.TB) (*Service, *store.Store, *clock) {
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
	clk := &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	svc := New(st, nil, Options{BcryptCost: bcrypt.MinCost, Now: clk.Now})
	return svc, st, clk
}

func auditActions(t *testing.T, st *store.Store) []string {
	t.Helper()
	entries, _, err := st.ListAudit(context.Background(), store.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatalf("list audit: %v", err)
	}
	var out []string
	for i := len(entries) - 1; i >= 0; i-- {
		out = append(out, entries[i].Action+":"+entries[i].Actor)
	}
	return out
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, user, pass string
		userErr, passErr error
	}{
		{"ok", "admin", "correct horse", nil, nil},
		{"email-like", "ops@example.org", "12345678", nil, nil},
		{"empty user", "", "12345678", ErrInvalidUsername, nil},
		{"space in user", "ad min", "12345678", ErrInvalidUsername, nil},
		{"leading dot", ".admin", "12345678", ErrInvalidUsername, nil},
		{"user too long", strings.Repeat("a", 65), "12345678", ErrInvalidUsername, nil},
		{"user max", strings.Repeat("a", 64), "12345678", nil, nil},
		{"short pass", "admin", "1234567", nil, ErrWeakPassword},
		{"pass 72 bytes", "admin", strings.Repeat("x", 72), nil, nil},
		{"pass 73 bytes", "admin", strings.Repeat("x", 73), nil, ErrPasswordTooLong},
		{"multibyte over 72 bytes", "admin", strings.Repeat("é", 37), nil, ErrPasswordTooLong},
		{"pass is username", "administrator", "administrator", nil, ErrPasswordIsUsername},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidateUsername(tt.user); !errors.Is(err, tt.userErr) {
				t.Errorf("ValidateUsername(%q) = %v, want %v", tt.user, err, tt.userErr)
			}
			err := ValidatePassword(tt.user, tt.pass)
			if !errors.Is(err, tt.passErr) {
				t.Errorf("ValidatePassword = %v, want %v", err, tt.passErr)
			}
			if got, want := IsPasswordRuleError(err), tt.passErr != nil; got != want {
				t.Errorf("IsPasswordRuleError(%v) = %t, want %t", err, got, want)
			}
		})
	}
}

func TestSetupTokenLifecycle(t *testing.T) {
	ctx := context.Background()
	svc, st, clk := newTestService(t)
	meta := ClientMeta{IP: "192.0.2.1", UserAgent: "test"}

	first, exp, err := svc.NewSetupToken(ctx)
	if err != nil {
		t.Fatalf("NewSetupToken: %v", err)
	}
	if len(first) != 43 {
		t.Errorf("token length = %d, want 43 (32 bytes base64url)", len(first))
	}
	if want := clk.Now().Add(30 * time.Minute); !exp.Equal(want) {
		t.Errorf("expires = %v, want %v", exp, want)
	}
	// Only the hash is stored.
	var stored []byte
	if err := st.Reader().QueryRowContext(ctx, `SELECT token_hash FROM kimi_setup_tokens`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), first) || len(stored) != 32 {
		t.Errorf("stored token is not a sha256 hash: %q", stored)
	}

	// A new token (restart) replaces the old one.
	second, _, err := svc.NewSetupToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.CheckSetupToken(ctx, first); !errors.Is(err, ErrInvalidSetupToken) {
		t.Errorf("old token still valid: %v", err)
	}
	if err := svc.CheckSetupToken(ctx, second); err != nil {
		t.Errorf("new token invalid: %v", err)
	}
	for _, bad := range []string{"", "nope", strings.Repeat("a", 300)} {
		if _, err := svc.CompleteSetup(ctx, bad, "admin", "password123", meta); !errors.Is(err, ErrInvalidSetupToken) {
			t.Errorf("CompleteSetup(%q) = %v, want ErrInvalidSetupToken", bad, err)
		}
	}
	// Validation errors do not burn the token.
	if _, err := svc.CompleteSetup(ctx, second, "admin", "short", meta); !errors.Is(err, ErrWeakPassword) {
		t.Fatalf("weak password: %v", err)
	}
	issued, err := svc.CompleteSetup(ctx, second, "admin", "password123", meta)
	if err != nil {
		t.Fatalf("CompleteSetup: %v", err)
	}
	if issued.Cookie == "" || issued.Username != "admin" || issued.CSRFToken == "" {
		t.Errorf("issued session incomplete: %+v", issued)
	}
	if _, err := svc.Authenticate(ctx, issued.Cookie); err != nil {
		t.Errorf("setup session does not authenticate: %v", err)
	}
	// Single use.
	if _, err := svc.CompleteSetup(ctx, second, "admin2", "password123", meta); !errors.Is(err, ErrAdminExists) {
		t.Errorf("second CompleteSetup = %v, want ErrAdminExists", err)
	}
	if _, _, err := svc.NewSetupToken(ctx); !errors.Is(err, ErrAdminExists) {
		t.Errorf("NewSetupToken after setup = %v, want ErrAdminExists", err)
	}
	var n int
	if err := st.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM kimi_setup_tokens`).Scan(&n); err != nil || n != 0 {
		t.Errorf("setup tokens left = %d (%v), want 0", n, err)
	}
	if got := auditActions(t, st); len(got) != 1 || got[0] != ActionSetup+":admin" {
		t.Errorf("audit = %v", got)
	}
}

func TestSetupTokenExpiry(t *testing.T) {
	ctx := context.Background()
	svc, _, clk := newTestService(t)
	tok, _, err := svc.NewSetupToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(30 * time.Minute)
	if err := svc.CheckSetupToken(ctx, tok); !errors.Is(err, ErrInvalidSetupToken) {
		t.Errorf("expired token check = %v", err)
	}
	if _, err := svc.CompleteSetup(ctx, tok, "admin", "password123", ClientMeta{}); !errors.Is(err, ErrInvalidSetupToken) {
		t.Errorf("expired token setup = %v", err)
	}
	if has, _ := svc.HasAdmin(ctx); has {
		t.Error("admin created with an expired token")
	}
}

func TestLoginAndSessions(t *testing.T) {
	ctx := context.Background()
	svc, st, clk := newTestService(t)
	if err := svc.CreateAdmin(ctx, "Admin", "password123", "cli"); err != nil {
		t.Fatalf("CreateAdmin: %v", err)
	}
	if err := svc.CreateAdmin(ctx, "admin", "password123", "cli"); !errors.Is(err, ErrAdminExists) {
		t.Errorf("duplicate (case-insensitive) CreateAdmin = %v, want ErrAdminExists", err)
	}
	meta := ClientMeta{IP: "198.51.100.7", UserAgent: "Mozilla/5.0"}

	for _, tc := range []struct{ user, pass string }{
		{"admin", "wrong-password"},
		{"nobody", "password123"},
		{strings.Repeat("x", 500), "password123"},
		{"admin", strings.Repeat("p", 100)},
	} {
		if _, err := svc.Login(ctx, tc.user, tc.pass, meta, ""); !errors.Is(err, ErrInvalidCredentials) {
			t.Errorf("Login(%.10q) = %v, want ErrInvalidCredentials", tc.user, err)
		}
	}
	first, err := svc.Login(ctx, "ADMIN", "password123", meta, "")
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if first.Username != "Admin" {
		t.Errorf("username = %q, want canonical %q", first.Username, "Admin")
	}
	// Rotation: logging in again with the old cookie kills the old session.
	second, err := svc.Login(ctx, "admin", "password123", meta, first.Cookie)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, first.Cookie); !errors.Is(err, ErrSessionInvalid) {
		t.Errorf("old session after rotation = %v, want ErrSessionInvalid", err)
	}
	sess, err := svc.Authenticate(ctx, second.Cookie)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if sess.CSRFToken != second.CSRFToken || sess.IP != meta.IP {
		t.Errorf("session = %+v", sess)
	}
	// Tampered and malformed cookies.
	id, secret, _ := strings.Cut(second.Cookie, ".")
	for _, c := range []string{"", "garbage", id, id + ".", "." + secret, id + "." + secret + "x", id + "." + strings.ToLower(secret), "X" + id + "." + secret} {
		if _, err := svc.Authenticate(ctx, c); !errors.Is(err, ErrSessionInvalid) {
			t.Errorf("Authenticate(%q) = %v, want ErrSessionInvalid", c, err)
		}
	}
	// Failed logins are audited with the attempted username, never the password.
	entries, _, err := st.ListAudit(ctx, store.AuditFilter{Action: ActionLoginFailed})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Fatalf("failed-login rows = %d, want 4", len(entries))
	}
	for _, e := range entries {
		if strings.Contains(e.Detail+e.Target+e.Actor, "password123") || strings.Contains(e.Detail+e.Target, "wrong-password") {
			t.Errorf("password leaked into audit: %+v", e)
		}
		if len(e.Actor) > MaxUsernameLength+len("…") {
			t.Errorf("actor not truncated: %d bytes", len(e.Actor))
		}
	}
	_ = clk
}

func TestSessionExpiry(t *testing.T) {
	ctx := context.Background()
	svc, st, clk := newTestService(t)
	if err := svc.CreateAdmin(ctx, "admin", "password123", "cli"); err != nil {
		t.Fatal(err)
	}
	opts := svc.Options()

	t.Run("idle", func(t *testing.T) {
		s, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, "")
		if err != nil {
			t.Fatal(err)
		}
		clk.Add(opts.SessionIdle - time.Minute)
		if _, err := svc.Authenticate(ctx, s.Cookie); err != nil {
			t.Fatalf("active within idle window: %v", err)
		}
		// That request refreshed last_seen, so another idle-1m is fine too.
		clk.Add(opts.SessionIdle - time.Minute)
		if _, err := svc.Authenticate(ctx, s.Cookie); err != nil {
			t.Fatalf("refreshed session expired: %v", err)
		}
		clk.Add(opts.SessionIdle)
		if _, err := svc.Authenticate(ctx, s.Cookie); !errors.Is(err, ErrSessionExpired) {
			t.Fatalf("idle session = %v, want ErrSessionExpired", err)
		}
		if _, err := svc.Authenticate(ctx, s.Cookie); !errors.Is(err, ErrSessionInvalid) {
			t.Errorf("expired session row not deleted: %v", err)
		}
	})
	t.Run("absolute", func(t *testing.T) {
		s, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, "")
		if err != nil {
			t.Fatal(err)
		}
		deadline := clk.Now().Add(opts.SessionAbsolute)
		for clk.Now().Add(opts.SessionIdle / 2).Before(deadline) {
			clk.Add(opts.SessionIdle / 2)
			if _, err := svc.Authenticate(ctx, s.Cookie); err != nil {
				t.Fatalf("active session before absolute expiry: %v", err)
			}
		}
		clk.Add(opts.SessionIdle / 2)
		if _, err := svc.Authenticate(ctx, s.Cookie); !errors.Is(err, ErrSessionExpired) {
			t.Fatalf("session past absolute expiry = %v, want ErrSessionExpired", err)
		}
	})
	t.Run("purge", func(t *testing.T) {
		if _, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, ""); err != nil {
			t.Fatal(err)
		}
		clk.Add(opts.SessionIdle + time.Second)
		n, err := svc.PurgeExpired(ctx)
		if err != nil || n != 1 {
			t.Fatalf("PurgeExpired = %d, %v; want 1", n, err)
		}
		var left int
		if err := st.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM kimi_sessions`).Scan(&left); err != nil || left != 0 {
			t.Errorf("sessions left = %d (%v)", left, err)
		}
	})
}

func TestChangeAndResetPassword(t *testing.T) {
	ctx := context.Background()
	svc, st, _ := newTestService(t)
	if err := svc.CreateAdmin(ctx, "admin", "password123", "cli"); err != nil {
		t.Fatal(err)
	}
	a, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ChangePassword(ctx, a.Session, "not-it-at-all", "newpassword1", ClientMeta{}); !errors.Is(err, ErrCurrentPasswordBad) {
		t.Fatalf("wrong current = %v", err)
	}
	if _, err := svc.ChangePassword(ctx, a.Session, "password123", "short", ClientMeta{}); !errors.Is(err, ErrWeakPassword) {
		t.Fatalf("weak new = %v", err)
	}
	fresh, err := svc.ChangePassword(ctx, a.Session, "password123", "newpassword1", ClientMeta{IP: "192.0.2.9"})
	if err != nil {
		t.Fatalf("ChangePassword: %v", err)
	}
	for name, c := range map[string]string{"changing": a.Cookie, "other": b.Cookie} {
		if _, err := svc.Authenticate(ctx, c); !errors.Is(err, ErrSessionInvalid) {
			t.Errorf("%s session survived password change: %v", name, err)
		}
	}
	if _, err := svc.Authenticate(ctx, fresh.Cookie); err != nil {
		t.Errorf("rotated session invalid: %v", err)
	}
	if _, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, ""); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("old password still works: %v", err)
	}
	if err := svc.ResetPassword(ctx, "ghost", "password123", "cli"); !errors.Is(err, ErrUnknownAdmin) {
		t.Errorf("reset unknown = %v", err)
	}
	if err := svc.ResetPassword(ctx, "ADMIN", "resetpass99", "cli"); err != nil {
		t.Fatalf("ResetPassword: %v", err)
	}
	if _, err := svc.Authenticate(ctx, fresh.Cookie); !errors.Is(err, ErrSessionInvalid) {
		t.Errorf("session survived reset: %v", err)
	}
	if _, err := svc.Login(ctx, "admin", "resetpass99", ClientMeta{}, ""); err != nil {
		t.Errorf("login with reset password: %v", err)
	}
	want := []string{
		ActionAdminCreate + ":cli", ActionLogin + ":admin", ActionLogin + ":admin",
		ActionPasswordChangeFailed + ":admin", ActionPasswordChange + ":admin",
		ActionLoginFailed + ":admin", ActionPasswordReset + ":cli", ActionLogin + ":admin",
	}
	if got := auditActions(t, st); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("audit =\n %v\nwant\n %v", got, want)
	}
}

func TestRevokeOtherSessions(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newTestService(t)
	if err := svc.CreateAdmin(ctx, "admin", "password123", "cli"); err != nil {
		t.Fatal(err)
	}
	var cookies []IssuedSession
	for range 3 {
		s, err := svc.Login(ctx, "admin", "password123", ClientMeta{UserAgent: strings.Repeat("u", 1000)}, "")
		if err != nil {
			t.Fatal(err)
		}
		cookies = append(cookies, s)
	}
	list, err := svc.ListSessions(ctx, cookies[0].AdminID)
	if err != nil || len(list) != 3 {
		t.Fatalf("ListSessions = %d, %v", len(list), err)
	}
	if len(list[0].UserAgent) != maxUserAgent {
		t.Errorf("user agent not truncated: %d", len(list[0].UserAgent))
	}
	n, err := svc.RevokeOtherSessions(ctx, cookies[2].Session, ClientMeta{})
	if err != nil || n != 2 {
		t.Fatalf("RevokeOtherSessions = %d, %v", n, err)
	}
	if _, err := svc.Authenticate(ctx, cookies[2].Cookie); err != nil {
		t.Errorf("own session revoked: %v", err)
	}
	if _, err := svc.Authenticate(ctx, cookies[0].Cookie); !errors.Is(err, ErrSessionInvalid) {
		t.Errorf("other session survived: %v", err)
	}
}

func TestSessionCache(t *testing.T) {
	ctx := context.Background()
	svc, st, clk := newTestService(t)
	if err := svc.CreateAdmin(ctx, "admin", "password123", "cli"); err != nil {
		t.Fatal(err)
	}
	s, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, s.Cookie); err != nil {
		t.Fatal(err)
	}
	// A wrong secret is refused even when the id is cached.
	id, _, _ := strings.Cut(s.Cookie, ".")
	if _, err := svc.Authenticate(ctx, id+".AAAAAAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrSessionInvalid) {
		t.Errorf("cached id with wrong secret = %v", err)
	}
	// A deletion by another process shows up once the cache entry ages out.
	if _, err := st.Writer().ExecContext(ctx, `DELETE FROM kimi_sessions`); err != nil {
		t.Fatal(err)
	}
	clk.Add(SessionCacheTTL)
	if _, err := svc.Authenticate(ctx, s.Cookie); !errors.Is(err, ErrSessionInvalid) {
		t.Errorf("externally deleted session after TTL = %v, want ErrSessionInvalid", err)
	}
	// Changes made through the service take effect at once.
	s2, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, s2.Cookie); err != nil {
		t.Fatal(err)
	}
	if err := svc.Logout(ctx, s2.Session, ClientMeta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, s2.Cookie); !errors.Is(err, ErrSessionInvalid) {
		t.Errorf("session after logout = %v, want ErrSessionInvalid", err)
	}
}

func TestBcryptConcurrencyBound(t *testing.T) {
	svc, _, _ := newTestService(t)
	ctx := context.Background()
	if err := svc.CreateAdmin(ctx, "admin", "password123", "cli"); err != nil {
		t.Fatal(err)
	}
	// Occupy every slot: a check must wait, and give up with its context.
	for range cap(svc.bcryptSem) {
		svc.bcryptSem <- struct{}{}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := svc.Login(cctx, "admin", "password123", ClientMeta{}, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("Login with every bcrypt slot busy = %v, want context.Canceled", err)
	}
	if err := svc.ResetPassword(cctx, "admin", "password456", "cli"); !errors.Is(err, context.Canceled) {
		t.Errorf("ResetPassword with every bcrypt slot busy = %v, want context.Canceled", err)
	}
	for range cap(svc.bcryptSem) {
		<-svc.bcryptSem
	}
	if _, err := svc.Login(ctx, "admin", "password123", ClientMeta{}, ""); err != nil {
		t.Errorf("Login after slots freed: %v", err)
	}
}

// TestUserErrorMessages: the refusals a person reads carry their sentence in
// Message() (the admin shows it beside the field without trimming strings),
// while Error() keeps the prefixed text that logs and the CLI print.
func TestUserErrorMessages(t *testing.T) {
	tests := []struct {
		err            error
		text, sentence string
	}{
		{ErrInvalidCredentials, "auth: invalid username or password", "Invalid username or password."},
		{ErrInvalidUsername, "auth: username must be 1-64 characters: letters, digits, '.', '_', '-' or '@', starting with a letter or digit",
			"Username must be 1-64 characters: letters, digits, '.', '_', '-' or '@', starting with a letter or digit."},
		{ErrWeakPassword, "auth: password must be at least 8 characters", "Password must be at least 8 characters."},
		{ErrPasswordTooLong, "auth: password must be at most 72 bytes", "Password must be at most 72 bytes."},
		{ErrPasswordIsUsername, "auth: password must not be the username", "Password must not be the username."},
		{ErrCurrentPasswordBad, "auth: current password is incorrect", "Current password is incorrect."},
		{ErrPasswordsDoNotMatch, "auth: the passwords do not match", "The passwords do not match."},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.text {
				t.Errorf("Error() = %q, want %q", got, tt.text)
			}
			got, ok := UserMessage(fmt.Errorf("auth: change password: %w", tt.err))
			if !ok || got != tt.sentence {
				t.Errorf("UserMessage(wrapped) = %q, %t; want %q", got, ok, tt.sentence)
			}
		})
	}
	for _, err := range []error{ErrSessionInvalid, ErrInvalidSetupToken, ErrAdminExists, errors.New("disk full"), nil} {
		if msg, ok := UserMessage(err); ok || msg != "" {
			t.Errorf("UserMessage(%v) = %q, %t; want nothing (not for a person to read)", err, msg, ok)
		}
	}
}

// TestNewKeepsTheCallersLogger: the caller names the logger
// (component=auth); New adding its own attribute once printed the key twice
// on every auth line ({"component":"auth","component":"auth"} in JSON).
func TestNewKeepsTheCallersLogger(t *testing.T) {
	_, st, _ := newTestService(t)
	logger := slog.New(slog.DiscardHandler).With("component", "auth")
	if svc := New(st, logger, Options{}); svc.logger != logger {
		t.Error("New wrapped the caller's logger; its attributes would repeat")
	}
}
