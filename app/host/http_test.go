package host

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/egress"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// TestHTTPPortOnEgress: the module's HTTP port is the egress port — a
// private rule gets the operator's allow_private_network setting (off: the
// loopback server is refused, and the refusal shows in the module's health
// detail and metrics; on: reached), and the port refuses once revoked.
func TestHTTPPortOnEgress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "inside") }))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	rule := sdk.HostRule{Host: "127.0.0.1", Schemes: []string{"http"}, Ports: []int{port}, Network: sdk.NetworkPrivate}
	env := hostkit.SettingEnvName("m", egress.AllowPrivateNetworkSetting)
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allowed=", allow), func(t *testing.T) {
			mod := &testModule{}
			r := newRig(t, []sdk.Spec{spec("m", mod, func(s *sdk.Spec) { s.Permissions.HTTPHosts = []sdk.HostRule{rule} })},
				withEnv(map[string]string{env: strconv.FormatBool(allow)}))
			r.start(t)
			st := r.status(t, "m")
			found := false
			for _, s := range st.Settings {
				found = found || (s.Field.Name == egress.AllowPrivateNetworkSetting && s.Editable)
			}
			if !found {
				t.Fatalf("no %s setting in %+v", egress.AllowPrivateNetworkSetting, st.Settings)
			}
			resp, err := mod.runtime().HTTP.Get(context.Background(), srv.URL+"/x?token=SECRET")
			st = r.status(t, "m")
			if allow {
				if err != nil || string(resp.Body) != "inside" {
					t.Fatalf("allowed: %v", err)
				}
				if st.Metrics["http_requests"] != 1 || st.Metrics["http_bytes"] != 6 || st.Metrics["http_refusals"] != 0 {
					t.Errorf("metrics %v", st.Metrics)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "allow_private_network") {
				t.Fatalf("not allowed: %v", err)
			}
			if !strings.Contains(st.Health.Detail, "http: 1 refused (last: private or internal addresses are not allowed") ||
				strings.Contains(st.Health.Detail, "SECRET") || st.Health.State != sdk.HealthHealthy {
				t.Errorf("health %s %q", st.Health.State, st.Health.Detail)
			}
			if st.Metrics["http_refusals"] != 1 || st.Metrics["http_refused_address"] != 1 || st.Metrics["http_requests"] != 1 {
				t.Errorf("metrics %v", st.Metrics)
			}
		})
	}
}
