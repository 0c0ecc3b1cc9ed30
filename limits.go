package openworkflow

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Limits bound how many runs of a workflow run at once and how fast they
// start, across every worker process (as DBOS queues and River's queue
// limits do). Set them on the workflow's [Spec] (or, for workflows defined
// elsewhere, in [WorkerOptions.Limits]); each zero field limits nothing.
//
// Concurrency, ConcurrencyPerKey and RateLimit are stored in the backend
// ([backend.LimitStore]) when a worker that registered the workflow
// starts, and enforced in the claim by every worker that registered it:
// from then on every run a Go client starts of the workflow waits for
// admission — stored so that no claim takes it, OpenWorkflow's TypeScript
// claim included (see docs/interop.md) — and holds no slot while it
// waits. A claim admits it when its workflow and key have room. Admitted,
// it holds one slot of its workflow and of its key until it finishes
// (completed, failed or canceled), whether it executes, sleeps or waits,
// and whichever worker executes it: a run whose worker dies keeps its
// slot, and the worker that takes it over when the lease expires
// continues in it. Claims that admit a workflow's runs serialize on a
// lock per workflow, so no number of workers exceeds the limits.
//
// The stored limits stay in force until replaced by a worker registering
// other limits, or removed ([Client.DeleteWorkflowLimits], `ow limits
// delete`): a worker whose registration declares none does not remove
// them (it enforces them, and logs that it does), so that a worker of an
// older deployment restarting mid-rollout cannot lift them.
//
// A parent that waits for a child of its own workflow and key holds a
// slot the child may need: with ConcurrencyPerKey 1 the child waits until
// the parent's wait times out. Give such children another key.
type Limits struct {
	// Concurrency is the most runs of the workflow admitted and not
	// finished at once, all keys together. 0: no limit.
	Concurrency int
	// ConcurrencyPerKey is the most runs admitted and not finished at once
	// per concurrency key ([WithConcurrencyKey]; runs started without one
	// share one key). 0: no limit.
	ConcurrencyPerKey int
	// PerWorker is the most runs of the workflow one worker executes at
	// once (parked runs are in no worker). Unlike the others it is not
	// stored: each worker keeps its own. 0: no limit.
	PerWorker int
	// RateLimit is the most admissions (first starts) per concurrency key
	// within any window of RatePeriod; RatePeriod, at least a millisecond,
	// is required with it. A claim admitting nothing for the rate alone is
	// retried at the worker's next poll (within MaxPollInterval, 1 s by
	// default), so starts may come up to that late. 0: no limit.
	RateLimit  int
	RatePeriod time.Duration
}

// Stored returns the part of l a backend stores and enforces (all but
// PerWorker).
func (l Limits) Stored() backend.Limits {
	return backend.Limits{Concurrency: l.Concurrency, ConcurrencyPerKey: l.ConcurrencyPerKey, RateLimit: l.RateLimit, RatePeriod: l.RatePeriod}
}

// validate reports a limit that cannot work.
func (l Limits) validate() error {
	if l.PerWorker < 0 {
		return fmt.Errorf("%w: limits: PerWorker is %d, want 0 (none) or more", backend.ErrInvalidArgument, l.PerWorker)
	}
	return l.Stored().Validate()
}

// limitsRefreshEvery is how often a worker reads which of its workflows
// have stored limits (one small query), so that it admits the runs of a
// workflow another worker limited since it started.
const limitsRefreshEvery = 5 * time.Second

// workerLimits is a worker's view of the limits of its workflows.
type workerLimits struct {
	perWorker map[string]int    // workflow name → Limits.PerWorker
	running   map[string]int    // workflow name → runs executing here
	declared  map[string]Limits // registered workflow name → its declared limits (nil before Start)
	admit     []string          // registered workflows with stored limits
	readAt    time.Time         // when admit was last read
}

// declaredLimits returns the limits the worker's registrations declare,
// by workflow name: WorkerOptions.Limits, else the Spec's. Two versions of
// one name declaring different limits is an error.
func (w *Worker) declaredLimits() (map[string]Limits, error) {
	out := map[string]Limits{}
	w.reg.mu.RLock()
	defer w.reg.mu.RUnlock()
	for _, d := range w.reg.defs {
		s := d.Spec()
		l, override := w.opts.Limits[s.Name]
		if !override {
			l = s.Limits
		}
		if err := l.validate(); err != nil {
			return nil, fmt.Errorf("openworkflow: workflow %s: %w", s, err)
		}
		if prev, seen := out[s.Name]; seen && prev != l {
			return nil, fmt.Errorf("openworkflow: workflow %q: two registered versions declare different limits (%+v and %+v); limits are per workflow name", s.Name, prev, l)
		}
		out[s.Name] = l
	}
	for name := range w.opts.Limits {
		if _, registered := out[name]; !registered {
			w.log.Warn("openworkflow: WorkerOptions.Limits names a workflow this worker did not register; ignored", "workflow", name)
		}
	}
	return out, nil
}

// startLimits stores the limits the worker's registrations declare
// (Worker.Start) and reads which of its workflows are limited.
func (w *Worker) startLimits(ctx context.Context) error {
	declared, err := w.declaredLimits()
	if err != nil {
		return err
	}
	w.mu.Lock()
	lim := workerLimits{perWorker: map[string]int{}, running: w.limits.running}
	w.mu.Unlock()
	ls, ok := w.b.(backend.LimitStore)
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		l := declared[name]
		if l.PerWorker > 0 {
			lim.perWorker[name] = l.PerWorker
		}
		if l.Stored().IsZero() {
			continue
		}
		if !ok {
			return fmt.Errorf("openworkflow: workflow %q declares limits, but the backend (%T) cannot store them (backend.LimitStore): %w", name, w.b, backend.ErrNotSupported)
		}
		var replaced *backend.ReplacedLimits
		var changed bool
		by := w.limitsDeclarer(name)
		if d, ok := w.b.(backend.LimitDeclarer); ok {
			replaced, changed, err = d.DeclareWorkflowLimits(ctx, name, l.Stored(), by)
		} else {
			changed, err = ls.PutWorkflowLimits(ctx, name, l.Stored())
		}
		if err != nil {
			return fmt.Errorf("openworkflow: store the limits of workflow %q: %w", name, err)
		}
		switch {
		case replaced != nil:
			// Two deployments declaring different limits replace each
			// other's at every start: say so, naming both.
			w.log.Warn("openworkflow: this worker declares limits of a workflow other than the stored ones, and replaced them; workers declaring different limits replace each other's at every start, so make them agree (`ow limits list` shows the last replacement)",
				"workflow", name, "limits", fmt.Sprintf("%+v", l.Stored()), "declared_by", by,
				"replaced", fmt.Sprintf("%+v", replaced.Limits), "replaced_declared_by", replaced.DeclaredBy)
		case changed:
			w.log.Info("openworkflow: stored the limits of a workflow", "workflow", name, "limits", fmt.Sprintf("%+v", l.Stored()))
		}
	}
	lim.declared = declared
	w.mu.Lock()
	w.limits = lim
	w.mu.Unlock()
	if ok {
		stored, err := ls.ListWorkflowLimits(ctx)
		if err != nil {
			return fmt.Errorf("openworkflow: read the stored limits: %w", err)
		}
		w.noteStoredLimits(stored, declared, true)
	}
	return nil
}

// limitsDeclarer names this worker as the declarer of workflow name's
// limits (backend.WorkflowLimits.DeclaredBy): its id and the versions of
// name it registered.
func (w *Worker) limitsDeclarer(name string) string {
	var versions []string
	w.reg.mu.RLock()
	for _, d := range w.reg.defs {
		if s := d.Spec(); s.Name == name {
			v := s.Version
			if v == "" {
				v = "unversioned"
			}
			versions = append(versions, v)
		}
	}
	w.reg.mu.RUnlock()
	slices.Sort(versions)
	return fmt.Sprintf("worker %s (%s %s)", w.opts.ID, name, strings.Join(versions, ", "))
}

// noteStoredLimits sets the workflows the worker admits: those it
// registered (names of declared) that have stored limits. With warn it
// logs limits stored for a workflow whose registration here declares none.
func (w *Worker) noteStoredLimits(stored []backend.WorkflowLimits, declared map[string]Limits, warn bool) {
	var admit []string
	for _, s := range stored {
		l, registered := declared[s.WorkflowName]
		if !registered {
			continue
		}
		admit = append(admit, s.WorkflowName)
		if warn && l.Stored().IsZero() {
			w.log.Warn("openworkflow: a workflow registered here without limits has stored limits, which this worker enforces; remove them with `ow limits delete` (Client.DeleteWorkflowLimits) if they should go",
				"workflow", s.WorkflowName, "limits", fmt.Sprintf("%+v", s.Limits))
		}
	}
	w.mu.Lock()
	w.limits.admit, w.limits.readAt = admit, time.Now()
	w.mu.Unlock()
}

// refreshLimits rereads which registered workflows have stored limits
// when the last read is older than limitsRefreshEvery.
func (w *Worker) refreshLimits(ctx context.Context) {
	ls, ok := w.b.(backend.LimitStore)
	if !ok {
		return
	}
	w.mu.Lock()
	declared := w.limits.declared
	stale := declared != nil && time.Since(w.limits.readAt) >= limitsRefreshEvery
	if stale {
		w.limits.readAt = time.Now() // one reader at a time; a failure waits for the next period
	}
	w.mu.Unlock()
	if !stale {
		return
	}
	stored, err := ls.ListWorkflowLimits(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Debug("openworkflow: stored limits not reread", "error", err)
		}
		return
	}
	w.noteStoredLimits(stored, declared, false)
}

// claimLimits returns what a claim passes about limits: the workflows it
// may admit runs of, and the caps of those with a per-worker limit (less
// what this worker executes). Called with w.mu held.
func (w *Worker) claimLimits() (admit []string, caps []backend.WorkflowCap) {
	for name, n := range w.limits.perWorker {
		caps = append(caps, backend.WorkflowCap{Name: name, Max: n - w.limits.running[name]})
	}
	return w.limits.admit, caps
}

// limitStore returns the client's backend as a [backend.LimitStore].
func (c *Client) limitStore(op string) (backend.LimitStore, error) {
	ls, ok := c.b.(backend.LimitStore)
	if !ok {
		return nil, fmt.Errorf("%s: the backend (%T) stores no limits: %w", op, c.b, backend.ErrNotSupported)
	}
	return ls, nil
}

// ListWorkflowLimits returns the limits stored for the namespace's
// workflows, ordered by workflow name. A backend without limits
// ([backend.LimitStore]) gives an error wrapping backend.ErrNotSupported.
func (c *Client) ListWorkflowLimits(ctx context.Context) ([]backend.WorkflowLimits, error) {
	ls, err := c.limitStore("list workflow limits")
	if err != nil {
		return nil, err
	}
	return ls.ListWorkflowLimits(ctx)
}

// DeleteWorkflowLimits removes the stored limits of the workflow name and
// releases its runs waiting for admission, which become ordinary pending
// runs; it returns how many it released. Workers that registered the
// workflow with limits store them again when they start. A backend without
// limits gives an error wrapping backend.ErrNotSupported.
func (c *Client) DeleteWorkflowLimits(ctx context.Context, name string) (int, error) {
	ls, err := c.limitStore("delete workflow limits")
	if err != nil {
		return 0, err
	}
	return ls.DeleteWorkflowLimits(ctx, name)
}
