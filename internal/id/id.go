// Package id generates the engine's record ids: a short kind prefix and a
// ULID, such as "wrun_01JD3M0Q1X7F3V8QK4ZQ9W2N5B". ULIDs are monotonic within
// a millisecond inside one process, so ids sort in creation order.
package id

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Prefixes of the ids the engine writes.
const (
	PrefixRun    = "wrun"
	PrefixStep   = "step"
	PrefixSignal = "sig"
	PrefixHook   = "hook"
	PrefixUpdate = "upd"
	PrefixEvent  = "evt"
)

var (
	mu      sync.Mutex
	entropy = ulid.Monotonic(rand.Reader, 0)
)

// New returns prefix + "_" + a new monotonic ULID.
func New(prefix string) string {
	mu.Lock()
	u := ulid.MustNew(ulid.Timestamp(time.Now()), entropy)
	mu.Unlock()
	return prefix + "_" + u.String()
}
