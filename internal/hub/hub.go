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

// recentFinishes is how many of the last runs published as finished a
// Hub remembers (RecentFinish).
const recentFinishes = 1024

// Hub is a set of subscribers. The zero value is ready to use.
type Hub struct {
	mu   sync.Mutex
	subs map[chan backend.Event]struct{}
	// finished holds the last EventRunFinished of each of the last
	// recentFinishes runs published, by run id; order is a ring of their
	// ids, next the slot of the oldest, which the next new run replaces.
	finished map[string]backend.Event
	order    [recentFinishes]string
	next     int
}

// RecentFinish returns the EventRunFinished published for run
// workflowRunID, if it was among the last 1,024 runs published as
// finished: a subscriber that came after the event learns of it here.
func (h *Hub) RecentFinish(workflowRunID string) (backend.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.finished[workflowRunID]
	return e, ok
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
	if e.Kind == backend.EventRunFinished && e.WorkflowRunID != "" {
		h.remember(e)
	}
	for ch := range h.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// remember keeps e, a finished run's event, for RecentFinish. h.mu is held.
func (h *Hub) remember(e backend.Event) {
	if h.finished == nil {
		h.finished = make(map[string]backend.Event, recentFinishes)
	}
	old, seen := h.finished[e.WorkflowRunID]
	if !seen {
		if oldest := h.order[h.next]; oldest != "" {
			delete(h.finished, oldest)
		}
		h.order[h.next] = e.WorkflowRunID
		h.next = (h.next + 1) % recentFinishes
	}
	if !seen || e.Finished != nil || old.Finished == nil {
		h.finished[e.WorkflowRunID] = e // the event that says how the run ended wins
	}
}
