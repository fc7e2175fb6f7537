package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// addressRefusedError is the dialer Control's refusal of the address about
// to be dialed.
type addressRefusedError struct {
	host  string
	addr  netip.Addr
	class string
	rule  rule
}

func (e *addressRefusedError) Error() string {
	return "refused " + e.addr.String() + " (" + e.class + ")"
}

// refusal is the error the module sees.
func (e *addressRefusedError) refusal(module string) *sdk.HostNotAllowedError {
	msg := fmt.Sprintf("module %s may not connect to %s for %s: %s address; rule %s",
		hostkit.Repr(module), e.addr, hostkit.Repr(e.host), e.class, describeRule(e.rule.ResolvedHostRule))
	if e.class == "metadata" {
		msg = fmt.Sprintf("module %s may not connect to %s for %s: cloud metadata endpoints are never allowed",
			hostkit.Repr(module), e.addr, hostkit.Repr(e.host))
	} else if e.rule.declaredPrivate && !e.rule.Private {
		msg += " names a private network, which the operator has not allowed (" + AllowPrivateNetworkSetting + ")"
	} else if !e.rule.Private {
		msg += " reaches public addresses only"
	}
	return hostkit.NewHostNotAllowedError(e.host, msg)
}

// refusedClass returns why the rule may not reach addr ("" when it may).
// Metadata addresses are never reachable; a public rule (or a private one
// the operator has not allowed) reaches global unicast addresses only; an
// allowed private rule reaches any unicast address but an unspecified one.
func refusedClass(r rule, addr netip.Addr) string {
	class := hostkit.ClassifyAddr(addr)
	switch {
	case class == "":
		return ""
	case class == "metadata", !r.Private:
		return class
	case class == "unspecified", class == "multicast":
		return class
	}
	return ""
}

// dial resolves the host itself and dials each address in turn with a
// Control that checks the address actually being dialed, so the check
// cannot be raced by a second resolution (DNS rebinding).
func (p *Port) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := splitDialAddr(addr)
	if err != nil {
		return nil, err
	}
	r, ok := p.rule(host)
	if !ok { // CheckURL ran first; a connection is only dialed for a rule's host
		return nil, &addressRefusedError{host: host, class: "undeclared"}
	}
	if to, routed := p.routes[host]; routed {
		d := net.Dialer{Timeout: p.connect}
		return d.DialContext(ctx, network, to.String())
	}
	return dialChecked(ctx, p.resolver, p.connect, network, host, port, func(a netip.Addr, ok bool) error {
		if !ok {
			return &addressRefusedError{host: host, class: "unparseable", rule: r}
		}
		if class := refusedClass(r, a); class != "" {
			return &addressRefusedError{host: host, addr: a, class: class, rule: r}
		}
		return nil
	})
}

// splitDialAddr splits a transport's dial address into the host (lower
// case, as hostkit.CheckURL sees it: every trailing dot dropped) and port.
func splitDialAddr(addr string) (string, uint16, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("egress: dial: %w", err)
	}
	host = strings.ToLower(strings.TrimRight(host, "."))
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("egress: dial: invalid port")
	}
	return host, uint16(port), nil
}

// dialChecked resolves host (a literal address is used as it is) and dials
// each address in turn; check runs in the dialer's Control on the address
// about to be connected (ok false: it did not parse) and refuses it with a
// non-nil error. A refusal is reported over a plain connection failure.
func dialChecked(ctx context.Context, res Resolver, timeout time.Duration, network, host string, port uint16,
	check func(addr netip.Addr, ok bool) error) (net.Conn, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = res.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("egress: resolve: %w", err)
		}
	}
	d := net.Dialer{
		Timeout: timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return check(netip.Addr{}, false)
			}
			return check(ap.Addr(), true)
		},
	}
	var firstErr error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, port).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil || (isRefusal(err) && !isRefusal(firstErr)) {
			firstErr = err // report the refusal over a plain failure
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("egress: resolve: %s has no addresses", host)
	}
	return nil, firstErr
}

// isRefusal reports whether err is an address refusal of a dialer Control.
func isRefusal(err error) bool {
	var refused *addressRefusedError
	var provider *AddressRefusedError
	return errors.As(err, &refused) || errors.As(err, &provider)
}

// failure turns a transport error into the module's error: a refusal at
// connect time is a *sdk.HostNotAllowedError; timeouts name their phase;
// anything else names its kind. The transport's own text (which carries
// the URL, query included) never reaches the module.
func (p *Port) failure(parent, ctx context.Context, host string, r hostkit.ResolvedHostRule, timeout time.Duration, err error) error {
	var refused *addressRefusedError
	if errors.As(err, &refused) {
		return p.refuse("address:"+refused.class, refused.refusal(p.module))
	}
	defer p.notify(nil)
	prefix := fmt.Sprintf("request to %s (rule %s) failed", hostkit.Repr(host), describeRule(r))
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("%s: %w", prefix, perr)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: timed out after %s: %w", prefix, timeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("%s: %s", prefix, kind(err))
}

// kind names a transport error without its text.
func kind(err error) string {
	var (
		dns   *net.DNSError
		op    *net.OpError
		ne    net.Error
		cert  *tls.CertificateVerificationError
		uae   x509.UnknownAuthorityError
		hostE x509.HostnameError
		rec   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &dns):
		return "DNS lookup failed"
	case errors.As(err, &cert), errors.As(err, &uae), errors.As(err, &hostE):
		return "TLS certificate verification failed"
	case errors.As(err, &rec):
		return "TLS handshake failed"
	case errors.As(err, &ne) && ne.Timeout():
		if strings.Contains(err.Error(), "TLS handshake timeout") {
			return "connect timed out (TLS handshake)"
		}
		if strings.Contains(err.Error(), "awaiting response headers") {
			return "timed out waiting for response headers"
		}
		if errors.As(err, &op) && op.Op == "dial" {
			return "connect timed out"
		}
		return "timed out"
	case errors.As(err, &op):
		var errno syscall.Errno
		if errors.As(op.Err, &errno) {
			return op.Op + ": " + errno.Error()
		}
		return op.Op + " failed"
	}
	var inner error = err
	for {
		next := errors.Unwrap(inner)
		if next == nil {
			break
		}
		inner = next
	}
	return fmt.Sprintf("%T", inner)
}
