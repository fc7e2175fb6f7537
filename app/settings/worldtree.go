package settings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/worldtree"
)

// Keys of the Worldtree settings in the store's settings table.
const (
	SettingWorldtreeBaseURL     = "worldtree.base_url"
	SettingWorldtreeDefaultKey  = "worldtree.default_key"
	SettingWorldtreeAdminKey    = "worldtree.admin_key"
	SettingWorldtreeConsumerKey = "worldtree.consumer_key"
)

// AuditActionWorldtree is the audit action of every change to the Worldtree settings (save and
// removal). Its detail names what changed, never a key.
const AuditActionWorldtree = "worldtree.settings"

// Bounds of the stored settings: a base URL is an address, a key is a token; anything longer is a
// paste accident.
const (
	MaxBaseURLBytes = 2048
	MaxKeyBytes     = 1024
)

// consumerKeySameMsg refuses a consumer key equal to the default key: a Bifrost-bound create
// never sends the default key (the contract's INV-001), and Bifrost rejects it.
const consumerKeySameMsg = "The consumer key must differ from the default key: Bifrost rejects the default key (bifrost.auth_rejected)."

// Field names of the Worldtree settings: the keys of Error.Fields, and the names of the admin
// form's fields (app/admin/form uses these constants).
const (
	FieldWorldtreeBaseURL     = "base_url"
	FieldWorldtreeDefaultKey  = "default_key"
	FieldWorldtreeAdminKey    = "admin_key"
	FieldWorldtreeConsumerKey = "consumer_key"
)

// Store is what the settings need of the store: reads on the reader pool and one write
// transaction per change.
type Store interface {
	Reader() *sql.DB
	Write(ctx context.Context, fn func(tx *sql.Tx) error) error
}

var _ Store = (*store.Store)(nil)

// Worldtree is the stored Worldtree connection. The keys are secrets: print a Worldtree with %v
// or slog and they show only as set or not set.
type Worldtree struct {
	BaseURL     string
	DefaultKey  string
	AdminKey    string // optional: sent on /admin endpoints only
	ConsumerKey string // optional: sent on Bifrost-bound session creates only
}

// Configured reports whether Worldtree is configured (a base URL is stored).
func (s Worldtree) Configured() bool { return s.BaseURL != "" }

// NewClient returns a client for these settings with the default key, redacting the admin and
// consumer keys from its errors too; opts come after, so a caller can add a timeout, logger or
// HTTP client.
func (s Worldtree) NewClient(opts ...worldtree.Option) (*worldtree.Client, error) {
	if !s.Configured() {
		return nil, fmt.Errorf("settings: new worldtree client: %w: Worldtree is not configured", worldtree.ErrInvalidArgument)
	}
	base := []worldtree.Option{worldtree.WithKey(s.DefaultKey), worldtree.WithRedactedKeys(s.AdminKey, s.ConsumerKey)}
	return worldtree.New(s.BaseURL, append(base, opts...)...)
}

// String describes the settings without their keys.
func (s Worldtree) String() string {
	return fmt.Sprintf("worldtree.Worldtree{base: %s, default key set: %t, admin key set: %t, consumer key set: %t}",
		s.BaseURL, s.DefaultKey != "", s.AdminKey != "", s.ConsumerKey != "")
}

// GoString is String, so %#v does not print the keys either.
func (s Worldtree) GoString() string { return s.String() }

// LogValue keeps the keys out of slog output.
func (s Worldtree) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", s.BaseURL), slog.Bool("default_key_set", s.DefaultKey != ""),
		slog.Bool("admin_key_set", s.AdminKey != ""), slog.Bool("consumer_key_set", s.ConsumerKey != ""))
}

var (
	_ fmt.Stringer   = Worldtree{}
	_ fmt.GoStringer = Worldtree{}
	_ slog.LogValuer = Worldtree{}
)

// settingWrite is one setting a save writes: an empty value deletes it; a
// secret (a key) is left out of a backup without secrets.
type settingWrite struct {
	key, value string
	secret     bool
}

// writeSettingsTx writes each of ws in tx.
func writeSettingsTx(ctx context.Context, tx *sql.Tx, ws []settingWrite) error {
	for _, w := range ws {
		var err error
		switch {
		case w.value == "":
			err = store.DeleteSettingTx(ctx, tx, w.key)
		case w.secret:
			err = store.SetSecretSettingTx(ctx, tx, w.key, w.value)
		default:
			err = store.SetSettingTx(ctx, tx, w.key, w.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// msgWorldtreeKeyMoved refuses a save that would send a stored Worldtree
// key to another server.
const msgWorldtreeKeyMoved = "The base URL now points at another server: enter this key again (or tick clear), so the stored key is never sent to a new host."

// KeyUpdate is the change to one key: a new Value replaces it, Clear removes it, and neither
// keeps the stored key (a blank field on the form).
type KeyUpdate struct {
	Value string
	Clear bool
}

// WorldtreeUpdate is a submitted change to the Worldtree settings.
type WorldtreeUpdate struct {
	BaseURL     string
	DefaultKey  KeyUpdate
	AdminKey    KeyUpdate
	ConsumerKey KeyUpdate
}

// Error lists the problems of a WorldtreeUpdate by field (FieldWorldtreeBaseURL, …), as
// operator-facing sentences that never contain a key.
type Error struct {
	Fields map[string]string
}

// Error lists the fields with problems, in a stable order.
func (e *Error) Error() string {
	names := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+": "+e.Fields[n])
	}
	return "settings: invalid worldtree settings: " + strings.Join(parts, "; ")
}

var _ error = (*Error)(nil)

// Actor identifies who changes the settings, for the audit row.
type Actor struct {
	Name string // the admin username
	IP   string // the client address
}

// Normalize trims the update's surrounding whitespace (a pasted key often ends in a newline).
func (u WorldtreeUpdate) Normalize() WorldtreeUpdate {
	u.BaseURL = strings.TrimSpace(u.BaseURL)
	for _, k := range []*KeyUpdate{&u.DefaultKey, &u.AdminKey, &u.ConsumerKey} {
		k.Value = strings.TrimSpace(k.Value)
	}
	return u
}

// Validate checks the update on its own (the rules of New for the base URL, bearer-token
// characters for keys). Whether a default key exists once merged is checked by SaveWorldtree.
func (u WorldtreeUpdate) Validate() error {
	u = u.Normalize()
	fields := map[string]string{}
	if msg := BaseURLProblem(u.BaseURL); msg != "" {
		fields[FieldWorldtreeBaseURL] = msg
	}
	for _, k := range []struct {
		field, label string
		upd          KeyUpdate
	}{
		{FieldWorldtreeDefaultKey, "The default key", u.DefaultKey},
		{FieldWorldtreeAdminKey, "The admin key", u.AdminKey},
		{FieldWorldtreeConsumerKey, "The consumer key", u.ConsumerKey},
	} {
		switch {
		case k.upd.Clear && k.upd.Value != "":
			fields[k.field] = "Either enter a new key or tick clear, not both."
		case len(k.upd.Value) > MaxKeyBytes:
			fields[k.field] = fmt.Sprintf("%s is longer than %d bytes.", k.label, MaxKeyBytes)
		case worldtree.CheckKey(k.upd.Value) != nil:
			fields[k.field] = k.label + " contains a space, control or non-ASCII character. Paste the key alone."
		}
	}
	if u.DefaultKey.Clear {
		fields[FieldWorldtreeDefaultKey] = "The default key is required. Enter a new key, or remove the Worldtree configuration."
	}
	if u.ConsumerKey.Value != "" && u.ConsumerKey.Value == u.DefaultKey.Value && fields[FieldWorldtreeConsumerKey] == "" {
		fields[FieldWorldtreeConsumerKey] = consumerKeySameMsg
	}
	if len(fields) > 0 {
		return &Error{Fields: fields}
	}
	return nil
}

// BaseURLProblem returns an operator-facing sentence for a base URL that New would refuse, or ""
// when it is valid. The sentence never repeats the URL (it may hold credentials).
func BaseURLProblem(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "Enter the Worldtree base URL, for example https://worldtree.example."
	}
	if len(raw) > MaxBaseURLBytes {
		return fmt.Sprintf("The base URL is longer than %d bytes.", MaxBaseURLBytes)
	}
	if HasUserInfo(raw) {
		return "The base URL must not contain a user name or password. Enter keys in the key fields instead."
	}
	if _, err := worldtree.NormalizeBaseURL(raw); err != nil {
		msg := strings.TrimPrefix(err.Error(), worldtree.ErrInvalidArgument.Error()+": ")
		return "The " + msg + ". Use an absolute http:// or https:// address, for example https://worldtree.example."
	}
	return ""
}

// HasUserInfo reports whether raw carries user info ("https://user:pass@host"). Such input is a
// secret and must not be echoed back into a form. Besides what url.Parse sees as user info, an
// '@' in what would be the authority of a mistyped URL counts ("bob:pass@host",
// "https:/bob:pass@host"), since url.Parse reads those as a scheme with an opaque part or a path.
func HasUserInfo(raw string) bool {
	raw = strings.TrimSpace(raw)
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return true
	}
	rest := raw
	if i := strings.Index(rest, ":"); i > 0 && schemePattern.MatchString(rest[:i]) {
		rest = rest[i+1:]
	}
	rest = strings.TrimLeft(rest, "/")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return strings.Contains(rest, "@")
}

// schemePattern is the syntax of a URL scheme (RFC 3986 §3.1).
var schemePattern = regexp.MustCompile(`\A[A-Za-z][A-Za-z0-9+.-]*\z`)

// LoadWorldtree reads the stored settings. Without a configuration it returns the zero Worldtree
// (Configured() is false) and no error.
func LoadWorldtree(ctx context.Context, st Store) (Worldtree, error) {
	s, err := readWorldtree(ctx, st.Reader())
	if err != nil {
		return Worldtree{}, fmt.Errorf("settings: load worldtree: %w", err)
	}
	return s, nil
}

// querier is what *sql.DB and *sql.Tx share for reading.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readWorldtree reads the Worldtree keys of the settings table through q (the reader pool, or the
// write transaction so a merge sees the values it replaces).
func readWorldtree(ctx context.Context, q querier) (Worldtree, error) {
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM kimi_settings WHERE key IN (?, ?, ?, ?)`,
		SettingWorldtreeBaseURL, SettingWorldtreeDefaultKey, SettingWorldtreeAdminKey, SettingWorldtreeConsumerKey)
	if err != nil {
		return Worldtree{}, err
	}
	defer rows.Close()
	var s Worldtree
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return Worldtree{}, err
		}
		s.set(k, v)
	}
	if err := rows.Err(); err != nil {
		return Worldtree{}, err
	}
	return s, nil
}

// set assigns the stored value of settings key k.
func (s *Worldtree) set(k, v string) {
	switch k {
	case SettingWorldtreeBaseURL:
		s.BaseURL = v
	case SettingWorldtreeDefaultKey:
		s.DefaultKey = v
	case SettingWorldtreeAdminKey:
		s.AdminKey = v
	case SettingWorldtreeConsumerKey:
		s.ConsumerKey = v
	}
}

// SaveWorldtree validates u, merges it with the stored keys (blank keeps, Clear removes) and stores
// the result with an AuditActionWorldtree row, all in one write transaction. Invalid input returns
// a *Error and changes nothing.
func SaveWorldtree(ctx context.Context, st Store, u WorldtreeUpdate, who Actor) (Worldtree, error) {
	u = u.Normalize()
	if err := u.Validate(); err != nil {
		return Worldtree{}, err
	}
	base, err := worldtree.NormalizeBaseURL(u.BaseURL)
	if err != nil { // unreachable after Validate; kept so a rule change cannot store a bad URL
		return Worldtree{}, &Error{Fields: map[string]string{FieldWorldtreeBaseURL: BaseURLProblem(u.BaseURL)}}
	}
	var saved Worldtree
	err = st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readWorldtree(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		next := Worldtree{BaseURL: base}
		var changes []string
		if cur.BaseURL == "" {
			changes = append(changes, "base URL set to "+next.BaseURL)
		} else if cur.BaseURL != next.BaseURL {
			changes = append(changes, "base URL changed to "+next.BaseURL)
		}
		// A stored key is never carried to another server (the model
		// provider's rule, assistant.go).
		if cur.BaseURL != "" && !sameOrigin(cur.BaseURL, next.BaseURL) {
			moved := map[string]string{}
			for field, k := range map[string]struct {
				cur string
				upd KeyUpdate
			}{FieldWorldtreeDefaultKey: {cur.DefaultKey, u.DefaultKey}, FieldWorldtreeAdminKey: {cur.AdminKey, u.AdminKey},
				FieldWorldtreeConsumerKey: {cur.ConsumerKey, u.ConsumerKey}} {
				if keyKept(k.cur, k.upd) {
					moved[field] = msgWorldtreeKeyMoved
				}
			}
			if len(moved) > 0 {
				return &Error{Fields: moved}
			}
		}
		for _, k := range []struct {
			name     string
			cur, out *string
			upd      KeyUpdate
		}{
			{"default key", &cur.DefaultKey, &next.DefaultKey, u.DefaultKey},
			{"admin key", &cur.AdminKey, &next.AdminKey, u.AdminKey},
			{"consumer key", &cur.ConsumerKey, &next.ConsumerKey, u.ConsumerKey},
		} {
			switch {
			case k.upd.Value != "" && *k.cur == "":
				*k.out = k.upd.Value
				changes = append(changes, k.name+" set")
			case k.upd.Value != "":
				*k.out = k.upd.Value
				changes = append(changes, k.name+" replaced")
			case k.upd.Clear && *k.cur != "":
				changes = append(changes, k.name+" cleared")
			case !k.upd.Clear:
				*k.out = *k.cur
			}
		}
		if next.DefaultKey == "" {
			return &Error{Fields: map[string]string{FieldWorldtreeDefaultKey: "Enter the Worldtree API key (the default key)."}}
		}
		if next.ConsumerKey != "" && next.ConsumerKey == next.DefaultKey {
			return &Error{Fields: map[string]string{FieldWorldtreeConsumerKey: consumerKeySameMsg}}
		}
		if err := writeSettingsTx(ctx, tx, []settingWrite{
			{SettingWorldtreeBaseURL, next.BaseURL, false}, {SettingWorldtreeDefaultKey, next.DefaultKey, true},
			{SettingWorldtreeAdminKey, next.AdminKey, true}, {SettingWorldtreeConsumerKey, next.ConsumerKey, true},
		}); err != nil {
			return err
		}
		detail := "saved, nothing changed"
		if len(changes) > 0 {
			detail = strings.Join(changes, "; ")
		}
		if err := store.AuditTx(ctx, tx, store.AuditEntry{
			Actor: who.Name, Action: AuditActionWorldtree, Target: "worldtree", Detail: detail, IP: who.IP,
		}); err != nil {
			return err
		}
		saved = next
		return nil
	})
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return Worldtree{}, err
		}
		return Worldtree{}, fmt.Errorf("settings: save worldtree: %w", err)
	}
	return saved, nil
}

// RemoveWorldtree deletes the whole Worldtree configuration, keys included, with an audit row. It
// reports whether anything was configured; removing nothing writes no audit row.
func RemoveWorldtree(ctx context.Context, st Store, who Actor) (bool, error) {
	removed := false
	err := st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readWorldtree(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		if cur == (Worldtree{}) {
			return nil
		}
		for _, k := range []string{SettingWorldtreeBaseURL, SettingWorldtreeDefaultKey, SettingWorldtreeAdminKey, SettingWorldtreeConsumerKey} {
			if err := store.DeleteSettingTx(ctx, tx, k); err != nil {
				return err
			}
		}
		if err := store.AuditTx(ctx, tx, store.AuditEntry{
			Actor: who.Name, Action: AuditActionWorldtree, Target: "worldtree",
			Detail: "configuration removed (base URL and all keys)", IP: who.IP,
		}); err != nil {
			return err
		}
		removed = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("settings: remove worldtree: %w", err)
	}
	return removed, nil
}
