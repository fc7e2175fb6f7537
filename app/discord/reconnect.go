package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Backoff bounds of Kimi's reconnect loop: the wait doubles from
// backoffBase to backoffMax, each wait drawn from its upper half (jitter).
// The attempt count starts again only after a connection stayed up for
// stableAfter: a gateway that closes every connection right after READY
// (a flapping gateway) is re-dialled ever more slowly, not every second.
// At the cap a flapping gateway costs at most 288 session starts a day,
// well inside Discord's usual 1,000 (startbudget.go keeps the rest).
const (
	backoffBase = time.Second
	backoffMax  = 5 * time.Minute
	stableAfter = time.Minute
	// openTimeout bounds one Open: the dial, Hello and READY or RESUMED.
	openTimeout = time.Minute
)

// backoff is the wait before attempt n (1-based), with jitter in [d/2, d].
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < backoffMax; i++ {
		d *= 2
	}
	d = min(d, backoffMax)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// Gateway close codes Kimi stops on (Discord's table: reconnecting cannot
// succeed until the operator acts).
const (
	closeAuthenticationFailed = 4004
	closeInvalidShard         = 4010
	closeShardingRequired     = 4011
	closeInvalidAPIVersion    = 4012
	closeInvalidIntents       = 4013
	closeDisallowedIntents    = 4014
)

// fatalMessage explains a fatal close code; "" for a recoverable one.
func fatalMessage(code int) string {
	switch code {
	case closeAuthenticationFailed:
		return "Discord rejected the bot token (close 4004, authentication failed). The token is wrong or was reset: copy a new one from the developer portal (Bot → Reset Token) and save it here."
	case closeInvalidShard:
		return "Discord refused the shard Kimi asked for (close 4010, invalid shard)."
	case closeShardingRequired:
		return "Discord requires sharding for this bot (close 4011): it is in too many guilds for one connection, and Kimi runs a single shard."
	case closeInvalidAPIVersion:
		return "Discord refused the gateway API version (close 4012); this Kimi build is too old."
	case closeInvalidIntents:
		return "Discord refused the intents Kimi asked for as invalid (close 4013)."
	case closeDisallowedIntents:
		return "Discord refused a privileged intent that is not enabled for this application (close 4014)."
	}
	return ""
}

// closeCode returns the gateway close code in err (0: none).
func closeCode(err error) int {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return 0
}

// wakeup asks the loop to connect again now.
type wakeup struct {
	fresh bool // identify on a new session (token or intents changed)
}

// Reconnect drops the connection, if any, and connects again at once on a
// fresh session (re-reading the token and intents), also after a fatal
// close or without a token before.
func (b *Bot) Reconnect() {
	select {
	case b.wake <- wakeup{fresh: true}:
	default: // one wake-up pending is enough
	}
}

// run is Kimi's reconnect loop. discordgo's own reconnect is off
// (ShouldReconnectOnError): it resumes after fatal codes and backs off to
// 600 s forever. Here a drop resumes on the same Session (discordgo's Open
// resumes while it holds a session id and sequence); a fatal close code
// stops until the operator acts (Reconnect); any other failure waits
// (backoff with jitter, reset only by a connection that stayed up for
// stableAfter) and tries again. A connection that closes before READY or
// RESUMED is retried on a fresh Session, so a fatal code Discord sends
// after an identify in mid-session (discordgo hides it: the read loop only
// reports a Disconnect) arrives as Open's *websocket.CloseError. An
// Invalid Session ends the connection (frames_session.go) and is answered
// here: a resume, or an identify on a fresh Session. Every Identify waits
// for the session start budget (startbudget.go).
func (b *Bot) run(ctx context.Context) {
	defer close(b.done)
	var sess *discordgo.Session
	fresh, attempt := true, 0
	manual := false  // the next attempt follows the operator's Reconnect
	started := false // sess has had a READY: its Open resumes
	for ctx.Err() == nil {
		tok, src, err := b.currentToken(ctx)
		if err != nil || tok == "" {
			if sess != nil {
				b.closeSession(sess)
				sess = nil
			}
			if err != nil {
				b.setStopped(err.Error(), nil)
			} else {
				b.setState(StateNotConfigured, "", time.Time{})
			}
			if !b.waitWake(ctx) {
				return
			}
			fresh, manual = true, true
			continue
		}
		b.mu.Lock()
		b.tokenSource = src
		b.mu.Unlock()
		if sess == nil || fresh || sess.Token != "Bot "+tok {
			if sess != nil {
				b.closeSession(sess)
			}
			in, err := b.loadIntents(ctx)
			if err != nil {
				b.log.Warn("reading the intents failed; connecting without privileged intents", "err", err)
			}
			sess, started = b.newSession(tok, in), false
			b.setState(StateConnecting, "", time.Time{})
		} else {
			b.setState(StateResuming, "", time.Time{})
		}
		fresh = false
		if !started {
			if stop := b.startAllowed(ctx, sess, manual); stop != nil {
				b.stopForBudget(stop)
				w, ok := b.waitBudget(ctx, stop)
				if !ok {
					b.closeSession(sess)
					return
				}
				if w != nil {
					fresh, attempt, manual = w.fresh, 0, true
				}
				continue
			}
		}
		manual = false
		b.drainDisconnect()
		b.invalidated.Store(invalidNone)
		b.ready.Store(false)
		err = b.open(ctx, sess)
		if err == nil {
			started = true
			up := b.clock.Now()
			b.connected(ctx, sess)
			select {
			case <-ctx.Done():
				b.closeOnStop(sess)
				return
			case w := <-b.wake:
				b.closeSession(sess)
				fresh, attempt, manual = w.fresh, 0, true
				continue
			case <-b.disconnected:
			}
			b.mu.Lock()
			b.sess = nil
			b.cache.dir.epoch.Add(1) // the directory reads the session
			b.reconnects++
			b.mu.Unlock()
			b.watch.Notify()
			switch {
			case b.invalidated.Load() == invalidFresh:
				fresh = true
				b.log.Warn("gateway invalidated the session; identifying again")
			case b.ready.Load():
				if b.clock.Now().Sub(up) >= stableAfter {
					attempt = 0 // it stayed up: the next drop starts the backoff again
				}
				b.log.Warn("gateway connection lost; resuming")
			default:
				fresh = true
				b.log.Warn("gateway connection closed before READY; identifying again")
			}
		} else {
			code := closeCode(err)
			if msg := fatalMessage(code); msg != "" {
				b.stopFatal(ctx, sess, code, msg)
				sess = nil
				if !b.waitWake(ctx) {
					return
				}
				fresh, attempt, manual = true, 0, true
				continue
			}
			if b.invalidated.Load() == invalidFresh {
				fresh = true // the resume was refused: identify (within the budget)
			}
			b.log.Warn("gateway connect failed", "err", redact(err.Error(), tok), "close_code", code)
			b.mu.Lock()
			b.lastErr = redact(err.Error(), tok)
			b.mu.Unlock()
		}
		attempt++
		wait := backoff(b.backoffBase, attempt)
		b.setState(StateReconnecting, "", b.clock.Now().Add(wait))
		c, stop := b.clock.After(wait)
		select {
		case <-ctx.Done():
			stop()
			if sess != nil {
				b.closeOnStop(sess)
			}
			return
		case w := <-b.wake:
			stop()
			fresh, attempt, manual = w.fresh, 0, true
		case <-c:
		}
	}
}

// trackingDialer is base whose connections are remembered while Open runs
// (b.opening), so open can end a stalled one.
func (b *Bot) trackingDialer(base *websocket.Dialer) *websocket.Dialer {
	d := *base
	dial := d.NetDialContext
	if dial == nil && d.NetDial != nil {
		nd := d.NetDial
		dial = func(_ context.Context, network, addr string) (net.Conn, error) { return nd(network, addr) }
	}
	if dial == nil {
		var nd net.Dialer
		dial = nd.DialContext
	}
	d.NetDial = nil
	d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err == nil {
			b.mu.Lock()
			b.opening = c
			b.mu.Unlock()
		}
		return c, err
	}
	return &d
}

// open is sess.Open bounded by ctx and openTimeout. discordgo's Open reads
// Hello and READY with no deadline, under the session's lock: a gateway
// that accepts the websocket and then stalls kept the loop (and Close,
// which waits for it) in Open for ever. Closing the connection being
// opened makes Open return its read error.
func (b *Bot) open(ctx context.Context, sess *discordgo.Session) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTimer(b.openTimeout)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-ctx.Done():
		case <-t.C:
			b.log.Warn("gateway connect stalled; giving up on this attempt", "after", b.openTimeout)
		}
		b.mu.Lock()
		c := b.opening
		b.opening = nil
		b.mu.Unlock()
		if c != nil {
			_ = c.Close()
		}
	}()
	err := sess.Open()
	b.mu.Lock()
	b.opening = nil
	b.mu.Unlock()
	return err
}

// waitWake blocks until Reconnect (true) or ctx ends (false).
func (b *Bot) waitWake(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.wake:
		return true
	}
}

func (b *Bot) drainDisconnect() {
	select {
	case <-b.disconnected:
	default:
	}
}

// stopFatal records a fatal close and stops the loop until Reconnect. For
// 4014 it reads the application's flags to name the intents the developer
// portal must enable.
func (b *Bot) stopFatal(ctx context.Context, sess *discordgo.Session, code int, msg string) {
	fc := &FatalClose{Code: code, Message: msg}
	if code == closeDisallowedIntents {
		in := b.requestedIntents()
		enabled, err := b.enabledPrivileged(ctx, sess)
		for _, p := range []struct {
			asked, ok bool
			name      string
		}{
			{in.Members, enabled&discordgo.IntentGuildMembers != 0, "Server Members Intent"},
			{in.MessageContent, enabled&discordgo.IntentMessageContent != 0, "Message Content Intent"},
		} {
			if p.asked && (err != nil || !p.ok) {
				fc.DisallowedIntents = append(fc.DisallowedIntents, p.name)
			}
		}
		if len(fc.DisallowedIntents) > 0 {
			fc.Message += " Enable " + strings.Join(fc.DisallowedIntents, " and ") +
				" in the Discord developer portal (your application → Bot → Privileged Gateway Intents), or reconnect without it."
		}
	}
	b.log.Error("gateway closed with a fatal code; not reconnecting", "close_code", code, "reason", fc.Message)
	b.setStopped(msg, fc)
}

// Application flags of the privileged intents (both the verified and the
// "limited" flag of an application in fewer than 100 guilds).
const (
	flagGatewayGuildMembers          = 1 << 14
	flagGatewayGuildMembersLimited   = 1 << 15
	flagGatewayMessageContent        = 1 << 18
	flagGatewayMessageContentLimited = 1 << 19
)

// enabledPrivileged reads applications/@me's flags: which privileged
// intents the developer portal enables.
func (b *Bot) enabledPrivileged(ctx context.Context, sess *discordgo.Session) (discordgo.Intent, error) {
	ctx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	app, err := fetchApplication(ctx, sess)
	if err != nil {
		return 0, err
	}
	var in discordgo.Intent
	if app.Flags&(flagGatewayGuildMembers|flagGatewayGuildMembersLimited) != 0 {
		in |= discordgo.IntentGuildMembers
	}
	if app.Flags&(flagGatewayMessageContent|flagGatewayMessageContentLimited) != 0 {
		in |= discordgo.IntentMessageContent
	}
	return in, nil
}

// infoTimeout bounds each REST call the connection makes for itself.
const infoTimeout = 10 * time.Second

func fetchApplication(ctx context.Context, sess *discordgo.Session) (*discordgo.Application, error) {
	ep := discordgo.EndpointApplication("@me")
	body, err := sess.RequestWithBucketID("GET", ep, nil, ep, requestOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("discord: read applications/@me: %w", err)
	}
	var app discordgo.Application
	if err := json.Unmarshal(body, &app); err != nil {
		return nil, fmt.Errorf("discord: decode applications/@me: %w", err)
	}
	return &app, nil
}
