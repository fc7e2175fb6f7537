package fakediscord

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// post sends a raw message create and returns the status, headers and body.
func post(t *testing.T, f *Server, channelID string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", "https://discord.com/api/v10/channels/"+channelID+"/messages", strings.NewReader(`{"content":"x"}`))
	req.Header.Set("Authorization", "Bot "+f.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: f.Transport()}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// TestRateLimitBuckets: per-route buckets per major parameter with X-RateLimit-* headers and
// X-RateLimit-Bucket; past the limit a 429 with retry_after; the window resets on the clock.
func TestRateLimitBuckets(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w := newWorld(t, Options{Now: c.now})
	other := w.fake.AddChannel(ChannelSpec{GuildID: w.guild, Name: "other"}).ID
	route := "POST /channels/{channel}/messages"
	w.fake.SetRateLimit(route, 2, 5*time.Second)
	for i, wantRemaining := range []string{"1", "0"} {
		status, h, _ := post(t, w.fake, w.text)
		if status != 200 || h.Get("X-RateLimit-Limit") != "2" || h.Get("X-RateLimit-Remaining") != wantRemaining ||
			h.Get("X-RateLimit-Bucket") != BucketHash(route) || h.Get("X-RateLimit-Reset-After") != "5.000" || h.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("request %d: %d %v", i, status, h)
		}
	}
	c.add(1500 * time.Millisecond)
	status, h, body := post(t, w.fake, w.text)
	var rl struct {
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	_ = json.Unmarshal(body, &rl)
	if status != 429 || rl.RetryAfter != 3.5 || rl.Global || rl.Message != "You are being rate limited." ||
		h.Get("X-RateLimit-Scope") != "user" || h.Get("Retry-After") != "4" || h.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("over the limit: %d %v %s", status, h, body)
	}
	if n := len(w.fake.Messages(w.text)); n != 2 {
		t.Fatalf("a rate-limited request created a message (%d)", n)
	}
	if status, _, _ := post(t, w.fake, other); status != 200 {
		t.Fatalf("another channel shares the bucket: %d", status)
	}
	c.add(4 * time.Second)
	if status, h, _ := post(t, w.fake, w.text); status != 200 || h.Get("X-RateLimit-Remaining") != "1" {
		t.Fatalf("after the reset: %d %v", status, h)
	}
}

// TestRateLimitGlobal: past the global limit every route answers a global 429.
func TestRateLimitGlobal(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w := newWorld(t, Options{Now: c.now, GlobalLimit: 3})
	for i := 0; i < 3; i++ {
		if status, _, _ := post(t, w.fake, w.text); status != 200 {
			t.Fatalf("request %d: %d", i, status)
		}
	}
	status, h, body := post(t, w.fake, w.text)
	if status != 429 || h.Get("X-RateLimit-Global") != "true" || h.Get("X-RateLimit-Scope") != "global" || !strings.Contains(string(body), `"global":true`) {
		t.Fatalf("global: %d %v %s", status, h, body)
	}
	c.add(time.Second)
	if status, _, _ := post(t, w.fake, w.text); status != 200 {
		t.Fatalf("after the global window: %d", status)
	}
}

// TestRateLimitWithDiscordgo: an injected 429 reaches discordgo as a *RateLimitError (retry
// off) or is retried after retry_after with a RateLimit event (retry on).
func TestRateLimitWithDiscordgo(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	route := "POST /channels/{channel}/messages"
	s := w.rest()
	w.fake.InjectFault(Fault{Route: route, Status: 429, RetryAfter: 2500 * time.Millisecond})
	_, err := s.ChannelMessageSend(w.text, "x")
	var rle *discordgo.RateLimitError
	if !errors.As(err, &rle) || rle.RetryAfter != 2500*time.Millisecond {
		t.Fatalf("err = %v, want a RateLimitError with retry_after 2.5 s", err)
	}
	retrying := w.fake.Session()
	events := make(chan *discordgo.RateLimit, 1)
	retrying.AddHandler(func(_ *discordgo.Session, r *discordgo.RateLimit) { events <- r })
	w.fake.InjectFault(Fault{Route: route, Status: 429, RetryAfter: time.Millisecond, Global: true})
	if _, err := retrying.ChannelMessageSend(w.text, "after the retry"); err != nil {
		t.Fatalf("retried send: %v", err)
	}
	recv(t, events, "RateLimit event")
	if n := len(w.fake.RequestsTo(route)); n != 3 {
		t.Fatalf("requests = %d, want 3 (429, 429, 200)", n)
	}
}

// TestFaults5xx: a 5xx before handling creates nothing (discordgo's 502 retry then succeeds
// once); a 5xx after handling leaves the message created and dispatched — the uncertain send —
// and discordgo's default 502 retry posts it twice.
func TestFaults5xx(t *testing.T) {
	t.Parallel()
	route := "POST /channels/{channel}/messages"
	cases := []struct {
		name      string
		fault     Fault
		retries   int
		wantErr   bool
		wantStore int
	}{
		{"500 before", Fault{Route: route, Status: 500}, 0, true, 0},
		{"502 before, retried", Fault{Route: route, Status: 502}, 1, false, 1},
		{"500 after create", Fault{Route: route, Status: 500, AfterHandling: true}, 0, true, 1},
		{"502 after create, retried: a double post", Fault{Route: route, Status: 502, AfterHandling: true}, 1, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, Options{})
			s := w.fake.Session()
			s.Identify.Intents |= discordgo.IntentMessageContent
			s.MaxRestRetries = c.retries
			created := make(chan *discordgo.MessageCreate, 4)
			s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { created <- m })
			open(t, s)
			w.fake.InjectFault(c.fault)
			_, err := s.ChannelMessageSend(w.text, "maybe")
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if c.wantErr {
				var re *discordgo.RESTError
				if !errors.As(err, &re) || re.Response.StatusCode != c.fault.Status {
					t.Fatalf("err = %v", err)
				}
			}
			if n := len(w.fake.Messages(w.text)); n != c.wantStore {
				t.Fatalf("stored %d messages, want %d", n, c.wantStore)
			}
			for i := 0; i < c.wantStore; i++ {
				recv(t, created, "MESSAGE_CREATE of the created message")
			}
		})
	}
}

// TestCodedFaults: a 4xx fault answers Discord's JSON error body, its code and Discord's text
// for it (or the one given), before the handler runs: nothing is created.
func TestCodedFaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	route := "POST /channels/{channel}/messages"
	s := w.rest()
	for _, tc := range []struct {
		fault   Fault
		message string
	}{
		{Fault{Route: route, Status: 403, Code: CodeMissingPermissions}, "Missing Permissions"},
		{Fault{Route: route, Status: 404, Code: CodeUnknownChannel}, "Unknown Channel"},
		{Fault{Route: route, Status: 404, Code: CodeUnknownMessage, Message: "Unknown Message (reply)"}, "Unknown Message (reply)"},
	} {
		w.fake.InjectFault(tc.fault)
		_, err := s.ChannelMessageSend(w.text, "x")
		var rest *discordgo.RESTError
		if !errors.As(err, &rest) || rest.Response.StatusCode != tc.fault.Status || rest.Message == nil ||
			rest.Message.Code != tc.fault.Code || rest.Message.Message != tc.message {
			t.Fatalf("err = %v, want %d with code %d %q", err, tc.fault.Status, tc.fault.Code, tc.message)
		}
	}
	if n := len(w.fake.Messages(w.text)); n != 0 {
		t.Fatalf("%d messages created, want none", n)
	}
}
