package admin

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/store"
)

// Device cookies (OWASP's answer to lock-out by a distributed guesser): a
// browser that has signed in to an account carries a signed cookie naming a
// random nonce, and its later attempts for that account skip the
// per-username budget — so guessers elsewhere, who keep that budget empty,
// cannot lock the admin out of their own browser. The per-client budget
// still applies to it, and the cookie is worth nothing for another account
// or on another server (the MAC covers the account and uses this server's
// key).
const (
	deviceCookie    = "kimi_device"
	deviceCookieTTL = 365 * 24 * time.Hour
	// settingDeviceKey holds the MAC key (hex). It is a secret setting: a
	// backup without secrets leaves it out, and the restored server mints a
	// new key, so its old device cookies simply stop counting.
	settingDeviceKey = "admin.device_key"
)

// deviceKeys loads (or, the first time, mints) the server's device-cookie
// key once; a failure is retried on the next use.
type deviceKeys struct {
	mu  sync.Mutex
	key []byte
}

func (d *deviceKeys) get(ctx context.Context, st *store.Store) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.key != nil {
		return d.key, nil
	}
	v, ok, err := st.Setting(ctx, settingDeviceKey)
	if err != nil {
		return nil, fmt.Errorf("admin: read device key: %w", err)
	}
	if k, herr := hex.DecodeString(v); ok && herr == nil && len(k) == 32 {
		d.key = k
		return k, nil
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		return store.SetSecretSettingTx(ctx, tx, settingDeviceKey, hex.EncodeToString(key))
	}); err != nil {
		return nil, fmt.Errorf("admin: store device key: %w", err)
	}
	d.key = key
	return key, nil
}

// deviceMAC signs nonce for account (case-folded, as accounts compare).
func deviceMAC(key []byte, account, nonce string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("kimi-device\x00" + strings.ToLower(account) + "\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// trustedDevice reports whether the request carries a valid device cookie
// for account.
func (s *Server) trustedDevice(c echo.Context, account string) bool {
	ck, err := c.Cookie(deviceCookie)
	if err != nil {
		return false
	}
	nonce, mac, ok := strings.Cut(ck.Value, ".")
	if !ok || !csrfTokenRE.MatchString(nonce) || len(mac) != 43 {
		return false
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	key, err := s.devices.get(ctx, s.opts.Store)
	if err != nil {
		s.log.Warn("device key unavailable; device cookies are not honoured", "err", err)
		return false
	}
	return hmac.Equal([]byte(mac), []byte(deviceMAC(key, account, nonce)))
}

// rememberDevice gives the browser a device cookie for account after a
// successful sign-in (or set-up).
func (s *Server) rememberDevice(c echo.Context, account string) {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	key, err := s.devices.get(ctx, s.opts.Store)
	if err != nil {
		s.log.Warn("device key unavailable; no device cookie issued", "err", err)
		return
	}
	nonce := rand.Text()
	s.setCookie(c, deviceCookie, nonce+"."+deviceMAC(key, account, nonce), deviceCookieTTL, http.SameSiteStrictMode)
}
