package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// Scope is what a token may do. The zero value is [ScopeRead], the least
// privilege.
type Scope uint8

const (
	// ScopeRead may read: every GET of the API (runs, steps, history,
	// streams, hooks, schedules), the dashboard's pages and /metrics.
	ScopeRead Scope = iota
	// ScopeWrite may also change: start, cancel, retry and fork runs,
	// send signals, resume hooks, put, delete, pause, resume and trigger
	// schedules, and the dashboard's actions. It is the full access of
	// the single server.token.
	ScopeWrite
)

// String returns "read" or "write".
func (s Scope) String() string {
	switch s {
	case ScopeRead:
		return "read"
	case ScopeWrite:
		return "write"
	}
	return fmt.Sprintf("Scope(%d)", uint8(s))
}

// Allows reports whether a token of scope s may do what needs scope
// need: write allows read.
func (s Scope) Allows(need Scope) bool { return s >= need }

// ParseScope parses "read" or "write" (as written in openworkflow.yaml).
func ParseScope(s string) (Scope, error) {
	switch s {
	case "read":
		return ScopeRead, nil
	case "write":
		return ScopeWrite, nil
	}
	return 0, fmt.Errorf("scope %q is not one of read, write", s)
}

// MinTokenLength is the shortest token a server accepts, in bytes: 16.
// `openssl rand -hex 32` makes a good one (64 characters).
const MinTokenLength = 16

// Token is one bearer token of a server.
type Token struct {
	// Name identifies the token in logs and errors (never the secret),
	// e.g. "grafana". Default "token <n>".
	Name string
	// Secret is the value sent as "Authorization: Bearer <secret>" or to
	// the dashboard's sign-in form; at least [MinTokenLength] bytes.
	Secret string
	// Scope is what the token may do; the zero value is read-only.
	Scope Scope
	// Namespace, when set, limits the token to a server of that
	// namespace: a server of another namespace answers it 403. Empty:
	// any namespace.
	Namespace string
}

// Validate checks a token's secret and scope: the error says which
// token and how to make a good secret.
func (t Token) Validate() error {
	name := t.Name
	if name == "" {
		name = "the token"
	}
	if len(t.Secret) < MinTokenLength {
		return fmt.Errorf("%s is shorter than %d bytes (it has %d), too easy to guess; make one with `openssl rand -hex 32`", name, MinTokenLength, len(t.Secret))
	}
	if strings.TrimSpace(t.Secret) != t.Secret {
		return fmt.Errorf("%s starts or ends with white space, which a bearer header cannot carry; make one with `openssl rand -hex 32`", name)
	}
	if t.Scope > ScopeWrite {
		return fmt.Errorf("%s has an unknown scope %s; use read or write", name, t.Scope)
	}
	return nil
}

// Keyring holds the tokens of a server of one namespace and checks
// requests against them, throttling failures. An empty Keyring (no
// tokens) lets every request through: the server is then protected by
// [Guard] and loopback alone. A Keyring is safe for concurrent use.
type Keyring struct {
	namespace string
	tokens    []keyed
	throttle  *Throttle
}

type keyed struct {
	sum [sha256.Size]byte
	tok Token
}

// NewKeyring returns the keyring of tokens for a server of namespace,
// counting failures in th (nil: a [Throttle] of its own with the
// defaults). It returns an error if a token is invalid ([Token.Validate])
// or two have the same secret.
func NewKeyring(namespace string, tokens []Token, th *Throttle) (*Keyring, error) {
	if th == nil {
		th = NewThrottle(ThrottleOptions{})
	}
	k := &Keyring{namespace: namespace, throttle: th}
	for i, t := range tokens {
		if t.Name == "" {
			t.Name = fmt.Sprintf("token %d", i+1)
		}
		if err := t.Validate(); err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(t.Secret))
		for _, o := range k.tokens {
			if o.sum == sum {
				return nil, fmt.Errorf("%s and %s have the same secret; give each its own", o.tok.Name, t.Name)
			}
		}
		k.tokens = append(k.tokens, keyed{sum: sum, tok: t})
	}
	return k, nil
}

// Open reports whether the keyring has no tokens: every request passes.
func (k *Keyring) Open() bool { return len(k.tokens) == 0 }

// Namespace returns the namespace of the server the keyring guards.
func (k *Keyring) Namespace() string { return k.namespace }

// Throttle returns the throttle counting the keyring's failures.
func (k *Keyring) Throttle() *Throttle { return k.throttle }

// Verify returns the token whose secret is secret, for a request from
// r's client. A wrong secret answers 401 and counts as a failure of the
// client; a client (or the server as a whole) over its budget of
// failures answers 429 without the secret being compared at all.
// Secrets are compared in constant time (of their SHA-256, so the length
// does not leak either), against every token.
func (k *Keyring) Verify(r *http.Request, secret string) (Token, error) {
	client := ClientAddr(r)
	if wait := k.throttle.Blocked(client); wait > 0 {
		d := deny(http.StatusTooManyRequests, "too many wrong tokens from %s or from everyone; try again in %d s", client, retrySeconds(wait))
		d.RetryAfter = wait
		return Token{}, d
	}
	sum := sha256.Sum256([]byte(secret))
	found := -1
	for i := range k.tokens {
		if subtle.ConstantTimeCompare(sum[:], k.tokens[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		k.throttle.Failed(client)
		return Token{}, deny(http.StatusUnauthorized, "the token is not one of this server's")
	}
	return k.tokens[found].tok, nil
}

// Bearer returns the token of r's "Authorization: Bearer <secret>"
// header ([Keyring.Verify]); without the header it answers 401 saying how
// to send one.
func (k *Keyring) Bearer(r *http.Request) (Token, error) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return Token{}, deny(http.StatusUnauthorized, "this server needs a bearer token: send the header \"Authorization: Bearer <token>\"")
	}
	return k.Verify(r, strings.TrimSpace(got))
}

// Permit checks that t may do what needs scope need on this keyring's
// server: 403 when its scope is too small or its namespace another.
func (k *Keyring) Permit(t Token, need Scope) error {
	if t.Namespace != "" && t.Namespace != k.namespace {
		return deny(http.StatusForbidden, "token %q is limited to namespace %q; this server serves namespace %q", t.Name, t.Namespace, k.namespace)
	}
	if !t.Scope.Allows(need) {
		return deny(http.StatusForbidden, "token %q has scope %s; this needs a token of scope %s", t.Name, t.Scope, need)
	}
	return nil
}

// Authorize checks r's bearer token for an operation needing scope
// need: nil when the keyring is open or the token may, else a *Denied
// (401 no or wrong token, 403 scope or namespace, 429 throttled).
func (k *Keyring) Authorize(r *http.Request, need Scope) error {
	if k.Open() {
		return nil
	}
	t, err := k.Bearer(r)
	if err != nil {
		return err
	}
	return k.Permit(t, need)
}
