// Package access is the access control shared by the HTTP surfaces of
// OpenWorkflow for Go (packages api, dashboard and server), so that they
// refuse the same requests for the same reasons:
//
//   - [Token]: a bearer token with a [Scope] (read or write) and
//     optionally one namespace, checked by a [Keyring];
//   - [Throttle]: failed sign-ins and failed bearer tokens are limited per
//     client address and globally, answered 429 with Retry-After;
//   - [Guard]: a server without a token answers only requests addressed
//     to a loopback host name (against DNS rebinding) and refuses
//     cross-origin requests that change state (net/http's
//     CrossOriginProtection).
//
// docs/security.md describes the threat model these serve.
package access

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Denied is the refusal of a request: the HTTP status to answer (401,
// 403 or 429), a message saying what was wrong and what to do, and for
// 429 how long to wait (the Retry-After header, whole seconds rounded
// up). Every check of this package returns a *Denied or nil.
type Denied struct {
	Status     int
	Message    string
	RetryAfter time.Duration
}

// Error returns the message.
func (d *Denied) Error() string { return d.Message }

// SetHeaders sets the headers that go with the refusal: Retry-After for
// 429, WWW-Authenticate for 401.
func (d *Denied) SetHeaders(h http.Header) {
	switch d.Status {
	case http.StatusTooManyRequests:
		h.Set("Retry-After", strconv.Itoa(retrySeconds(d.RetryAfter)))
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="openworkflow"`)
	}
}

// Write answers the refusal as plain text with its headers.
func (d *Denied) Write(w http.ResponseWriter) {
	d.SetHeaders(w.Header())
	http.Error(w, d.Message, d.Status)
}

// AsDenied returns err as a *Denied if it is one.
func AsDenied(err error) (*Denied, bool) {
	var d *Denied
	ok := errors.As(err, &d)
	return d, ok
}

func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

func deny(status int, format string, args ...any) *Denied {
	return &Denied{Status: status, Message: fmt.Sprintf(format, args...)}
}
