package openworkflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Retention says how long the finished runs of a namespace are kept, as
// `retention:` in openworkflow.yaml does:
//
//	retention:
//	  default: 30d
//	  workflows: {nightly-report: 7d, audit: 0}
//
// A run is deleted, with its steps, signals, hooks and streams, once it
// has been finished (completed, failed or canceled) for longer than its
// workflow's period; what is still in use is kept (see
// backend.RunPruner). The zero value keeps everything.
type Retention struct {
	// Default is how long a finished run is kept after it finished; 0
	// keeps runs forever (those of Workflows excepted).
	Default time.Duration
	// Workflows overrides Default for the runs of a workflow, by name; 0
	// keeps that workflow's runs forever.
	Workflows map[string]time.Duration
}

// Validate checks r: no negative period. The error wraps
// backend.ErrInvalidArgument and names the workflow at fault.
func (r Retention) Validate() error {
	if r.Default < 0 {
		return fmt.Errorf("retention: %w: negative default period %v", backend.ErrInvalidArgument, r.Default)
	}
	for name, d := range r.Workflows {
		if d < 0 {
			return fmt.Errorf("retention: %w: negative period %v for workflow %q", backend.ErrInvalidArgument, d, name)
		}
		if name == "" || !backend.ValidText(name) {
			return fmt.Errorf("retention: %w: workflow name %q", backend.ErrInvalidArgument, name)
		}
	}
	return nil
}

// IsZero reports whether r deletes nothing.
func (r Retention) IsZero() bool {
	if r.Default > 0 {
		return false
	}
	for _, d := range r.Workflows {
		if d > 0 {
			return false
		}
	}
	return true
}

// PruneOptions configure [Client.PruneRuns]. The zero value deletes in
// batches of 500 runs, one right after the other.
type PruneOptions struct {
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
	// BatchSize is the most runs deleted per transaction; 0 means
	// backend.DefaultPruneBatch (500), at most backend.MaxPruneBatch.
	BatchSize int
	// Pause is a rest between batches, leaving the database to the
	// workers; 0 means none.
	Pause time.Duration
	// Duty, when above 0 and below 1, is the largest share of the time
	// the prune spends in its batches: after a batch that took d, it rests
	// at least d × (1/Duty − 1) (and at least Pause), so that the
	// database's other writers keep most of it whatever a batch costs on
	// this machine and backend (SQLite has one write lock, which a batch
	// holds throughout). 0 (or 1) means no such limit.
	Duty float64
	// Progress, when set, is called after each batch with the totals so
	// far.
	Progress func(PruneProgress)
	// Now is the clock the cutoffs are computed from; nil means time.Now.
	Now func() time.Time
}

// PruneProgress is the state of a prune after a batch.
type PruneProgress struct {
	// Workflow is the workflow whose period applies to the batch; "" for
	// the default period.
	Workflow string
	// FinishedBefore is that batch's cutoff.
	FinishedBefore time.Time
	// Deleted counts the runs deleted so far by the whole prune (with
	// DryRun: that would be), by status.
	Deleted backend.RunCounts
	// Batches is the number of batches done.
	Batches int
}

// PruneReport is what [Client.PruneRuns] did.
type PruneReport struct {
	// Deleted counts the runs deleted (with DryRun: that would be), by the
	// status they had.
	Deleted backend.RunCounts `json:"deleted"`
	// ByWorkflow splits Deleted's total by the period that applied:
	// workflow name, "" for the default.
	ByWorkflow map[string]int `json:"byWorkflow"`
	// Batches is the number of transactions.
	Batches int `json:"batches"`
	// DryRun is set when nothing was deleted.
	DryRun bool `json:"dryRun"`
	// EventsDeleted counts the published events deleted, with what they
	// did (go_events, go_event_effects): those older than the default
	// period. A dry run counts none.
	EventsDeleted int `json:"eventsDeleted"`
}

// PruneRuns deletes the finished runs that r no longer keeps, with their
// steps, signals, hooks and streams, in batches of opts.BatchSize runs,
// each its own short transaction (backend.RunPruner says what is deleted
// and what is kept as still in use). The workflows of r.Workflows are
// pruned each with its own period, then every other workflow with
// r.Default. It returns what it deleted; on an error (or ctx's end) the
// batches already done stay done, and the report counts them. The
// backend must implement backend.RunPruner (both built-in ones do), else
// the error wraps backend.ErrNotSupported.
func (c *Client) PruneRuns(ctx context.Context, r Retention, opts PruneOptions) (PruneReport, error) {
	rep := PruneReport{ByWorkflow: map[string]int{}, DryRun: opts.DryRun}
	if err := r.Validate(); err != nil {
		return rep, err
	}
	if opts.Duty < 0 || opts.Duty > 1 {
		return rep, fmt.Errorf("prune runs: %w: duty %v, want 0 to 1", backend.ErrInvalidArgument, opts.Duty)
	}
	pr, ok := c.b.(backend.RunPruner)
	if !ok {
		return rep, fmt.Errorf("prune runs: %w: the backend cannot delete runs", backend.ErrNotSupported)
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	at := now()
	names := slices.Sorted(maps.Keys(r.Workflows))
	type walk struct {
		workflow string
		p        backend.PruneWorkflowRunsParams
	}
	var walks []walk
	for _, name := range names {
		if d := r.Workflows[name]; d > 0 {
			walks = append(walks, walk{name, backend.PruneWorkflowRunsParams{WorkflowName: name, FinishedBefore: at.Add(-d)}})
		}
	}
	if r.Default > 0 {
		walks = append(walks, walk{"", backend.PruneWorkflowRunsParams{ExceptWorkflowNames: names, FinishedBefore: at.Add(-r.Default)}})
	}
	for _, w := range walks {
		p := w.p
		p.Limit, p.DryRun = opts.BatchSize, opts.DryRun
		for {
			batchStart := time.Now()
			res, err := pr.PruneWorkflowRuns(ctx, p)
			if err != nil {
				return rep, err
			}
			took := time.Since(batchStart)
			rep.Batches++
			rep.Deleted = rep.Deleted.Plus(res.Deleted)
			rep.ByWorkflow[w.workflow] += res.Deleted.Total()
			if opts.Progress != nil {
				opts.Progress(PruneProgress{Workflow: w.workflow, FinishedBefore: p.FinishedBefore, Deleted: rep.Deleted, Batches: rep.Batches})
			}
			if res.Next == "" {
				break
			}
			p.After = res.Next
			rest := opts.Pause
			if opts.Duty > 0 && opts.Duty < 1 {
				rest = max(rest, time.Duration(float64(took)*(1/opts.Duty-1)))
			}
			if err := pause(ctx, rest); err != nil {
				return rep, err
			}
		}
	}
	if es, ok := c.b.(backend.EventStore); ok && r.Default > 0 && !opts.DryRun {
		// Events are the namespace's, not a workflow's: they are kept for
		// the default period.
		batch := opts.BatchSize
		if batch <= 0 {
			batch = backend.DefaultPruneBatch
		}
		for {
			n, err := es.PruneEvents(ctx, at.Add(-r.Default), batch)
			rep.EventsDeleted += n
			if err != nil {
				return rep, err
			}
			if n < batch {
				break
			}
			rep.Batches++
			if err := pause(ctx, opts.Pause); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

// pause waits d, or returns ctx's error when it ends first.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// PrunerOptions configure a [Pruner]. Only Retention is required.
type PrunerOptions struct {
	// Retention is what the pruner keeps.
	Retention Retention
	// Interval is the time from the end of one prune to the start of the
	// next; the first starts at Start. 0 means [DefaultPruneInterval].
	Interval time.Duration
	// BatchSize is the most runs deleted per transaction; 0 means
	// backend.DefaultPruneBatch (500).
	BatchSize int
	// Pause is the least rest between batches; 0 means
	// [DefaultPrunePause], a negative value none.
	Pause time.Duration
	// Duty is the largest share of the time the pruner spends in its
	// batches (see PruneOptions.Duty); 0 means [DefaultPruneDuty], 1 no
	// limit. With Pause it spreads a large prune out so that workers
	// sharing the database keep their pace.
	Duty float64
	// Logger receives one line per prune that deleted something, and the
	// errors; nil discards them.
	Logger *slog.Logger
	// Now is the clock of the cutoffs; nil means time.Now.
	Now func() time.Time
}

// Defaults of [PrunerOptions].
const (
	// DefaultPruneInterval is the time between two prunes of a Pruner.
	DefaultPruneInterval = time.Hour
	// DefaultPrunePause is a Pruner's least rest between two batches.
	DefaultPrunePause = 20 * time.Millisecond
	// DefaultPruneDuty is the largest share of the time a Pruner spends
	// in its batches: 5 %. Beside W1, with a million finished runs to
	// prune, a duty of 0.1 slowed W1 by 5 % on PostgreSQL but 12 % on
	// SQLite (one write lock, which a batch holds), 0.05 by 6 % on SQLite;
	// no rest at all, by 19 % on PostgreSQL (docs/benchmarks.md, R1). At
	// 0.05 a pruner beside a busy worker deletes about 500–1,000 runs a
	// second; raise it (retention.duty) where more runs finish than that.
	DefaultPruneDuty = 0.05
)

// Pruner deletes the runs its retention no longer keeps, once at start
// and then every Interval: the built-in pruner of `ow server`. Several
// pruners on one namespace (several servers) are harmless: their batches
// skip each other's rows. Create it with [NewPruner], then Start and
// Stop.
type Pruner struct {
	c    *Client
	opts PrunerOptions
	log  *slog.Logger

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
	last    PruneReport
	lastErr error
}

// NewPruner returns a pruner of c's namespace; it does nothing until
// Start.
func NewPruner(c *Client, opts PrunerOptions) *Pruner {
	if opts.Interval <= 0 {
		opts.Interval = DefaultPruneInterval
	}
	switch {
	case opts.Pause == 0:
		opts.Pause = DefaultPrunePause
	case opts.Pause < 0:
		opts.Pause = 0
	}
	if opts.Duty == 0 {
		opts.Duty = DefaultPruneDuty
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pruner{c: c, opts: opts, log: log}
}

// Start checks the retention and starts the pruner's goroutine, which
// prunes at once and then every Interval until Stop. It fails for an
// invalid retention or duty, a second Start, or a backend that cannot
// delete runs (backend.ErrNotSupported).
func (p *Pruner) Start(ctx context.Context) error {
	if err := p.opts.Retention.Validate(); err != nil {
		return err
	}
	if p.opts.Duty < 0 || p.opts.Duty > 1 {
		return fmt.Errorf("openworkflow: pruner: %w: duty %v, want 0 to 1", backend.ErrInvalidArgument, p.opts.Duty)
	}
	if _, ok := p.c.b.(backend.RunPruner); !ok {
		return fmt.Errorf("openworkflow: pruner: %w: the backend cannot delete runs", backend.ErrNotSupported)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("openworkflow: pruner already started")
	}
	p.started = true
	loopCtx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go p.loop(loopCtx)
	return nil
}

// Stop ends the pruner: a batch in flight is rolled back or committed
// whole, and no other starts. It waits for the goroutine to return, or
// returns ctx's error when ctx ends first.
func (p *Pruner) Stop(ctx context.Context) error {
	p.mu.Lock()
	started, cancel, done := p.started, p.cancel, p.done
	p.mu.Unlock()
	if !started {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("openworkflow: pruner still stopping: %w", ctx.Err())
	}
}

// Last returns the report of the last prune that ended, and its error. A
// prune that Stop interrupted is not recorded: Last then still answers
// the one before it.
func (p *Pruner) Last() (PruneReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.lastErr
}

func (p *Pruner) loop(ctx context.Context) {
	defer close(p.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		rep, err := p.c.PruneRuns(ctx, p.opts.Retention, PruneOptions{BatchSize: p.opts.BatchSize, Pause: p.opts.Pause, Duty: p.opts.Duty, Now: p.opts.Now})
		stopped := ctx.Err() != nil
		if stopped && errors.Is(err, context.Canceled) {
			// Stop interrupted this prune: what it deleted is its
			// report, and the statement Stop canceled (it fails as
			// context.Canceled on both backends) is no failure. Any
			// other error is one, even at Stop.
			err = nil
		}
		p.mu.Lock()
		p.last, p.lastErr = rep, err
		p.mu.Unlock()
		switch {
		case err != nil && stopped:
			p.log.Error("openworkflow: prune of finished runs failed as the pruner stopped",
				"error", err, "deleted", rep.Deleted.Total())
		case err != nil:
			p.log.Error("openworkflow: prune of finished runs failed; next attempt after the interval",
				"error", err, "deleted", rep.Deleted.Total(), "interval", p.opts.Interval)
		case rep.Deleted.Total() > 0:
			p.log.Info("openworkflow: pruned finished runs", "deleted", rep.Deleted.Total(),
				"completed", rep.Deleted.Completed, "failed", rep.Deleted.Failed, "canceled", rep.Deleted.Canceled,
				"batches", rep.Batches, "took", time.Since(start).Round(time.Millisecond))
		}
		if stopped {
			return
		}
		t.Reset(p.opts.Interval)
	}
}
