package openworkflow

import (
	"errors"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// A start made in a process whose worker, on the same backend value, has
// a free slot for the workflow claims its own run in the start's
// transaction (backend.CreateWorkflowRunParams.Claim): the run is inserted
// leased to that slot and its pass begins as soon as the create commits,
// without the work-available announcement, the worker's wake-up and the
// claim's round trip and commit. The run is leased and fenced exactly as
// a claim leases it, so a crash of the process, a lost lease or a cancel
// act on it as on any claimed run.
//
// Only a plain start takes this path: a run the worker could not claim at
// once by the claim's own rules goes the ordinary way — a workflow with
// limits (declared here, or stored: the insert then queues it unclaimed),
// a batched or singleton workflow, a run under fair shares (the claim
// takes turns between keys), an idempotency key, a delayed start, a
// deadline, search attributes, and any start while the worker's last
// claim found more runs than free slots (runs are waiting, and priorities
// and their order decide which goes first).

// localWorkers are the started workers of this process by backend value,
// for the starts that claim their own run.
var localWorkers struct {
	mu sync.Mutex
	by map[any][]*Worker
}

// addLocalWorker makes w's free slots available to starts on its backend.
func addLocalWorker(w *Worker) {
	localWorkers.mu.Lock()
	defer localWorkers.mu.Unlock()
	if localWorkers.by == nil {
		localWorkers.by = make(map[any][]*Worker)
	}
	localWorkers.by[w.b] = append(localWorkers.by[w.b], w)
}

// removeLocalWorker undoes addLocalWorker.
func removeLocalWorker(w *Worker) {
	localWorkers.mu.Lock()
	defer localWorkers.mu.Unlock()
	ws := localWorkers.by[w.b]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(localWorkers.by, w.b)
	} else {
		localWorkers.by[w.b] = ws
	}
}

// startClaim is a slot of a local worker reserved for the run a start is
// about to create.
type startClaim struct {
	w      *Worker
	slot   string
	leased time.Time     // the lease runs from no earlier than this
	ended  chan struct{} // closed when the run's pass here freed its slot
}

// reserveStartClaim reserves a free slot of a local worker on b for the
// run that p is about to create, and sets p.Claim; nil (and p unchanged)
// when the start must take the ordinary path (see above).
func reserveStartClaim(b backend.Client, p *backend.CreateWorkflowRunParams) *startClaim {
	if p.IdempotencyKey != nil || p.Singleton != nil || p.Fairness != nil || p.AvailableAt != nil || p.DeadlineAt != nil ||
		len(p.SearchAttributes) > 0 || p.ParentStepAttemptID != nil {
		return nil
	}
	if _, ok := b.(backend.Backend); !ok {
		return nil
	}
	localWorkers.mu.Lock()
	ws := localWorkers.by[b]
	localWorkers.mu.Unlock()
	for _, w := range ws {
		if c := w.reserveStart(p); c != nil {
			p.Claim = &backend.CreateClaim{WorkerID: c.slot, LeaseDuration: w.opts.LeaseDuration}
			return c
		}
	}
	return nil
}

// reserveStart takes a free slot of w for a run of p's workflow, counted
// as a pass (so Stop waits for the start to settle), or returns nil.
func (w *Worker) reserveStart(p *backend.CreateWorkflowRunParams) *startClaim {
	d, ok := w.reg.lookup(p.WorkflowName, p.Version)
	if !ok {
		return nil
	}
	if s := d.Spec(); s.Batch != nil || s.Singleton != nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.idleLocked() {
		return nil
	}
	if w.limits.declared == nil || w.limits.declared[p.WorkflowName] != (Limits{}) {
		return nil
	}
	if _, capped := w.limits.perWorker[p.WorkflowName]; capped {
		return nil
	}
	for _, name := range w.limits.admit {
		if name == p.WorkflowName {
			return nil
		}
	}
	slot := w.free[len(w.free)-1]
	w.free = w.free[:len(w.free)-1]
	w.passes.Add(1)
	return &startClaim{w: w, slot: slot, leased: time.Now(), ended: make(chan struct{})}
}

// settle ends the reservation with the create's outcome, reporting
// whether the run's pass began: it does if the create claimed it for the
// slot; otherwise the slot is
// free again (and the worker looks for work: the run was announced), or,
// if the create failed, quarantined, since the insert may have committed
// with only its answer lost (the quarantine hands such a run back).
func (c *startClaim) settle(run *backend.WorkflowRun, err error) bool {
	w := c.w
	switch {
	case err == nil && run != nil && run.Status == backend.RunRunning && run.WorkerID != nil && *run.WorkerID == c.slot:
		own := *run // the caller keeps run; the pass has its own
		if w.m != nil {
			w.m.ObserveClaim(time.Since(c.leased), 1, 1, nil)
		}
		w.beginPass(&own, nil, c.leased, nil, true, c.ended)
		return true
	case err != nil && !errors.Is(err, backend.ErrInvalidArgument):
		w.mu.Lock()
		w.quarantined = append(w.quarantined, c.slot)
		w.mu.Unlock()
	default:
		w.mu.Lock()
		w.free = append(w.free, c.slot)
		w.mu.Unlock()
	}
	w.passes.Done()
	w.poke()
	return false
}

// idleLocked reports whether a start may claim its run for a slot of w
// now: started and not stopping, a free slot, nothing quarantined or
// saturated, and the last claim found fewer runs than free slots, so no
// claimable run of w's is known to wait (its order would be jumped).
// w.mu is held.
func (w *Worker) idleLocked() bool {
	return w.started && !w.stopping && w.drained && !w.saturated && len(w.free) > 0 && len(w.quarantined) == 0
}

// idleForStarts is idleLocked for package testhooks.
func (w *Worker) idleForStarts() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.idleLocked()
}
