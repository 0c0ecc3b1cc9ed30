// Package hub fans wake-up events out to in-process subscribers. Both
// backends use it: SQLite publishes its own writes to it, PostgreSQL
// publishes what its LISTEN connection receives.
package hub

import (
	"context"
	"sync"

	"github.com/openworkflow-go/openworkflow/backend"
)

// subscriberBuffer is how many events a slow subscriber may lag behind
// before further events to it are dropped (events are hints; subscribers
// keep a fallback poll).
const subscriberBuffer = 256

// Hub is a set of subscribers. The zero value is ready to use.
type Hub struct {
	mu   sync.Mutex
	subs map[chan backend.Event]struct{}
}

// Subscribe returns a channel receiving every event published until ctx is
// done; the channel is then closed.
func (h *Hub) Subscribe(ctx context.Context) <-chan backend.Event {
	ch := make(chan backend.Event, subscriberBuffer)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = make(map[chan backend.Event]struct{})
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
		close(ch)
	})
	return ch
}

// Publish sends e to every subscriber without blocking; a subscriber whose
// buffer is full misses it.
func (h *Hub) Publish(e backend.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- e:
		default:
		}
	}
}
