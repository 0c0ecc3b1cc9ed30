package openworkflow

import (
	"fmt"
	"github.com/openworkflow-go/openworkflow/backend"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/internal/id"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// WorkerOptions configure a [Worker]. The zero value is usable: every zero
// field takes the default stated beside it.
type WorkerOptions struct {
	// Concurrency is the number of runs executed at once (slots). A worker
	// claims only when a slot is free. Default 10.
	Concurrency int
	// LeaseDuration is how long a claim holds a run before another worker
	// may take it, unless renewed by a heartbeat. Default 30 s.
	LeaseDuration time.Duration
	// HeartbeatInterval is how often an executing run's lease is renewed;
	// it is also the longest a cancel takes to reach a step when the
	// backend cannot notify. Default LeaseDuration / 2 (15 s).
	HeartbeatInterval time.Duration
	// MaxPollInterval caps the idle poll backoff (100 ms × 2^n with jitter
	// in [0.5, 1], as in OpenWorkflow). Default 1 s.
	MaxPollInterval time.Duration
	// ShutdownGracePeriod is how long [Worker.Stop] lets executing passes
	// finish before canceling them and releasing their runs to other
	// workers (user code that ignores the cancellation is abandoned
	// AbandonStepAfter later). Default 30 s.
	ShutdownGracePeriod time.Duration
	// Logger receives the worker's logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock the worker reads (deadlines, wake-up times, retry
	// backoff). Default time.Now. Tests inject a fake clock here and in the
	// backend.
	Now func() time.Time
	// RunningStepAfter is how long a step may execute before its attempt
	// is recorded as running (so dashboards show long steps); a step that
	// returns sooner costs one write, its finished attempt. Default 50 ms.
	RunningStepAfter time.Duration
	// ClaimUnregistered makes the worker claim any run of the namespace,
	// as OpenWorkflow's workers do, rather than only runs of the workflows
	// (name and version) registered on it. A run whose workflow is not
	// registered is then rescheduled with backoff (5 s ×2 up to 5 min) for
	// another worker — but never failed: where the backoff would end past
	// the run's deadline it is rescheduled at the deadline, which the
	// claim's deadline sweep enforces (OpenWorkflow fails it at once).
	// Default false: a worker claims only what it can execute, so that
	// workers of other languages (the TypeScript SDK) or deployments
	// sharing the namespace get their runs at once. Before issue 20 the
	// default was to claim everything, which starved TypeScript workers:
	// docs/interop.md measures what mixed workers do.
	ClaimUnregistered bool
	// OnlyRegistered is the default since issue 20 and has no effect any
	// more, except that setting it together with ClaimUnregistered is
	// refused by [Worker.Start].
	//
	// Deprecated: leave it unset; set ClaimUnregistered for the old default.
	OnlyRegistered bool
	// TracerProvider receives OpenTelemetry spans: one workflow_run.execute
	// per pass (a new trace linked to the span that created the run, with
	// the pass's outcome), step_attempt.execute per executed step,
	// workflow_run.create per child and signal.send per signal step, named
	// and attributed as in OpenWorkflow 0.10. Nil: no tracing.
	TracerProvider trace.TracerProvider
	// Metrics receives the worker's measurements as they happen: claims
	// and their latency, slots busy, step and pass durations, finished
	// runs, and group commits (see telemetry.Metrics). Package metrics
	// exports them to Prometheus. Nil: nothing is measured, and the hot
	// path does not read the clock for it.
	Metrics telemetry.Metrics
	// ID prefixes the worker ids written to runs ("<ID>/<slot>"). Default
	// "<hostname>-<pid>-<random>".
	ID string
	// ClaimAhead is how long before a parked run's wake-up the worker may
	// claim it (backend.ClaimWorkflowRunsParams.Lookahead) and hold it in
	// its slot, history read, until its earliest wait (a sleep, or a
	// child's or signal's timeout) is due, so that the claim and the
	// history read are done when it wakes rather than after. A run never
	// proceeds past a wait before the wait is due. Default 10 ms; negative
	// disables it (claims take due runs only, as in OpenWorkflow). The hold
	// is timed in real time: a test driving a fake clock (Now) that stops
	// it just short of a wake-up should disable it.
	ClaimAhead time.Duration
	// SkipSchedules makes the worker fire no schedule ticks (it still puts
	// the schedules registered on it when it starts). Default false: every
	// worker fires the namespace's due ticks, each tick starting exactly
	// one run however many workers do (see ScheduleSpec). Ticks are due by
	// the backend's clock; a worker wakes for the next one by Now, and
	// looks at the schedules at least every 5 MaxPollIntervals.
	SkipSchedules bool
	// SkipBulkActions makes the worker drive no bulk actions. Default
	// false: every worker looks for an open bulk action of its namespace
	// whose lease is free every BulkActionPoll, and drives the one it
	// leases page by page ([Client.StartBulkAction]); a TypeScript worker
	// never does, since the action is not a run.
	SkipBulkActions bool
	// BulkActionPoll is how often an idle worker looks for a bulk action
	// to drive. Default 2 s.
	BulkActionPoll time.Duration
	// BulkActionLease is how long a driver's lease on a bulk action
	// holds; each page renews it, and a killed driver's action is taken
	// over by another worker once it expires. Default 30 s; it must
	// exceed the time a page takes.
	BulkActionLease time.Duration
	// BulkActionPage is the number of runs a page of a bulk action holds,
	// each page one transaction. Default 1,000 ([backend.DefaultBulkPage]),
	// at most [backend.MaxBulkPage].
	BulkActionPage int
	// Limits sets the limits of registered workflows by name, in place of
	// their Spec.Limits: for workflows defined elsewhere (DAG and OpenFlow
	// workflows, or limits from openworkflow.yaml). Nil: each workflow's
	// Spec.Limits.
	Limits map[string]Limits
	// AbandonStepAfter is how long a pass's user code — a step function,
	// parallel steps ([Go]) or the workflow function's own code between
	// steps — may go on after the pass's context ended (the run canceled,
	// failed at its deadline or lost, or the worker stopping) before the
	// worker abandons it. Go cannot stop a goroutine, so an abandoned
	// pass's goroutines run on, but the worker no longer waits for them:
	// the run is settled as if the pass had returned (failed at its
	// deadline, handed back at shutdown, or left to whoever owns it now),
	// nothing the code does later is recorded, and its slot is free. Each
	// abandonment is logged (a warning naming the run, its steps still
	// running and for how long) and counted (Worker.AbandonedSteps,
	// telemetry.Metrics.ObserveAbandonedStep) until the code returns.
	// Default 1 s, in real time (not Now).
	AbandonStepAfter time.Duration
	// MaxAbandonedSteps is how many abandoned passes (see
	// AbandonStepAfter) whose code has not returned yet a worker tolerates:
	// at that many it claims no run, however many slots are free, and logs
	// an error (its claims fail with an error wrapping
	// [ErrAbandonedSteps]) until one of them returns. It bounds the
	// goroutines and resources that user code ignoring its context can
	// hold in one process; the cure is to make that code return when its
	// context is done, and meanwhile to restart the process. Default
	// Concurrency, and at least 10, so that such code at most doubles
	// what a worker runs.
	MaxAbandonedSteps int
	// RegistryInterval is how often the worker writes its record to the
	// backend's registry of workers (backend.WorkerRegistry: id, host,
	// process, SDK version, registered workflows, slots in use), in real
	// time; it also writes it when it starts and, draining then stopped,
	// when it stops. Each write is one small upsert, on no claim or step
	// path: 0.1 commits/s per worker at the default. A worker silent for 3
	// intervals is shown gone, and forgotten after 24 h. Default 10 s;
	// negative: the worker writes no record (it is then shown only by the
	// runs it holds).
	RegistryInterval time.Duration
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 30 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = o.LeaseDuration / 2
	}
	if o.MaxPollInterval <= 0 {
		o.MaxPollInterval = time.Second
	}
	if o.ShutdownGracePeriod <= 0 {
		o.ShutdownGracePeriod = 30 * time.Second
	}
	switch {
	case o.ClaimAhead == 0:
		o.ClaimAhead = defaultClaimAhead
	case o.ClaimAhead < 0:
		o.ClaimAhead = 0
	}
	if o.AbandonStepAfter <= 0 {
		o.AbandonStepAfter = defaultAbandonStepAfter
	}
	if o.MaxAbandonedSteps <= 0 {
		o.MaxAbandonedSteps = max(o.Concurrency, 10)
	}
	if o.RegistryInterval == 0 {
		o.RegistryInterval = defaultRegistryInterval
	}
	if o.RunningStepAfter <= 0 {
		o.RunningStepAfter = 50 * time.Millisecond
	}
	if o.BulkActionPoll <= 0 {
		o.BulkActionPoll = 2 * time.Second
	}
	if o.BulkActionLease <= 0 {
		o.BulkActionLease = 30 * time.Second
	}
	if o.BulkActionPage <= 0 || o.BulkActionPage > backend.MaxBulkPage {
		o.BulkActionPage = backend.DefaultBulkPage
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ID == "" {
		host, _ := os.Hostname()
		u := id.New("wkr") // its last characters are the ULID's random part (the first are its time)
		o.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), u[len(u)-10:])
	}
	return o
}

// validate reports option combinations that cannot work, after the
// defaults are applied.
func (o WorkerOptions) validate() error {
	if o.HeartbeatInterval >= o.LeaseDuration {
		return fmt.Errorf("openworkflow: WorkerOptions.HeartbeatInterval (%v) must be shorter than LeaseDuration (%v), "+
			"or every run's lease would expire before it is renewed; leave HeartbeatInterval zero for LeaseDuration / 2",
			o.HeartbeatInterval, o.LeaseDuration)
	}
	if o.OnlyRegistered && o.ClaimUnregistered {
		return fmt.Errorf("openworkflow: WorkerOptions.OnlyRegistered and ClaimUnregistered contradict each other; " +
			"drop OnlyRegistered (claiming only registered workflows is the default)")
	}
	return nil
}
