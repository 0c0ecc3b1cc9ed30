package groupcommit

import (
	"errors"
	"sync"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Pass is one execution pass's writes. Writes that nothing waits for yet
// are deferred (buffered) and committed with the pass's next write, so
// that a fast step and the pass's next step (or its run's transition)
// share a commit. Groups of the pass that are submitted while earlier ones
// are still in flight (from parallel branches) are handed to the
// committer only once those applied, so the pass's writes apply in the
// order it made them. Once a group of the pass failed, no later group of
// it is applied: each fails with that first failure, whether it was made
// while the failed group was in flight or after. It is safe for concurrent
// use by the pass's goroutines.
type Pass struct {
	c *Committer

	mu       sync.Mutex
	buffer   []backend.Write // deferred writes, committed with the next write
	eager    int             // buffered writes the next step must see durable
	inflight []*Group        // groups submitted and not known applied; later groups wait for them
	failed   error           // the first failure of a group of the pass: later groups fail with it
	async    sync.WaitGroup  // goroutines submitting a group after its predecessors
}

// NewPass returns the write side of a new execution pass.
func (c *Committer) NewPass() *Pass { return &Pass{c: c} }

// Defer buffers w, to be committed with the pass's next write. An eager
// write must be durable before the pass's next step runs (see Flush); a
// lazy one only rides along with the next write that is committed anyway
// (for a write whose loss in a crash is harmless, because the next pass
// redoes it).
func (p *Pass) Defer(w backend.Write, eager bool) {
	p.mu.Lock()
	p.buffer = append(p.buffer, w)
	if eager {
		p.eager++
	}
	p.mu.Unlock()
}

// FlushAsync submits the buffered writes as a group without waiting for
// its commit (a parallel branch, whose siblings may run for long, does
// not hold its result back); the pass's later writes are ordered after
// it.
func (p *Pass) FlushAsync() {
	p.mu.Lock()
	if len(p.buffer) == 0 {
		p.mu.Unlock()
		return
	}
	g, prior := p.enter(p.buffer)
	p.buffer, p.eager = nil, 0
	failed := p.failed
	p.mu.Unlock()
	if failed != nil {
		g.fail(failed)
		return
	}
	if len(prior) == 0 {
		p.c.enqueue(g)
		return
	}
	p.async.Add(1)
	go func() {
		defer p.async.Done()
		p.submitAfter(g, prior)
	}()
}

// Write commits the buffered writes and ws as one group and waits for the
// commit, after every group the pass submitted before: a step's code never
// runs before the results it may depend on are durable. It returns the
// group's error (or an earlier group's), nil when it applied.
func (p *Pass) Write(ws ...backend.Write) error {
	p.mu.Lock()
	g, prior := p.enter(append(p.buffer, ws...))
	p.buffer, p.eager = nil, 0
	failed := p.failed
	p.mu.Unlock()
	if failed != nil {
		g.fail(failed)
		return failed
	}
	if len(g.writes) == 0 {
		g.fail(nil)
		for _, q := range prior {
			if err := q.Wait(); err != nil {
				return err
			}
		}
		return nil
	}
	p.submitAfter(g, prior)
	return g.Wait()
}

// Flush is the barrier before a step's code runs: what earlier steps
// recorded is durable. It commits the buffered writes and waits for the
// pass's groups in flight; lazy buffered writes alone are left for the
// next write.
func (p *Pass) Flush() error {
	p.mu.Lock()
	if p.eager > 0 || len(p.buffer) == 0 {
		p.mu.Unlock()
		return p.Write()
	}
	prior, failed := p.live(), p.failed
	p.mu.Unlock()
	if failed != nil {
		return failed
	}
	for _, q := range prior {
		if err := q.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// Wait waits for the goroutines FlushAsync started to have submitted
// their groups (not for the commits): the pass calls it before it ends.
func (p *Pass) Wait() { p.async.Wait() }

// enter registers a new group of ws as the pass's latest and returns it
// with the groups submitted before it that are not known applied yet.
// p.mu must be held.
func (p *Pass) enter(ws []backend.Write) (g *Group, prior []*Group) {
	prior = p.live()
	g = newGroup(ws)
	p.inflight = append(append(p.inflight[:0], prior...), g)
	return g, prior
}

// live returns (a copy of) the groups in flight not known done, and
// records the first failure of those that are. p.mu must be held.
func (p *Pass) live() []*Group {
	var live []*Group
	for _, q := range p.inflight {
		switch {
		case !q.finished():
			live = append(live, q)
		case q.err != nil && p.failed == nil:
			p.failed = q.err
		}
	}
	return live
}

// submitAfter waits for the prior groups and then hands g to the
// committer; if a prior group failed, g fails with that error unapplied.
func (p *Pass) submitAfter(g *Group, prior []*Group) {
	var errs []error
	for _, q := range prior {
		if err := q.Wait(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		g.fail(errors.Join(errs...))
		return
	}
	p.c.enqueue(g)
}
