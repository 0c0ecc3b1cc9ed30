package access

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// ThrottleOptions configure a [Throttle]. Zero values take the defaults.
type ThrottleOptions struct {
	// ClientRate is how many failed attempts per second a client address
	// regains, ClientBurst how many it may make at once. Defaults 1 per
	// second, burst 10.
	ClientRate  rate.Limit
	ClientBurst int
	// GlobalRate and GlobalBurst are the same for all clients together,
	// against an attack spread over many addresses. Defaults 10 per
	// second, burst 100.
	GlobalRate  rate.Limit
	GlobalBurst int
	// MaxClients bounds the client addresses remembered; when full, those
	// that have regained their whole budget are forgotten, and an
	// address beyond it is counted by the global budget alone. Default
	// 10,000.
	MaxClients int
}

// Throttle limits failed attempts (wrong tokens) per client address and
// globally. A client over its budget, or any client while the server is
// over the global one, is refused before its attempt is even checked
// ([Throttle.Blocked]), so guesses cannot go faster than the budget. Each
// failure spends one unit ([Throttle.Failed]); units come back at the
// configured rate, and failures made concurrently past the budget are a
// debt that lengthens the wait. Successes spend nothing. Safe for
// concurrent use.
type Throttle struct {
	opts    ThrottleOptions
	global  *rate.Limiter
	mu      sync.Mutex
	clients map[string]*rate.Limiter
	now     func() time.Time
}

// NewThrottle returns a throttle with opts.
func NewThrottle(opts ThrottleOptions) *Throttle {
	if opts.ClientRate <= 0 {
		opts.ClientRate = 1
	}
	if opts.ClientBurst <= 0 {
		opts.ClientBurst = 10
	}
	if opts.GlobalRate <= 0 {
		opts.GlobalRate = 10
	}
	if opts.GlobalBurst <= 0 {
		opts.GlobalBurst = 100
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = 10_000
	}
	return &Throttle{
		opts:    opts,
		global:  rate.NewLimiter(opts.GlobalRate, opts.GlobalBurst),
		clients: map[string]*rate.Limiter{},
		now:     time.Now,
	}
}

// Blocked returns how long client (an IP address, as [ClientAddr] gives;
// IPv6 addresses count by their /64) must wait before its next attempt
// may be checked; 0 when it may be now.
func (t *Throttle) Blocked(client string) time.Duration {
	client = clientKey(client)
	now := t.now()
	wait := untilWhole(t.global, now)
	t.mu.Lock()
	if l := t.clients[client]; l != nil {
		wait = max(wait, untilWhole(l, now))
	}
	t.mu.Unlock()
	return wait
}

// Failed counts a failed attempt of client.
func (t *Throttle) Failed(client string) {
	client = clientKey(client)
	now := t.now()
	t.global.ReserveN(now, 1)
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.clients[client]
	if l == nil {
		if len(t.clients) >= t.opts.MaxClients {
			for c, cl := range t.clients {
				if cl.TokensAt(now) >= float64(t.opts.ClientBurst) {
					delete(t.clients, c)
				}
			}
		}
		if len(t.clients) >= t.opts.MaxClients {
			return
		}
		l = rate.NewLimiter(t.opts.ClientRate, t.opts.ClientBurst)
		t.clients[client] = l
	}
	l.ReserveN(now, 1)
}

// untilWhole is how long until l has a whole unit again.
func untilWhole(l *rate.Limiter, now time.Time) time.Duration {
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(l.Limit()) * float64(time.Second))
}

// ClientAddr is the address a request came from: the IP of the
// connection's peer (behind a reverse proxy, the proxy's, so all clients
// share one budget there).
func ClientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// clientKey is what the throttle counts a client by: its IPv4 address,
// or the /64 network of its IPv6 address (one host commonly holds a whole
// /64, and would otherwise get a fresh budget per address).
func clientKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	return netip.PrefixFrom(ip.WithZone(""), 64).Masked().String()
}
