package proposals

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/egress"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

func (w *world) setNotify(n settings.ProposalNotifications, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notifyFn = func(context.Context) (settings.ProposalNotifications, error) { return n, err }
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNotifications: off by default; a DM to the application owner; a
// webhook POST with the proposal's JSON; a failing notification is logged
// and the proposal stands.
func TestNotifications(t *testing.T) {
	w := newWorld(t)
	owner := "900000000000000003" // fakediscord's application owner
	w.propose("---\nmode: quiet\n---\n")
	w.svc.Close() // waits for the (no-op) notification
	if w.fake.DMChannel(owner) != "" {
		t.Fatal("a DM was sent with notifications off")
	}
	w.svc.bgCtx, w.svc.cancel = context.WithCancel(context.Background())

	w.setNotify(settings.ProposalNotifications{Mode: settings.NotifyDM}, nil)
	waitFor(t, "the owner to be known", func() bool { return w.bot.OwnerID() != 0 })
	ref := w.propose("---\nmode: quiet\n---\n")
	waitFor(t, "the DM", func() bool {
		ch := w.fake.DMChannel(owner)
		if ch == "" {
			return false
		}
		for _, m := range w.fake.Messages(ch) {
			if strings.Contains(m.Content, ref.ID) && strings.Contains(m.Content, "set alpha") {
				return true
			}
		}
		return false
	})

	w.setNotify(settings.ProposalNotifications{Mode: settings.NotifyWebhook, WebhookURL: "https://hooks.example.com/x?token=secret"}, nil)
	ref = w.propose("---\nmode: quiet\n---\n")
	waitFor(t, "the webhook", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.webhooks) == 1 && strings.Contains(w.webhooks[0], ref.ID) && strings.Contains(w.webhooks[0], "Event:proposal.created")
	})

	w.setNotify(settings.ProposalNotifications{}, errors.New("settings unreadable"))
	ref = w.propose("---\nmode: quiet\n---\n")
	waitFor(t, "the failure log", func() bool { return strings.Contains(w.logs.String(), "proposal notification failed") })
	if p := w.proposal(ref.ID); p.State != sdk.ProposalPending {
		t.Fatalf("proposal after a failed notification: %+v", p)
	}
}

// TestWebhookRefusesPrivateHosts: the real webhook poster follows the
// egress rules — a loopback or private address is refused, and so is
// plain http.
func TestWebhookRefusesPrivateHosts(t *testing.T) {
	for _, u := range []string{"https://127.0.0.1/hook", "https://10.0.0.8/hook", "http://hooks.example.com/x", "https://localhost/x", "https://[::1]/x"} {
		if err := postWebhook(context.Background(), u, map[string]string{"a": "b"}); err == nil {
			t.Fatalf("%s was posted to", u)
		}
	}
}

// TestReportUncarded: a pending proposal without a card (a crash between
// the row and the card) is reported at start with a warning.
func TestReportUncarded(t *testing.T) {
	w := newWorld(t)
	ref := w.propose("---\nmode: quiet\n---\n")
	if _, err := w.st.Writer().Exec(`UPDATE kimi_proposals SET card_message_id = 0, card_channel_id = 0 WHERE id = ?`, ref.ID); err != nil {
		t.Fatal(err)
	}
	got, err := w.svc.ReportUncarded(w.ctx)
	if err != nil || len(got) != 1 || got[0].ID != ref.ID {
		t.Fatalf("ReportUncarded = %+v, %v", got, err)
	}
	if !strings.Contains(w.logs.String(), "pending proposal has no review card") || !strings.Contains(w.logs.String(), ref.ID) {
		t.Fatalf("no warning logged:\n%s", w.logs.String())
	}
}

// TestCheck: what an approval would meet now.
func TestCheck(t *testing.T) {
	w := newWorld(t)
	p := w.proposal(w.propose("---\nmode: quiet\n---\n").ID)
	res, err := w.svc.Check(w.ctx, p.ID)
	if err != nil || res.Conflict || len(res.Problems) != 0 || res.Live.Exists {
		t.Fatalf("Check = %+v, %v", res, err)
	}
	w.writeDoc(p.Target, "---\nmode: loud\nchannel_id: 1\n---\n")
	if res, _ = w.svc.Check(w.ctx, p.ID); !res.Conflict {
		t.Fatalf("Check after a change = %+v", res)
	}
	w.writeDoc(p.Target, p.Content)
	if res, _ = w.svc.Check(w.ctx, p.ID); res.Conflict {
		t.Fatalf("Check with the proposal live = %+v", res)
	}
	if _, err := w.svc.Check(w.ctx, "nope"); err != ErrNotFound {
		t.Fatalf("Check(nope) = %v", err)
	}
}

// privateResolver resolves every name to 127.0.0.1 (a public-looking
// webhook host whose DNS points inside, or rebinds there).
type privateResolver struct{}

func (privateResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestWebhookRefusesANameResolvingInside: the URL checks alone pass a
// host name; the egress rule must refuse it on the address dialed. A TLS
// server really listens there (and would answer): it must get no request,
// and the error must not carry the URL's secret path or query.
// TestWebhookRefusesPrivateHosts only tried URLs the settings' checks
// refuse before egress is reached.
func TestWebhookRefusesANameResolvingInside(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tlsConf := &tls.Config{RootCAs: pool, ServerName: "example.com"}
	hook := "https://hooks.example.com:" + u.Port() + "/T0KEN-PATH?token=s3cret"

	err := postWebhookVia(context.Background(), egress.Options{Resolver: privateResolver{}, TLSConfig: tlsConf}, hook, map[string]string{"a": "b"})
	if err == nil || hits.Load() != 0 {
		t.Fatalf("a webhook name resolving to 127.0.0.1 was posted to (err %v, %d requests)", err, hits.Load())
	}
	if strings.Contains(err.Error(), "T0KEN") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error shows the webhook's secret: %v", err)
	}
}
