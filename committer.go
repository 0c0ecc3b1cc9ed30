package openworkflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// maxBatchWrites caps the writes one group commit applies; more waiting
// writes go in the next commit.
const maxBatchWrites = 512

// maxCommitsInFlight is how many group commits may be under way at once.
// Two let the database flush one commit's WAL while it executes the next;
// more split the waiting writes into more, smaller commits, and each
// commit has a fixed cost in the database. Measured on 2 cores (W1,
// PostgreSQL, concurrency 100, one run each): 1 in flight 8,005 steps/s at
// 0.092 commits/step, 2: 7,712–8,053 at 0.13–0.14, 4: 6,489–6,679 at
// 0.22–0.24, 8: 5,206 at 0.38.
const maxCommitsInFlight = 2

// minOverlapWrites is how many writes must be waiting before a commit
// starts while another is in flight; fewer wait for the next commit of
// the driver in flight. Starting one for whatever was queued made every
// other commit carry a single pass's writes, at the fixed cost of a whole
// commit.
const minOverlapWrites = 32

// commitTimeout bounds one group commit. A batch serves many passes, so it
// is not canceled with any one of them.
const commitTimeout = 30 * time.Second

// committer is the worker's group-commit writer: writes submitted by many
// concurrent passes while commits are in flight are applied together in
// the next one, so the writes of many runs share a transaction. Up to
// maxCommitsInFlight commits run at once; groups of one pass never overlap
// (a pass waits for its earlier groups before submitting the next), so a
// pass's writes apply in order. A caller
// waits for its writes' commit before it goes on, so nothing is
// acknowledged that is not durable. A driver goroutine exists only while
// there are writes to apply; wg tracks it.
type committer struct {
	b backend.Backend

	mu      sync.Mutex
	queue   []*writeGroup
	queued  int // writes in queue
	drivers int // goroutines applying batches, at most maxCommitsInFlight
	wg      sync.WaitGroup
}

func newCommitter(b backend.Backend) *committer {
	return &committer{b: b}
}

// writeGroup is writes that must be applied in one transaction, in order,
// and the outcome of each.
type writeGroup struct {
	writes []backend.Write
	errs   []error
	done   chan struct{}
}

func newWriteGroup(ws []backend.Write) *writeGroup {
	return &writeGroup{writes: ws, done: make(chan struct{})}
}

// fail completes a group that is not applied, every write with err (nil
// for an empty group).
func (g *writeGroup) fail(err error) {
	g.errs = make([]error, len(g.writes))
	for i := range g.errs {
		g.errs[i] = err
	}
	close(g.done)
}

// submit queues ws as one group and returns it; wait on it for the
// outcome.
func (c *committer) submit(ws []backend.Write) *writeGroup {
	g := newWriteGroup(ws)
	c.enqueue(g)
	return g
}

// enqueue queues g to be applied.
func (c *committer) enqueue(g *writeGroup) {
	c.mu.Lock()
	c.queue = append(c.queue, g)
	c.queued += len(g.writes)
	if c.drivers == 0 || (c.drivers < maxCommitsInFlight && c.queued >= minOverlapWrites) {
		c.drivers++
		c.wg.Add(1)
		go c.drive()
	}
	c.mu.Unlock()
}

// wait returns the group's first error, or nil when every write applied.
func (g *writeGroup) wait() error {
	<-g.done
	return errors.Join(g.errs...)
}

// drive applies queued groups, as many as fit in a batch at a time, until
// the queue is empty.
func (c *committer) drive() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		n, size := 0, 0
		for n < len(c.queue) && (n == 0 || size+len(c.queue[n].writes) <= maxBatchWrites) {
			size += len(c.queue[n].writes)
			n++
		}
		if n == 0 {
			c.drivers--
			c.mu.Unlock()
			return
		}
		groups := append([]*writeGroup(nil), c.queue[:n]...)
		c.queue = c.queue[n:]
		c.queued -= size
		c.mu.Unlock()
		c.apply(groups)
	}
}

func (c *committer) apply(groups []*writeGroup) {
	var writes []backend.Write
	for _, g := range groups {
		writes = append(writes, g.writes...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	errs := c.b.ApplyWrites(ctx, writes)
	if len(errs) != len(writes) {
		err := fmt.Errorf("backend applied %d writes but reported %d outcomes", len(writes), len(errs))
		errs = make([]error, len(writes))
		for i := range errs {
			errs[i] = err
		}
	}
	i := 0
	for _, g := range groups {
		g.errs = errs[i : i+len(g.writes)]
		i += len(g.writes)
		close(g.done)
	}
}
