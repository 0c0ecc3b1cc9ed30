// Package groupcommit is the worker's write pipeline: the writes of many
// concurrent execution passes are committed together, in as few
// transactions as possible, while each pass's own writes apply in order
// and none is acknowledged before it is durable.
//
// A [Committer] queues groups of writes and applies the waiting ones in
// one call of the backend's ApplyWrites (a group commit), with at most
// maxCommitsInFlight commits under way. A [Pass] is one execution pass's
// side of it: a buffer of writes deferred until the pass's next write, and
// the chain of its groups in flight, so that a group is handed to the
// committer only once the pass's earlier groups applied.
package groupcommit

import (
	"context"
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

// Batcher applies groups of writes: backend.Batcher's ApplyWrites.
type Batcher interface {
	ApplyWrites(ctx context.Context, groups [][]backend.Write) []error
}

// Committer is the group-commit writer: groups submitted by many
// concurrent passes while commits are in flight are applied together in
// the next one, so the writes of many runs share a transaction. Up to
// maxCommitsInFlight commits run at once. A caller waits for its group's
// commit before it goes on, so nothing is acknowledged that is not
// durable. A driver goroutine exists only while there are groups to
// apply; [Committer.Wait] waits for it. The zero value is not usable: use
// [New].
type Committer struct {
	b Batcher

	// OnCommit, when set, is called after each group commit with the
	// groups and writes it applied, how many groups failed, and how long
	// the backend took: the worker's metrics hook. Set it before the first
	// Submit; it must not block.
	OnCommit func(groups, writes, failed int, d time.Duration)

	mu      sync.Mutex
	queue   []*Group
	queued  int // writes in queue
	drivers int // goroutines applying batches, at most maxCommitsInFlight
	wg      sync.WaitGroup
}

// New returns a committer applying groups with b.
func New(b Batcher) *Committer { return &Committer{b: b} }

// Group is writes that must apply in one transaction, in order, whole or
// not at all (see backend.Batcher), and, once done, their outcome.
type Group struct {
	writes []backend.Write
	err    error
	done   chan struct{}
}

func newGroup(ws []backend.Write) *Group {
	return &Group{writes: ws, done: make(chan struct{})}
}

// Wait waits for the group's commit and returns its error: nil when it
// applied, else why it did not (backend.Batcher's errors, or the error of
// an earlier group of its pass, which it was not applied after).
func (g *Group) Wait() error {
	<-g.done
	return g.err
}

// applied reports whether the group is done (applied or failed).
func (g *Group) finished() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// fail completes a group that is not applied with err (nil for an empty
// group).
func (g *Group) fail(err error) {
	g.err = err
	close(g.done)
}

// Submit queues ws as one group of its own, ordered after nothing, and
// returns it: Wait on it for the outcome.
func (c *Committer) Submit(ws []backend.Write) *Group {
	g := newGroup(ws)
	c.enqueue(g)
	return g
}

// Wait waits until no commit is under way (after the passes that submit
// groups have ended).
func (c *Committer) Wait() { c.wg.Wait() }

// enqueue queues g to be applied.
func (c *Committer) enqueue(g *Group) {
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

// drive applies queued groups, as many as fit in a batch at a time, until
// the queue is empty.
func (c *Committer) drive() {
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
		groups := append([]*Group(nil), c.queue[:n]...)
		c.queue = c.queue[n:]
		c.queued -= size
		c.mu.Unlock()
		c.apply(groups)
	}
}

// apply commits groups in one ApplyWrites and completes each with its
// outcome.
func (c *Committer) apply(groups []*Group) {
	batch := make([][]backend.Write, len(groups))
	for i, g := range groups {
		batch[i] = g.writes
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	var start time.Time
	if c.OnCommit != nil {
		start = time.Now()
	}
	errs := c.b.ApplyWrites(ctx, batch)
	if len(errs) != len(groups) {
		err := fmt.Errorf("backend applied %d write groups but reported %d outcomes", len(groups), len(errs))
		errs = make([]error, len(groups))
		for i := range errs {
			errs[i] = err
		}
	}
	var d time.Duration
	if c.OnCommit != nil {
		d = time.Since(start)
	}
	writes, failed := 0, 0
	for i, g := range groups {
		writes += len(g.writes)
		if errs[i] != nil {
			failed++
		}
		g.err = errs[i]
		close(g.done)
	}
	if c.OnCommit != nil {
		// After the groups are done: their passes go on meanwhile.
		c.OnCommit(len(groups), writes, failed, d)
	}
}
