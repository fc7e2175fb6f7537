package settings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/worldtree"
)

// openSettingsStore opens a migrated store in t.TempDir().
func openSettingsStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return st
}

var who = Actor{Name: "admin", IP: "192.0.2.1"}

// Keys used by the tests, long and distinctive so a leak is found by substring search.
const (
	canaryKey   = "canary-key-0123456789abcdef"
	consumerKey = "consumer-key-9876543210zyx"
	adminKey    = "admin-key-xyz-5555555555"
)

func auditDetails(t *testing.T, st *store.Store) []string {
	t.Helper()
	rows, _, err := st.ListAudit(context.Background(), store.AuditFilter{Action: AuditActionWorldtree, Limit: store.AuditPageMax})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		if r.Actor != who.Name || r.IP != who.IP || r.Target != "worldtree" {
			t.Errorf("audit row %+v: wrong actor, IP or target", r)
		}
		out = append(out, r.Detail)
	}
	return out
}

func TestSettingsSaveMergeAndRemove(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)

	got, err := LoadWorldtree(ctx, st)
	if err != nil || got.Configured() {
		t.Fatalf("fresh store: %v, %v; want unconfigured", got, err)
	}

	steps := []struct {
		name   string
		update WorldtreeUpdate
		want   Worldtree
		detail string
	}{
		{"first save trims and strips the trailing slash",
			WorldtreeUpdate{BaseURL: " https://wt.example/api/ ", DefaultKey: KeyUpdate{Value: canaryKey + "\n"}, AdminKey: KeyUpdate{Value: adminKey}},
			Worldtree{BaseURL: "https://wt.example/api", DefaultKey: canaryKey, AdminKey: adminKey},
			"base URL set to https://wt.example/api; default key set; admin key set"},
		{"blank keys keep the stored ones",
			WorldtreeUpdate{BaseURL: "https://wt.example/api"},
			Worldtree{BaseURL: "https://wt.example/api", DefaultKey: canaryKey, AdminKey: adminKey},
			"saved, nothing changed"},
		{"replace the default key, add the consumer key, move the URL",
			WorldtreeUpdate{BaseURL: "http://127.0.0.1:8080", DefaultKey: KeyUpdate{Value: "second-default-key"}, AdminKey: KeyUpdate{Value: adminKey},
				ConsumerKey: KeyUpdate{Value: consumerKey}},
			Worldtree{BaseURL: "http://127.0.0.1:8080", DefaultKey: "second-default-key", AdminKey: adminKey, ConsumerKey: consumerKey},
			"base URL changed to http://127.0.0.1:8080; default key replaced; admin key replaced; consumer key set"},
		{"clear the admin key",
			WorldtreeUpdate{BaseURL: "http://127.0.0.1:8080", AdminKey: KeyUpdate{Clear: true}},
			Worldtree{BaseURL: "http://127.0.0.1:8080", DefaultKey: "second-default-key", ConsumerKey: consumerKey},
			"admin key cleared"},
		{"clearing an unset key changes nothing",
			WorldtreeUpdate{BaseURL: "http://127.0.0.1:8080", AdminKey: KeyUpdate{Clear: true}},
			Worldtree{BaseURL: "http://127.0.0.1:8080", DefaultKey: "second-default-key", ConsumerKey: consumerKey},
			"saved, nothing changed"},
	}
	for i, s := range steps {
		saved, err := SaveWorldtree(ctx, st, s.update, who)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		loaded, err := LoadWorldtree(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if saved != s.want || loaded != s.want {
			t.Fatalf("%s: saved %#v loaded %#v, want %#v", s.name, saved, loaded, s.want)
		}
		details := auditDetails(t, st)
		if len(details) != i+1 || details[0] != s.detail {
			t.Fatalf("%s: audit details %q, want newest %q", s.name, details, s.detail)
		}
	}

	removed, err := RemoveWorldtree(ctx, st, who)
	if err != nil || !removed {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if got, _ := LoadWorldtree(ctx, st); got != (Worldtree{}) {
		t.Fatalf("after remove: %#v", got)
	}
	var n int
	if err := st.Reader().QueryRow(`SELECT COUNT(*) FROM kimi_settings WHERE key LIKE 'worldtree.%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("worldtree rows after remove: %d %v", n, err)
	}
	removed, err = RemoveWorldtree(ctx, st, who)
	if err != nil || removed {
		t.Fatalf("second remove: %v %v, want false nil", removed, err)
	}
	details := auditDetails(t, st)
	if len(details) != len(steps)+1 || !strings.Contains(details[0], "removed") {
		t.Fatalf("audit after removes: %q", details)
	}
	for _, d := range details {
		for _, key := range []string{canaryKey, adminKey, consumerKey, "second-default-key"} {
			if strings.Contains(d, key) {
				t.Errorf("audit detail %q contains a key", d)
			}
		}
	}
}

func TestSettingsValidation(t *testing.T) {
	ctx := context.Background()
	const good = "https://wt.example"
	tests := []struct {
		name      string
		update    WorldtreeUpdate
		field     string
		wantInMsg string
	}{
		{"empty base URL", WorldtreeUpdate{DefaultKey: KeyUpdate{Value: "k"}}, FieldWorldtreeBaseURL, "Enter the Worldtree base URL"},
		{"relative base URL", WorldtreeUpdate{BaseURL: "wt.example", DefaultKey: KeyUpdate{Value: "k"}}, FieldWorldtreeBaseURL, "scheme must be http or https"},
		{"ftp scheme", WorldtreeUpdate{BaseURL: "ftp://wt.example", DefaultKey: KeyUpdate{Value: "k"}}, FieldWorldtreeBaseURL, "scheme must be http or https"},
		{"query", WorldtreeUpdate{BaseURL: good + "/?a=1", DefaultKey: KeyUpdate{Value: "k"}}, FieldWorldtreeBaseURL, "must not have a query"},
		{"fragment", WorldtreeUpdate{BaseURL: good + "#x", DefaultKey: KeyUpdate{Value: "k"}}, FieldWorldtreeBaseURL, "must not have a fragment"},
		{"no host", WorldtreeUpdate{BaseURL: "https:///path", DefaultKey: KeyUpdate{Value: "k"}}, FieldWorldtreeBaseURL, "has no host"},
		{"user info", WorldtreeUpdate{BaseURL: "https://bob:hunter2@wt.example", DefaultKey: KeyUpdate{Value: "k"}}, FieldWorldtreeBaseURL, "user name or password"},
		{"too long", WorldtreeUpdate{BaseURL: good + "/" + strings.Repeat("a", MaxBaseURLBytes), DefaultKey: KeyUpdate{Value: "k"}}, FieldWorldtreeBaseURL, "longer than"},
		{"no default key on first save", WorldtreeUpdate{BaseURL: good}, FieldWorldtreeDefaultKey, "Enter the Worldtree API key"},
		{"clearing the default key", WorldtreeUpdate{BaseURL: good, DefaultKey: KeyUpdate{Clear: true}}, FieldWorldtreeDefaultKey, "required"},
		{"key with an inner space", WorldtreeUpdate{BaseURL: good, DefaultKey: KeyUpdate{Value: "abc def"}}, FieldWorldtreeDefaultKey, "space, control or non-ASCII"},
		{"non-ASCII admin key", WorldtreeUpdate{BaseURL: good, DefaultKey: KeyUpdate{Value: "k"}, AdminKey: KeyUpdate{Value: "clé"}}, FieldWorldtreeAdminKey, "non-ASCII"},
		{"key and clear together", WorldtreeUpdate{BaseURL: good, DefaultKey: KeyUpdate{Value: "k"}, ConsumerKey: KeyUpdate{Value: "c", Clear: true}}, FieldWorldtreeConsumerKey, "not both"},
		{"consumer key equal to the default key", WorldtreeUpdate{BaseURL: good, DefaultKey: KeyUpdate{Value: "same-key-123"}, ConsumerKey: KeyUpdate{Value: "same-key-123"}}, FieldWorldtreeConsumerKey, "differ from the default key"},
		{"huge key", WorldtreeUpdate{BaseURL: good, DefaultKey: KeyUpdate{Value: strings.Repeat("k", MaxKeyBytes+1)}}, FieldWorldtreeDefaultKey, "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openSettingsStore(t)
			_, err := SaveWorldtree(ctx, st, tt.update, who)
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if msg := se.Fields[tt.field]; !strings.Contains(msg, tt.wantInMsg) {
				t.Fatalf("field %s message %q, want it to contain %q (all: %v)", tt.field, msg, tt.wantInMsg, se.Fields)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "clé") {
				t.Errorf("error repeats secret input: %v", err)
			}
			if got, _ := LoadWorldtree(ctx, st); got.Configured() {
				t.Errorf("invalid input was stored: %v", got)
			}
			if n := len(auditDetails(t, st)); n != 0 {
				t.Errorf("%d audit rows for a refused save", n)
			}
		})
	}
}

func TestSettingsNeverPrintKeys(t *testing.T) {
	s := Worldtree{BaseURL: "https://wt.example", DefaultKey: canaryKey, AdminKey: adminKey, ConsumerKey: consumerKey}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("settings", "s", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), logs.String()} {
		for _, key := range []string{canaryKey, adminKey, consumerKey} {
			if strings.Contains(out, key) {
				t.Errorf("key printed: %s", out)
			}
		}
		if !strings.Contains(out, "wt.example") {
			t.Errorf("base URL missing from %s", out)
		}
	}
}

func TestSettingsNewClient(t *testing.T) {
	if _, err := (Worldtree{}).NewClient(); !errors.Is(err, worldtree.ErrInvalidArgument) {
		t.Fatalf("unconfigured NewClient err = %v", err)
	}
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auths = append(auths, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"user_id":"alice","scopes":[]}`)
	}))
	t.Cleanup(srv.Close)
	c, err := Worldtree{BaseURL: srv.URL, DefaultKey: canaryKey, AdminKey: adminKey}.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetMe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(auths) != 1 || auths[0] != "Bearer "+canaryKey {
		t.Fatalf("Authorization headers %q: want one with the default key", auths)
	}
}

// TestSettingsNewClientRedactsEveryKey checks the client of the settings redacts the admin and
// consumer keys too, not only the default key it sends: a server echoing any configured key
// (here into the Content-Type of a default-key request) never gets it into an error.
func TestSettingsNewClientRedactsEveryKey(t *testing.T) {
	for _, key := range []string{"~", "^~", "k3y~0123456789ab"} {
		for _, role := range []string{"admin", "consumer"} {
			t.Run(role+"/"+key, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "text/html; echo="+key)
					_, _ = io.WriteString(w, "<p>"+key+"</p>")
				}))
				t.Cleanup(srv.Close)
				s := Worldtree{BaseURL: srv.URL, DefaultKey: canaryKey}
				if role == "admin" {
					s.AdminKey = key
				} else {
					s.ConsumerKey = key
				}
				c, err := s.NewClient()
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.GetMe(t.Context())
				if err == nil {
					t.Fatal("no error for an HTML answer")
				}
				for _, out := range []string{err.Error(), fmt.Sprintf("%+v", err), worldtree.DescribeError(err)} {
					if strings.Contains(out, key) {
						t.Errorf("%s key %q leaks into %q", role, key, out)
					}
				}
			})
		}
	}
}

func TestHasUserInfo(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"https://wt.example", false},
		{"https://wt.example/a@b", false},
		{"https://bob@wt.example", true},
		{" https://bob:secret@wt.example/api ", true},
		{"https://bob:se cret@wt.example/%zz", true}, // does not parse; still recognised
		{"https://wt.example/%zz", false},
		{"wt.example", false},
		// Mistyped schemes still carry a password that must not be echoed into the form.
		{"bob:hunter2@wt.example", true},
		{"https:bob:hunter2@wt.example", true},
		{"https:/bob:hunter2@wt.example/api", true},
		{"https:///bob:hunter2@wt.example", true},
		{"https://wt.example?next=a@b", false},
		{"wt.example/a@b", false},
	}
	for _, tt := range tests {
		if got := HasUserInfo(tt.in); got != tt.want {
			t.Errorf("HasUserInfo(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestSettingsConsumerKeyDiffersAfterMerge checks the consumer key is compared with the default
// key as merged with the stored one (a blank field keeps it), in both directions.
func TestSettingsConsumerKeyDiffersAfterMerge(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)
	first := WorldtreeUpdate{BaseURL: "https://wt.example", DefaultKey: KeyUpdate{Value: canaryKey}, ConsumerKey: KeyUpdate{Value: consumerKey}}
	if _, err := SaveWorldtree(ctx, st, first, who); err != nil {
		t.Fatal(err)
	}
	for _, u := range []WorldtreeUpdate{
		{BaseURL: "https://wt.example", ConsumerKey: KeyUpdate{Value: canaryKey}},  // new consumer = stored default
		{BaseURL: "https://wt.example", DefaultKey: KeyUpdate{Value: consumerKey}}, // new default = stored consumer
	} {
		_, err := SaveWorldtree(ctx, st, u, who)
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(se.Fields[FieldWorldtreeConsumerKey], "differ from the default key") {
			t.Fatalf("err = %v, want a consumer key field error", err)
		}
		if strings.Contains(err.Error(), canaryKey) || strings.Contains(err.Error(), consumerKey) {
			t.Errorf("error repeats a key: %v", err)
		}
	}
	if got, _ := LoadWorldtree(ctx, st); got.DefaultKey != canaryKey || got.ConsumerKey != consumerKey {
		t.Errorf("refused saves changed the keys: %v", got)
	}
	if n := len(auditDetails(t, st)); n != 1 {
		t.Errorf("%d audit rows, want 1 (refused saves write none)", n)
	}
}

// TestSettingsKeysAreNeverCarriedToAnotherServer: moving the base URL to
// another server while a stored key's field is left blank is refused on
// that field and changes nothing; a new path on the same server keeps the
// keys.
func TestSettingsKeysAreNeverCarriedToAnotherServer(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)
	if _, err := SaveWorldtree(ctx, st, WorldtreeUpdate{BaseURL: "https://wt.example/api", DefaultKey: KeyUpdate{Value: canaryKey},
		AdminKey: KeyUpdate{Value: adminKey}}, who); err != nil {
		t.Fatal(err)
	}
	_, err := SaveWorldtree(ctx, st, WorldtreeUpdate{BaseURL: "https://collector.example/api", DefaultKey: KeyUpdate{Value: "a-new-default-key"}}, who)
	var se *Error
	if !errors.As(err, &se) || se.Fields[FieldWorldtreeAdminKey] != msgWorldtreeKeyMoved || se.Fields[FieldWorldtreeDefaultKey] != "" {
		t.Fatalf("move with the admin key blank: %v, want a refusal on the admin key only", err)
	}
	if got, _ := LoadWorldtree(ctx, st); got.BaseURL != "https://wt.example/api" || got.DefaultKey != canaryKey {
		t.Fatalf("a refused move changed the settings: %#v", got)
	}
	if _, err := SaveWorldtree(ctx, st, WorldtreeUpdate{BaseURL: "https://wt.example/api/v2"}, who); err != nil {
		t.Fatalf("another path on the same server: %v", err)
	}
	if _, err := SaveWorldtree(ctx, st, WorldtreeUpdate{BaseURL: "https://collector.example/api", DefaultKey: KeyUpdate{Value: "a-new-default-key"},
		AdminKey: KeyUpdate{Clear: true}}, who); err != nil {
		t.Fatalf("move with every stored key entered again or cleared: %v", err)
	}
}
