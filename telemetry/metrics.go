package telemetry

import "time"

// Metrics receives the measurements a worker
// (openworkflow.WorkerOptions.Metrics) and the HTTP API
// (api.Options.Metrics) make as things happen, for a metrics system to
// aggregate. Package metrics implements it with Prometheus; this
// interface keeps the SDK itself free of any metrics library.
//
// Methods are called on the engine's hot path, from many goroutines at
// once: an implementation must be safe for concurrent use, return quickly
// and never block. Embed [NoMetrics] in an implementation so that methods
// added to this interface later are no-ops for it.
type Metrics interface {
	// ObserveClaim reports one claim of a worker: d is how long the
	// backend took to answer, asked how many runs were asked for (the
	// free slots), claimed how many were leased. err is the claim's error
	// (claimed is then 0). The claim that only sweeps deadlines, made
	// when no slot is free, is not reported. A start that claimed its own
	// run for a worker of its process (the create's transaction leased
	// it) is reported as a claim of one run, d the create's duration.
	ObserveClaim(d time.Duration, asked, claimed int, err error)
	// ObserveWorker reports a worker started (started true) or stopped,
	// with its number of slots (WorkerOptions.Concurrency).
	ObserveWorker(started bool, slots int)
	// ObserveSlot reports a slot taking a claimed run (busy true) or
	// freed when the run's execution pass ended.
	ObserveSlot(busy bool)
	// ObserveStep reports a function step attempt a worker executed
	// (ow.Run, ow.Go; not replayed steps, sleeps or waits): its
	// workflow's name, its status ("completed" or "failed") and how long
	// the step function ran, its result's encoding included.
	ObserveStep(workflow, status string, d time.Duration)
	// ObservePass reports one execution pass of a run: its workflow's
	// name, its outcome ([OutcomeCompleted], [OutcomeSuspended],
	// [OutcomeRetrying], [OutcomeFailed], or [OutcomeStale] for a pass
	// that lost its run — canceled, lease lost, deadline passed — or
	// handed it back at shutdown), and its duration from the claim to the
	// commit of its transition.
	ObservePass(workflow, outcome string, d time.Duration)
	// ObserveRunFinished reports a run a worker finished for good: its
	// workflow's name, its status ("completed" or "failed") and how long
	// it took from its first claim (started_at) to the end, by the
	// worker's clock. Runs canceled by a client are not reported here.
	ObserveRunFinished(workflow, status string, d time.Duration)
	// ObserveCommit reports one group commit of a worker's write
	// pipeline: the groups and writes it applied together in one
	// transaction, how many of the groups failed (a fence refusal, an
	// invalid value, or the whole commit), and how long it took.
	ObserveCommit(groups, writes, failed int, d time.Duration)
	// ObserveRequest reports one HTTP API request: the route's pattern
	// ("/v1/runs/{id}"; "" for a path that matched no route), the method,
	// the status answered and the time to serve it.
	ObserveRequest(route, method string, status int, d time.Duration)
	// ObserveAbandonedStep reports the user code of an execution pass
	// (its step functions, parallel steps and the workflow function)
	// abandoned by its worker (abandoned true) because it went on
	// WorkerOptions.AbandonStepAfter after its context ended, and again
	// (abandoned false) when that code returned at last. The difference
	// of the two counts is the number of goroutines running user code
	// that no slot counts; a worker claims nothing while it has
	// WorkerOptions.MaxAbandonedSteps of them.
	ObserveAbandonedStep(abandoned bool)
	// ObserveScheduleFailure reports a schedule whose fire failed in a
	// worker's schedule loop (backend.FireReport.Failures): its name. The
	// schedule is backed off and the others go on; the failure is also
	// stored on the schedule (backend.Schedule.LastError).
	ObserveScheduleFailure(schedule string)
}

// NoMetrics is a [Metrics] that records nothing. Embed it in an
// implementation to stay source-compatible when methods are added.
type NoMetrics struct{}

var _ Metrics = NoMetrics{}

// ObserveClaim does nothing.
func (NoMetrics) ObserveClaim(time.Duration, int, int, error) {}

// ObserveWorker does nothing.
func (NoMetrics) ObserveWorker(bool, int) {}

// ObserveSlot does nothing.
func (NoMetrics) ObserveSlot(bool) {}

// ObserveStep does nothing.
func (NoMetrics) ObserveStep(string, string, time.Duration) {}

// ObservePass does nothing.
func (NoMetrics) ObservePass(string, string, time.Duration) {}

// ObserveRunFinished does nothing.
func (NoMetrics) ObserveRunFinished(string, string, time.Duration) {}

// ObserveCommit does nothing.
func (NoMetrics) ObserveCommit(int, int, int, time.Duration) {}

// ObserveRequest does nothing.
func (NoMetrics) ObserveRequest(string, string, int, time.Duration) {}

// ObserveAbandonedStep does nothing.
func (NoMetrics) ObserveAbandonedStep(bool) {}

// ObserveScheduleFailure does nothing.
func (NoMetrics) ObserveScheduleFailure(string) {}
