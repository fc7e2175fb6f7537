package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// setupTokenBytes is the entropy of a setup token (before base64url).
const setupTokenBytes = 32

// NewSetupToken mints the one-time first-run token while no admin exists.
// Only its SHA-256 is stored; older tokens are replaced, so a restart prints a
// fresh one and the previous link stops working. The caller logs the URL, e.g.
// "Open <base>/setup?token=… to create the admin (expires in 30m)".
func (s *Service) NewSetupToken(ctx context.Context) (token string, expires time.Time, err error) {
	raw := make([]byte, setupTokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", time.Time{}, fmt.Errorf("auth: generate setup token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(raw)
	hash := sha256.Sum256([]byte(token))
	expires = s.now().Add(s.opts.SetupTokenTTL)
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := requireNoAdmin(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_setup_tokens`); err != nil {
			return fmt.Errorf("auth: replace setup tokens: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_setup_tokens (token_hash, expires_at) VALUES (?, ?)`,
			hash[:], expires.Unix()); err != nil {
			return fmt.Errorf("auth: store setup token: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return token, expires, nil
}

// CheckSetupToken reports whether token is a live setup token (for rendering
// the set-up form). It returns ErrInvalidSetupToken otherwise, and
// ErrAdminExists once set-up is done.
func (s *Service) CheckSetupToken(ctx context.Context, token string) error {
	if err := requireNoAdmin(ctx, s.st.Reader()); err != nil {
		return err
	}
	if token == "" || len(token) > 256 {
		return ErrInvalidSetupToken
	}
	hash := sha256.Sum256([]byte(token))
	var n int
	err := s.st.Reader().QueryRowContext(ctx,
		`SELECT EXISTS(SELECT 1 FROM kimi_setup_tokens WHERE token_hash = ? AND expires_at > ?)`,
		hash[:], s.now().Unix()).Scan(&n)
	if err != nil {
		return fmt.Errorf("auth: check setup token: %w", err)
	}
	if n != 1 {
		return ErrInvalidSetupToken
	}
	return nil
}

// CompleteSetup consumes the setup token and creates the first admin in one
// transaction, then signs that admin in. The token can be used only once: a
// second call fails with ErrInvalidSetupToken (or ErrAdminExists).
func (s *Service) CompleteSetup(ctx context.Context, token, username, password string, meta ClientMeta) (IssuedSession, error) {
	if err := s.CheckSetupToken(ctx, token); err != nil {
		return IssuedSession{}, err
	}
	if err := ValidateUsername(username); err != nil {
		return IssuedSession{}, err
	}
	if err := ValidatePassword(username, password); err != nil {
		return IssuedSession{}, err
	}
	hash, err := s.hashPassword(ctx, password)
	if err != nil {
		return IssuedSession{}, err
	}
	tokenHash := sha256.Sum256([]byte(token))
	now := s.now()
	var issued IssuedSession
	err = s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := requireNoAdmin(ctx, tx); err != nil {
			return err
		}
		// Burn the token first; zero rows means someone else used it (or it
		// expired) between the check above and this transaction.
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_setup_tokens WHERE token_hash = ? AND expires_at > ?`,
			tokenHash[:], now.Unix())
		if err != nil {
			return fmt.Errorf("auth: consume setup token: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("auth: consume setup token: %w", err)
		} else if n != 1 {
			return ErrInvalidSetupToken
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_setup_tokens`); err != nil {
			return fmt.Errorf("auth: burn setup tokens: %w", err)
		}
		id, err := insertAdmin(ctx, tx, username, hash, now)
		if err != nil {
			return err
		}
		issued, err = s.insertSession(ctx, tx, id, username, meta, now)
		if err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{
			At: now, Actor: username, Action: ActionSetup, Target: username,
			Detail: "first admin created with the setup token", IP: meta.IP,
		})
	})
	if err != nil {
		if errors.Is(err, ErrInvalidSetupToken) || errors.Is(err, ErrAdminExists) {
			return IssuedSession{}, err
		}
		return IssuedSession{}, fmt.Errorf("auth: complete setup: %w", err)
	}
	s.logger.Info("first admin created", "username", username)
	return issued, nil
}
