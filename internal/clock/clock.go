// Package clock is the fake clock of tests: time moves only when the test
// says so. It is a leaf package, so the tests of every package (the
// backends' own included) share one implementation; package owtest
// offers it to users as owtest.Clock.
package clock

import (
	"sync"
	"time"
)

// Fake is a clock that stands still until advanced. Its Now method fits
// every injected clock of the engine (WorkerOptions.Now, sqlite.Options.Now).
// It is safe for concurrent use.
type Fake struct {
	mu sync.Mutex
	t  time.Time
}

// NewFake returns a clock standing at t.
func NewFake(t time.Time) *Fake { return &Fake{t: t} }

// Now returns the clock's time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}
