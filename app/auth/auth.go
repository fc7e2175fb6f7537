// Package auth owns the admin accounts of the appliance: the first-run setup
// token, bcrypt password hashing, database-backed sessions (only a hash of the
// session secret is stored) and the audit rows every authentication event
// writes. It knows nothing about HTTP; app/admin turns its results into
// cookies and pages.
package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kimiapp/kimi/app/store"
)

// Defaults used when the corresponding Options field is zero.
const (
	DefaultBcryptCost      = 12
	DefaultSessionIdle     = 12 * time.Hour
	DefaultSessionAbsolute = 7 * 24 * time.Hour
	DefaultSetupTokenTTL   = 30 * time.Minute

	// touchInterval bounds how often an authenticated request refreshes a
	// session's last_seen_at, so page views do not queue on the single writer.
	touchInterval = time.Minute
)

// Audit action keys written by this package. The admin UI offers them in the
// audit-log filter.
const (
	ActionSetup                = "auth.setup"
	ActionAdminCreate          = "auth.admin_create"
	ActionLogin                = "auth.login"
	ActionLoginFailed          = "auth.login_failed"
	ActionLogout               = "auth.logout"
	ActionPasswordChange       = "auth.password_change"
	ActionPasswordChangeFailed = "auth.password_change_failed"
	ActionPasswordReset        = "auth.password_reset"
	ActionSessionsRevoke       = "auth.sessions_revoke"
)

// Errors returned by the Service. Their messages are safe to show to the
// operator; they never contain secrets. Those a person must read and correct
// are *UserError: Error() keeps the "auth: " prefix for logs, Message() is
// the sentence a form shows.
var (
	ErrAdminExists         = errors.New("auth: an admin account already exists")
	ErrUsernameTaken       = errors.New("auth: an admin with that username already exists")
	ErrUnknownAdmin        = errors.New("auth: no admin with that username")
	ErrInvalidCredentials  = userError("invalid username or password", "Invalid username or password.")
	ErrInvalidUsername     = userError("username must be 1-64 characters: letters, digits, '.', '_', '-' or '@', starting with a letter or digit", "Username must be 1-64 characters: letters, digits, '.', '_', '-' or '@', starting with a letter or digit.")
	ErrWeakPassword        = userError(fmt.Sprintf("password must be at least %d characters", MinPasswordLength), fmt.Sprintf("Password must be at least %d characters.", MinPasswordLength))
	ErrPasswordTooLong     = userError(fmt.Sprintf("password must be at most %d bytes", MaxPasswordBytes), fmt.Sprintf("Password must be at most %d bytes.", MaxPasswordBytes))
	ErrPasswordIsUsername  = userError("password must not be the username", "Password must not be the username.")
	ErrInvalidSetupToken   = errors.New("auth: the setup token is missing, invalid, already used or expired")
	ErrSessionInvalid      = errors.New("auth: session is invalid")
	ErrSessionExpired      = errors.New("auth: session has expired")
	ErrCurrentPasswordBad  = userError("current password is incorrect", "Current password is incorrect.")
	ErrPasswordsDoNotMatch = userError("the passwords do not match", "The passwords do not match.")
	// ErrBusy refuses a password check because the hashing queue is full:
	// the caller should answer "try again shortly" (HTTP 503), not wait.
	ErrBusy = errors.New("auth: too many password checks at once; try again in a few seconds")
)

// usernameTakenError names the username that is in use. It is
// ErrUsernameTaken and ErrAdminExists for errors.Is.
type usernameTakenError struct{ username string }

func (e *usernameTakenError) Error() string {
	return fmt.Sprintf("auth: an admin named %q already exists", e.username)
}

// Is matches ErrUsernameTaken and ErrAdminExists.
func (e *usernameTakenError) Is(target error) bool {
	return target == ErrUsernameTaken || target == ErrAdminExists
}

var _ error = (*usernameTakenError)(nil)

// Options configures a Service. Zero values select the defaults above.
type Options struct {
	// BcryptCost is the bcrypt work factor for new hashes (default 12).
	// Tests use bcrypt.MinCost to stay fast.
	BcryptCost int
	// SessionIdle ends a session that has not been used for this long.
	SessionIdle time.Duration
	// SessionAbsolute ends a session this long after sign-in, however active.
	SessionAbsolute time.Duration
	// SetupTokenTTL is the lifetime of a first-run setup token.
	SetupTokenTTL time.Duration
	// Now is the clock (injectable for expiry tests); default time.Now.
	Now func() time.Time
	// HashWorkers bounds concurrent bcrypt work (default: the CPU count).
	HashWorkers int
	// HashQueue is how many password checks may wait for a worker
	// (default 2*HashWorkers; negative: none). Past it a check fails at
	// once with ErrBusy: the wait stays short (at most HashQueue/HashWorkers
	// bcrypt runs, well under a second at the default cost) and a flood is
	// refused instead of queueing until every request times out.
	HashQueue int
}

// ClientMeta describes the HTTP client behind an auth event, for the session
// row and the audit log.
type ClientMeta struct {
	IP        string
	UserAgent string
}

// Service implements admin authentication on top of the store.
type Service struct {
	st     *store.Store
	logger *slog.Logger
	opts   Options

	dummyOnce sync.Once
	dummyHash []byte

	bcryptSem   chan struct{} // a token per running bcrypt
	bcryptAdmit chan struct{} // a token per running or waiting bcrypt
	cache       sessionCache
	checked     func() // test hook: runs after each password comparison
	stmtMu      sync.Mutex
	sessStmt    atomic.Pointer[sql.Stmt]
}

// New returns a Service using st for persistence and logger (the caller
// names it: component=auth). It does no I/O.
func New(st *store.Store, logger *slog.Logger, opts Options) *Service {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.BcryptCost == 0 {
		opts.BcryptCost = DefaultBcryptCost
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.SessionAbsolute <= 0 {
		opts.SessionAbsolute = DefaultSessionAbsolute
	}
	if opts.SetupTokenTTL <= 0 {
		opts.SetupTokenTTL = DefaultSetupTokenTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HashWorkers <= 0 {
		opts.HashWorkers = max(1, runtime.NumCPU())
	}
	switch {
	case opts.HashQueue == 0:
		opts.HashQueue = 2 * opts.HashWorkers
	case opts.HashQueue < 0:
		opts.HashQueue = 0
	}
	return &Service{st: st, logger: logger, opts: opts,
		bcryptSem:   make(chan struct{}, opts.HashWorkers),
		bcryptAdmit: make(chan struct{}, opts.HashWorkers+opts.HashQueue)}
}

// auditTimeout bounds the write of an audit row that stands alone (a failed
// sign-in or password change).
const auditTimeout = 10 * time.Second

// detached returns a context for the writes that must follow a password
// check even when the client has gone away or the request timed out: the
// check happened, so its audit row (and the session it earned) must not be
// lost to a cancelled request context.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
}

// Options returns the effective options (defaults filled in).
func (s *Service) Options() Options { return s.opts }

func (s *Service) now() time.Time { return s.opts.Now() }

// AccountName returns the stored spelling of the admin account named
// username (compared case-insensitively, as sign-in does) and whether one
// exists. The sign-in budget per username is kept for real accounts only, so
// a spray of invented names cannot push a real account's spent budget out of
// the bounded table.
func (s *Service) AccountName(ctx context.Context, username string) (string, bool, error) {
	if username == "" || len(username) > MaxUsernameLength {
		return "", false, nil
	}
	var canonical string
	err := s.st.Reader().QueryRowContext(ctx, `SELECT username FROM kimi_admins WHERE username = ?`, username).Scan(&canonical)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("auth: find account: %w", err)
	}
	return canonical, true, nil
}

// HasAdmin reports whether at least one admin account exists.
func (s *Service) HasAdmin(ctx context.Context) (bool, error) {
	return hasAdmin(ctx, s.st.Reader())
}

// rowQuerier is the reader pool or a write transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ rowQuerier = (*sql.DB)(nil)
	_ rowQuerier = (*sql.Tx)(nil)
)

func hasAdmin(ctx context.Context, q rowQuerier) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM kimi_admins)`).Scan(&n); err != nil {
		return false, fmt.Errorf("auth: check admins: %w", err)
	}
	return n == 1, nil
}

// requireNoAdmin returns ErrAdminExists once an admin exists: first-run
// set-up is over.
func requireNoAdmin(ctx context.Context, q rowQuerier) error {
	has, err := hasAdmin(ctx, q)
	if err != nil {
		return err
	}
	if has {
		return ErrAdminExists
	}
	return nil
}

// CreateAdmin creates an admin account (for `kimi admin create` and headless
// bootstrap). It fails with an error that is ErrUsernameTaken (and
// ErrAdminExists), `auth: an admin named "alice" already exists`, when the
// username is in use (compared case-insensitively). Creating an admin burns any pending setup token.
func (s *Service) CreateAdmin(ctx context.Context, username, password, actor string) error {
	if err := ValidateUsername(username); err != nil {
		return err
	}
	if err := ValidatePassword(username, password); err != nil {
		return err
	}
	hash, err := s.hashPassword(ctx, password)
	if err != nil {
		return err
	}
	return s.st.Write(ctx, func(tx *sql.Tx) error {
		if _, err := insertAdmin(ctx, tx, username, hash, s.now()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_setup_tokens`); err != nil {
			return fmt.Errorf("auth: burn setup tokens: %w", err)
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{
			At: s.now(), Actor: actor, Action: ActionAdminCreate, Target: username,
		})
	})
}

// ResetPassword sets a new password for username and revokes all of that
// admin's sessions (for `kimi admin reset-password`).
func (s *Service) ResetPassword(ctx context.Context, username, password, actor string) error {
	if err := ValidatePassword(username, password); err != nil {
		return err
	}
	hash, err := s.hashPassword(ctx, password)
	if err != nil {
		return err
	}
	var id int64
	defer func() { s.cache.dropAdmin(id) }() // again after commit, see Login
	return s.st.Write(ctx, func(tx *sql.Tx) error {
		var canonical string
		err := tx.QueryRowContext(ctx, `SELECT id, username FROM kimi_admins WHERE username = ?`, username).Scan(&id, &canonical)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrUnknownAdmin, username)
		}
		if err != nil {
			return fmt.Errorf("auth: find admin: %w", err)
		}
		if err := setPasswordTx(ctx, tx, id, hash, s.now()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_sessions WHERE admin_id = ?`, id); err != nil {
			return fmt.Errorf("auth: revoke sessions: %w", err)
		}
		s.cache.dropAdmin(id)
		return store.AuditTx(ctx, tx, store.AuditEntry{
			At: s.now(), Actor: actor, Action: ActionPasswordReset, Target: canonical,
			Detail: "all sessions revoked",
		})
	})
}

func insertAdmin(ctx context.Context, tx *sql.Tx, username string, hash []byte, now time.Time) (int64, error) {
	var existing string
	err := tx.QueryRowContext(ctx, `SELECT username FROM kimi_admins WHERE username = ?`, username).Scan(&existing)
	switch {
	case err == nil:
		return 0, &usernameTakenError{username: existing} // its own spelling: the match ignores case
	case !errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("auth: check username: %w", err)
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO kimi_admins (username, password_hash, created_at, password_changed_at) VALUES (?, ?, ?, ?)`,
		username, string(hash), now.Unix(), now.Unix())
	if err != nil {
		return 0, fmt.Errorf("auth: insert admin: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("auth: insert admin id: %w", err)
	}
	return id, nil
}

func setPasswordTx(ctx context.Context, tx *sql.Tx, adminID int64, hash []byte, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE kimi_admins SET password_hash = ?, password_changed_at = ? WHERE id = ?`,
		string(hash), now.Unix(), adminID)
	if err != nil {
		return fmt.Errorf("auth: update password: %w", err)
	}
	return nil
}

// hashPassword runs bcrypt outside any transaction: it is slow by design and
// must never hold the single writer connection.
func (s *Service) hashPassword(ctx context.Context, password string) ([]byte, error) {
	if err := s.acquireBcrypt(ctx); err != nil {
		return nil, err
	}
	defer s.releaseBcrypt()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.opts.BcryptCost)
	if err != nil {
		return nil, fmt.Errorf("auth: hash password: %w", err)
	}
	return hash, nil
}

// checkPassword compares password with hash, reporting a match. With an
// empty hash (unknown user) it spends the same work on a dummy hash, so an
// unknown username takes as long to reject as a wrong password.
func (s *Service) checkPassword(ctx context.Context, hash, password string) (bool, error) {
	if err := s.acquireBcrypt(ctx); err != nil {
		return false, err
	}
	defer s.releaseBcrypt()
	if s.checked != nil {
		defer s.checked()
	}
	if hash == "" {
		s.dummyOnce.Do(func() {
			h, err := bcrypt.GenerateFromPassword([]byte("kimi-dummy-password"), s.opts.BcryptCost)
			if err != nil {
				s.logger.Error("dummy hash", "err", err)
			}
			s.dummyHash = h
		})
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(password))
		return false, nil
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil, nil
}

// acquireBcrypt bounds concurrent bcrypt work to HashWorkers, so a flood of
// sign-in attempts from many addresses cannot starve the rest of the
// appliance, and bounds the queue behind them to HashQueue: when it is full
// the check is refused at once with ErrBusy instead of waiting until the
// request's deadline (which answered the real admin 500 after 15 s and lost
// the audit rows of the checks that finished too late).
func (s *Service) acquireBcrypt(ctx context.Context) error {
	select {
	case s.bcryptAdmit <- struct{}{}:
	default:
		return ErrBusy
	}
	select {
	case s.bcryptSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		<-s.bcryptAdmit
		return fmt.Errorf("auth: waiting for a password check: %w", context.Cause(ctx))
	}
}

func (s *Service) releaseBcrypt() {
	<-s.bcryptSem
	<-s.bcryptAdmit
}
