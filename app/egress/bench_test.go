package egress

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// BenchmarkEgress: requests/s through the port to a loopback server beside
// plain net/http to the same server in the same run (plain-requests/s) and
// their ratio (target ≥ 0.8). The port refuses loopback for public rules,
// so the benchmark's rule names a private network and the operator's
// allow_private_network is on; the name resolves through the test resolver
// (no DNS). Both clients keep their connections alive; the body is 1 KiB.
// ns/op is one request of each.
func BenchmarkEgress(b *testing.B) {
	body := make([]byte, 1024)
	s := newServer(&testing.T{}, func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	b.Cleanup(s.Close)
	p, err := New(Options{Module: "bench", Rules: []sdk.HostRule{httpRule("svc.test", sdk.NetworkPrivate, s.port)},
		Settings: benchAllowed(), Resolver: resolverFor("svc.test", "127.0.0.1")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.CloseIdleConnections)
	plain := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	b.Cleanup(plain.CloseIdleConnections)
	portURL, plainURL := s.urlFor("svc.test", "/b"), s.URL+"/b"
	ctx := context.Background()

	// Interleaved, one of each per iteration, so the shared machine's load
	// weighs on both figures alike.
	var portElapsed, plainElapsed time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		resp, err := p.Get(ctx, portURL)
		if err != nil || len(resp.Body) != len(body) {
			b.Fatalf("port: %v", err)
		}
		t1 := time.Now()
		presp, err := plain.Get(plainURL)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, presp.Body)
		presp.Body.Close()
		if n != int64(len(body)) {
			b.Fatal("short body")
		}
		portElapsed += t1.Sub(t0)
		plainElapsed += time.Since(t1)
	}
	b.StopTimer()

	portRate := float64(b.N) / portElapsed.Seconds()
	plainRate := float64(b.N) / plainElapsed.Seconds()
	b.ReportMetric(portRate, "requests/s")
	b.ReportMetric(plainRate, "plain-requests/s")
	b.ReportMetric(portRate/plainRate, "ratio")
}

func benchAllowed() sdk.Settings {
	return sdk.NewSettings(map[string]any{AllowPrivateNetworkSetting: true})
}
