package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// Session is a signed-in admin's server-side session. The secret half of the
// cookie is never stored; only its SHA-256 is.
type Session struct {
	ID         string
	AdminID    int64
	Username   string
	CSRFToken  string // per-session token for the hidden _csrf form field
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time // absolute expiry
	IP         string
	UserAgent  string
}

// IssuedSession is a freshly created session plus the cookie value that
// proves it ("<id>.<secret>"). The cookie value exists only in memory.
type IssuedSession struct {
	Session
	Cookie string
}

const maxUserAgent = 256

// Login checks username and password and, on success, starts a new session
// (rotation: the session named by oldCookie, if any, is deleted so a planted
// cookie cannot be fixed onto the admin). Unknown users cost the same bcrypt
// work as known ones. Successes and failures are audited; the attempted
// password never is.
func (s *Service) Login(ctx context.Context, username, password string, meta ClientMeta, oldCookie string) (IssuedSession, error) {
	var (
		id        int64
		canonical string
		hash      string
	)
	found := false
	if len(username) <= MaxUsernameLength && len(password) <= MaxPasswordBytes {
		err := s.st.Reader().QueryRowContext(ctx,
			`SELECT id, username, password_hash FROM kimi_admins WHERE username = ?`, username).Scan(&id, &canonical, &hash)
		switch {
		case err == nil:
			found = true
		case errors.Is(err, sql.ErrNoRows):
		default:
			return IssuedSession{}, fmt.Errorf("auth: find admin: %w", err)
		}
	}
	if !found {
		hash = "" // dummy comparison of the same cost
	}
	ok, err := s.checkPassword(ctx, hash, password)
	if err != nil {
		return IssuedSession{}, err
	}
	// The password was checked: what follows is recorded even if the client
	// has gone away meanwhile (a lost row would hide a guess).
	ctx, cancel := detached(ctx)
	defer cancel()
	now := s.now()
	if !ok {
		err := s.st.Audit(ctx, store.AuditEntry{
			At: now, Actor: truncateActor(username), Action: ActionLoginFailed, IP: meta.IP,
			Detail: "invalid username or password",
		})
		if err != nil {
			s.logger.Error("audit failed login", "err", err)
		}
		return IssuedSession{}, ErrInvalidCredentials
	}
	var issued IssuedSession
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		if oldID, _, ok := splitCookie(oldCookie); ok {
			if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_sessions WHERE id = ?`, oldID); err != nil {
				return fmt.Errorf("auth: drop previous session: %w", err)
			}
			s.cache.dropID(oldID)
		}
		var err error
		issued, err = s.insertSession(ctx, tx, id, canonical, meta, now)
		if err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{
			At: now, Actor: canonical, Action: ActionLogin, IP: meta.IP, Detail: userAgentDetail(meta.UserAgent),
		})
	})
	// Again after commit: a lookup between the in-transaction drop and the
	// commit may have cached the old row from a reader snapshot.
	if oldID, _, ok := splitCookie(oldCookie); ok {
		s.cache.dropID(oldID)
	}
	if err != nil {
		return IssuedSession{}, fmt.Errorf("auth: login: %w", err)
	}
	return issued, nil
}

// Authenticate resolves a session cookie to its Session. It returns
// ErrSessionInvalid for malformed, unknown or tampered cookies and
// ErrSessionExpired when the idle or absolute lifetime has passed (the
// expired row is deleted). Activity refreshes last_seen_at at most once a
// minute.
func (s *Service) Authenticate(ctx context.Context, cookie string) (Session, error) {
	id, secret, ok := splitCookie(cookie)
	if !ok {
		return Session{}, ErrSessionInvalid
	}
	now := s.now()
	entry, cached := s.cache.get(id, now)
	if !cached {
		var err error
		if entry, err = s.loadSession(ctx, id); err != nil {
			return Session{}, err
		}
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], entry.secretHash) != 1 {
		return Session{}, ErrSessionInvalid
	}
	sess := entry.sess
	if !now.Before(sess.ExpiresAt) || !now.Before(sess.LastSeenAt.Add(s.opts.SessionIdle)) {
		if err := s.deleteSession(ctx, sess.ID); err != nil {
			s.logger.Warn("delete expired session", "err", err)
		}
		return Session{}, ErrSessionExpired
	}
	if now.Sub(sess.LastSeenAt) >= touchInterval {
		// Mark the cached entry first, so a burst of requests from the same
		// browser queues one UPDATE on the single writer, not one each.
		s.cache.setLastSeen(sess.ID, time.Unix(now.Unix(), 0))
		err := s.st.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE kimi_sessions SET last_seen_at = ? WHERE id = ?`, now.Unix(), sess.ID)
			return err
		})
		if err != nil {
			// A missed refresh only shortens the idle window; do not fail the request.
			s.logger.Warn("refresh session", "err", err)
		} else {
			sess.LastSeenAt = time.Unix(now.Unix(), 0)
		}
	}
	return sess, nil
}

// loadSession reads a session row and caches it.
func (s *Service) loadSession(ctx context.Context, id string) (cachedSession, error) {
	gen := s.cache.generation()
	stmt, err := s.sessionStmt(ctx)
	if err != nil {
		return cachedSession{}, err
	}
	var (
		e                             cachedSession
		created, lastSeen, expiresAbs int64
	)
	err = stmt.QueryRowContext(ctx, id).Scan(&e.sess.ID, &e.sess.AdminID, &e.sess.Username, &e.secretHash,
		&e.sess.CSRFToken, &created, &lastSeen, &expiresAbs, &e.sess.IP, &e.sess.UserAgent)
	if errors.Is(err, sql.ErrNoRows) {
		return cachedSession{}, ErrSessionInvalid
	}
	if err != nil {
		return cachedSession{}, fmt.Errorf("auth: load session: %w", err)
	}
	e.sess.CreatedAt = time.Unix(created, 0)
	e.sess.LastSeenAt = time.Unix(lastSeen, 0)
	e.sess.ExpiresAt = time.Unix(expiresAbs, 0)
	e.loaded = s.now()
	s.cache.put(e, gen)
	return e, nil
}

const sessionQuery = `
	SELECT s.id, s.admin_id, a.username, s.secret_hash, s.csrf_token, s.created_at, s.last_seen_at,
	       s.expires_at, s.ip, s.user_agent
	FROM kimi_sessions s JOIN kimi_admins a ON a.id = s.admin_id
	WHERE s.id = ?`

// sessionStmt prepares the per-request session lookup once: parsing SQL is
// most of the cost of this query, and every admin page runs it.
func (s *Service) sessionStmt(ctx context.Context) (*sql.Stmt, error) {
	if stmt := s.sessStmt.Load(); stmt != nil {
		return stmt, nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if stmt := s.sessStmt.Load(); stmt != nil {
		return stmt, nil
	}
	stmt, err := s.st.Reader().PrepareContext(ctx, sessionQuery)
	if err != nil {
		return nil, fmt.Errorf("auth: prepare session lookup: %w", err)
	}
	s.sessStmt.Store(stmt)
	return stmt, nil
}

// Logout deletes the session and records it.
func (s *Service) Logout(ctx context.Context, sess Session, meta ClientMeta) error {
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_sessions WHERE id = ?`, sess.ID); err != nil {
			return fmt.Errorf("auth: delete session: %w", err)
		}
		s.cache.dropID(sess.ID)
		return store.AuditTx(ctx, tx, store.AuditEntry{
			At: s.now(), Actor: sess.Username, Action: ActionLogout, IP: meta.IP,
		})
	})
	s.cache.dropID(sess.ID)
	if err != nil {
		return fmt.Errorf("auth: logout: %w", err)
	}
	return nil
}

// ChangePassword verifies the current password, stores the new one, revokes
// every session of the admin (this one included) and returns a fresh session
// for the caller to set as the new cookie.
func (s *Service) ChangePassword(ctx context.Context, sess Session, current, newPassword string, meta ClientMeta) (IssuedSession, error) {
	var hash string
	err := s.st.Reader().QueryRowContext(ctx, `SELECT password_hash FROM kimi_admins WHERE id = ?`, sess.AdminID).Scan(&hash)
	if err != nil {
		return IssuedSession{}, fmt.Errorf("auth: load admin: %w", err)
	}
	now := s.now()
	ok := false
	if len(current) <= MaxPasswordBytes {
		if ok, err = s.checkPassword(ctx, hash, current); err != nil {
			return IssuedSession{}, err
		}
	}
	if !ok {
		// Recorded even if the client has gone away (see Login).
		ctx, cancel := detached(ctx)
		defer cancel()
		if err := s.st.Audit(ctx, store.AuditEntry{
			At: now, Actor: sess.Username, Action: ActionPasswordChangeFailed, IP: meta.IP,
			Detail: "current password incorrect",
		}); err != nil {
			s.logger.Error("audit failed password change", "err", err)
		}
		return IssuedSession{}, ErrCurrentPasswordBad
	}
	if err := ValidatePassword(sess.Username, newPassword); err != nil {
		return IssuedSession{}, err
	}
	newHash, err := s.hashPassword(ctx, newPassword)
	if err != nil {
		return IssuedSession{}, err
	}
	var issued IssuedSession
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := setPasswordTx(ctx, tx, sess.AdminID, newHash, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_sessions WHERE admin_id = ?`, sess.AdminID)
		if err != nil {
			return fmt.Errorf("auth: revoke sessions: %w", err)
		}
		s.cache.dropAdmin(sess.AdminID)
		revoked, _ := res.RowsAffected()
		issued, err = s.insertSession(ctx, tx, sess.AdminID, sess.Username, meta, now)
		if err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{
			At: now, Actor: sess.Username, Action: ActionPasswordChange, Target: sess.Username, IP: meta.IP,
			Detail: fmt.Sprintf("%d other session(s) revoked", max(revoked-1, 0)),
		})
	})
	s.cache.dropAdmin(sess.AdminID)
	if err != nil {
		return IssuedSession{}, fmt.Errorf("auth: change password: %w", err)
	}
	return issued, nil
}

// RevokeOtherSessions signs the admin out everywhere except sess and returns
// how many sessions ended.
func (s *Service) RevokeOtherSessions(ctx context.Context, sess Session, meta ClientMeta) (int64, error) {
	var n int64
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_sessions WHERE admin_id = ? AND id <> ?`, sess.AdminID, sess.ID)
		if err != nil {
			return fmt.Errorf("auth: revoke sessions: %w", err)
		}
		s.cache.dropAdmin(sess.AdminID)
		n, _ = res.RowsAffected()
		return store.AuditTx(ctx, tx, store.AuditEntry{
			At: s.now(), Actor: sess.Username, Action: ActionSessionsRevoke, IP: meta.IP,
			Detail: fmt.Sprintf("%d session(s) revoked", n),
		})
	})
	s.cache.dropAdmin(sess.AdminID)
	if err != nil {
		return 0, fmt.Errorf("auth: revoke other sessions: %w", err)
	}
	return n, nil
}

// ListSessions returns the admin's live sessions, newest first.
func (s *Service) ListSessions(ctx context.Context, adminID int64) ([]Session, error) {
	now := s.now()
	rows, err := s.st.Reader().QueryContext(ctx, `
		SELECT id, admin_id, created_at, last_seen_at, expires_at, ip, user_agent
		FROM kimi_sessions WHERE admin_id = ? AND expires_at > ? AND last_seen_at > ?
		ORDER BY last_seen_at DESC, created_at DESC LIMIT 100`,
		adminID, now.Unix(), now.Add(-s.opts.SessionIdle).Unix())
	if err != nil {
		return nil, fmt.Errorf("auth: list sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var sess Session
		var created, seen, exp int64
		if err := rows.Scan(&sess.ID, &sess.AdminID, &created, &seen, &exp, &sess.IP, &sess.UserAgent); err != nil {
			return nil, fmt.Errorf("auth: scan session: %w", err)
		}
		sess.CreatedAt, sess.LastSeenAt, sess.ExpiresAt = time.Unix(created, 0), time.Unix(seen, 0), time.Unix(exp, 0)
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("auth: list sessions: %w", err)
	}
	return out, nil
}

// PurgeExpired deletes expired sessions and setup tokens; the admin server
// calls it periodically.
func (s *Service) PurgeExpired(ctx context.Context) (int64, error) {
	now := s.now()
	var n int64
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_sessions WHERE expires_at <= ? OR last_seen_at <= ?`,
			now.Unix(), now.Add(-s.opts.SessionIdle).Unix())
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		s.cache.dropAll()
		_, err = tx.ExecContext(ctx, `DELETE FROM kimi_setup_tokens WHERE expires_at <= ?`, now.Unix())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("auth: purge expired: %w", err)
	}
	return n, nil
}

func (s *Service) insertSession(ctx context.Context, tx *sql.Tx, adminID int64, username string, meta ClientMeta, now time.Time) (IssuedSession, error) {
	id, secret := rand.Text(), rand.Text()
	sum := sha256.Sum256([]byte(secret))
	ua := meta.UserAgent
	if len(ua) > maxUserAgent {
		ua = truncateUTF8(ua, maxUserAgent)
	}
	sess := Session{
		ID: id, AdminID: adminID, Username: username, CSRFToken: rand.Text(),
		CreatedAt: time.Unix(now.Unix(), 0), LastSeenAt: time.Unix(now.Unix(), 0),
		ExpiresAt: time.Unix(now.Add(s.opts.SessionAbsolute).Unix(), 0), IP: meta.IP, UserAgent: ua,
	}
	_, err := tx.ExecContext(ctx, `
		INSERT INTO kimi_sessions (id, secret_hash, admin_id, csrf_token, created_at, last_seen_at, expires_at, ip, user_agent)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sess.ID, sum[:], adminID, sess.CSRFToken, sess.CreatedAt.Unix(), sess.LastSeenAt.Unix(),
		sess.ExpiresAt.Unix(), sess.IP, sess.UserAgent)
	if err != nil {
		return IssuedSession{}, fmt.Errorf("auth: insert session: %w", err)
	}
	return IssuedSession{Session: sess, Cookie: id + "." + secret}, nil
}

func (s *Service) deleteSession(ctx context.Context, id string) error {
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM kimi_sessions WHERE id = ?`, id)
		return err
	})
	s.cache.dropID(id)
	if err != nil {
		return fmt.Errorf("auth: delete session: %w", err)
	}
	return nil
}

// splitCookie parses "<id>.<secret>" as produced by insertSession
// (crypto/rand.Text: 26 base32 characters each).
func splitCookie(v string) (id, secret string, ok bool) {
	if len(v) > 128 {
		return "", "", false
	}
	id, secret, ok = strings.Cut(v, ".")
	if !ok || id == "" || secret == "" {
		return "", "", false
	}
	return id, secret, true
}

func userAgentDetail(ua string) string {
	if ua == "" {
		return ""
	}
	return "user agent: " + truncateUTF8(ua, 120)
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}
