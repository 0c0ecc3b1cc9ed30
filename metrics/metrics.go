// Package metrics exports what OpenWorkflow's workers and HTTP API
// measure in Prometheus' text format, with Prometheus' Go client
// (github.com/prometheus/client_golang).
//
// An [Exporter] is a telemetry.Metrics: give it to the worker
// (ow.WorkerOptions.Metrics) and to the API (api.Options.Metrics), and
// serve [Exporter.Handler] at /metrics (server.Options.Metrics; `ow
// server` and `ow dev` do all three):
//
//	m, err := metrics.New(metrics.Options{Client: client})
//	w := ow.NewWorker(b, ow.WorkerOptions{Metrics: m})
//	http.Handle("/metrics", m.Handler())
//
// # Metrics
//
// All names start with openworkflow_. Durations are in seconds.
//
//	openworkflow_runs{status}                          gauge: runs per status in the client's namespace (pending, running, completed, failed, canceled), counted by the backend at scrape time
//	openworkflow_run_duration_seconds{workflow,status} histogram: first claim to end, of the runs this process's workers finished (completed, failed)
//	openworkflow_step_duration_seconds{workflow,status} histogram: function steps executed (completed, failed)
//	openworkflow_pass_duration_seconds{workflow,outcome} histogram: execution passes, claim to transition (completed, suspended, retrying, failed, stale)
//	openworkflow_claim_duration_seconds                histogram: claim latency, the backend's answer to a claim
//	openworkflow_claimed_runs_total                    counter: runs claimed
//	openworkflow_claim_errors_total                    counter: claims that failed
//	openworkflow_commit_duration_seconds               histogram: group commits of the write pipeline
//	openworkflow_commit_writes                         histogram: writes per group commit (the batch size)
//	openworkflow_commit_groups                         histogram: write groups (passes' writes) per group commit
//	openworkflow_commit_failed_groups_total            counter: write groups a commit refused
//	openworkflow_schedule_failures_total{schedule}     counter: schedule fires that failed (backed off)
//	openworkflow_workers                               gauge: workers started in this process
//	openworkflow_worker_slots                          gauge: their slots (concurrency), in total
//	openworkflow_worker_slots_busy                     gauge: slots executing a run
//	openworkflow_worker_abandoned_steps                gauge: passes whose user code ignored its canceled context and was abandoned, still running (no slot counts them)
//	openworkflow_http_request_duration_seconds{route,method,code} histogram: HTTP API requests
//	openworkflow_replica_up                            gauge: 1 when the read replica (read_replica_url) answered its last check; these four only with a replica
//	openworkflow_replica_lag_seconds                   gauge: the replica's replay lag in seconds
//	openworkflow_replica_lag_bytes                     gauge: the replica's replay lag in bytes of WAL
//	openworkflow_replica_reads_total{target}           counter: the API's reads served by the replica or the primary
//	openworkflow_dag_runs_finished_total{workflow,status} counter: DAG runs their interpreter ended, by final DAG status (completed, failed, compensated, compensation_failed), when the Exporter is given to dag.Options.Metrics (at least once: see dag.Metrics)
//
// plus the Go runtime's and the process's standard metrics (go_…,
// process_…) when the Exporter makes its own registry.
//
// Commits per step, the engine's main cost, is a ratio of two of them:
//
//	rate(openworkflow_commit_duration_seconds_count[5m])
//	  / rate(openworkflow_step_duration_seconds_count[5m])
//
// and the share of busy slots openworkflow_worker_slots_busy /
// openworkflow_worker_slots.
//
// The workflow label takes the names of the workflows registered on the
// worker only (a run of an unregistered workflow is not measured), and the
// route label the API's route patterns, so neither grows with the number
// of runs.
package metrics

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// Options configure [New]. The zero value is usable: no run counts, a
// registry of its own with the Go and process collectors.
type Options struct {
	// Client, when set, is asked for the runs per status
	// (ow.Client.CountRuns) when /metrics is scraped, for
	// openworkflow_runs. Nil: that gauge is not exported.
	Client *ow.Client
	// CountsMaxAge is how long a count of runs is reused by later
	// scrapes, so that several scrapers (or a dashboard refreshing) cost
	// the database one count per period. Default 5 s; negative: count on
	// every scrape.
	CountsMaxAge time.Duration
	// CountTimeout bounds one count of runs; a count that fails or times
	// out leaves openworkflow_runs out of that scrape and is logged.
	// Default 5 s.
	CountTimeout time.Duration
	// Registry is where the metrics are registered and what
	// [Exporter.Handler] serves. Nil: a new registry, with Prometheus' Go
	// runtime and process collectors. Pass your program's registry to
	// serve its metrics and these together.
	Registry *prometheus.Registry
	// Logger receives the errors of a scrape (a failed count); nil logs
	// nothing.
	Logger *slog.Logger
}

// Exporter collects the measurements of workers and of the HTTP API (it
// is a [telemetry.Metrics]) and serves them in Prometheus' format. Its
// methods are safe for concurrent use. Create it with [New].
type Exporter struct {
	reg     *prometheus.Registry
	handler http.Handler

	runDuration   *prometheus.HistogramVec
	stepDuration  *prometheus.HistogramVec
	passDuration  *prometheus.HistogramVec
	claimDuration prometheus.Observer
	claimedRuns   prometheus.Counter
	claimErrors   prometheus.Counter
	commitDur     prometheus.Observer
	commitWrites  prometheus.Observer
	commitGroups  prometheus.Observer
	commitFailed  prometheus.Counter
	workers       prometheus.Gauge
	slots         prometheus.Gauge
	slotsBusy     prometheus.Gauge
	abandoned     prometheus.Gauge
	requests      *prometheus.HistogramVec
	schedFailures *prometheus.CounterVec
	dagFinished   *prometheus.CounterVec
}

var _ telemetry.Metrics = (*Exporter)(nil)

// Buckets of the histograms, in seconds (sizes for the commit ones).
var (
	// stepBuckets cover a step with no I/O (tens of µs) to a minute.
	stepBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// runBuckets cover a run of a few fast steps to one that sleeps for
	// a day.
	runBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}
	// dbBuckets cover a database round trip (claims, commits).
	dbBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// sizeBuckets are powers of two up to the pipeline's 512 writes per
	// commit.
	sizeBuckets = prometheus.ExponentialBuckets(1, 2, 10)
	// requestBuckets are Prometheus' defaults.
	requestBuckets = prometheus.DefBuckets
)

// New returns an exporter with its metrics registered in opts.Registry
// (or a registry of its own). It fails if a metric of the same name is
// already registered there (two exporters on one registry).
func New(opts Options) (*Exporter, error) {
	if opts.CountsMaxAge == 0 {
		opts.CountsMaxAge = 5 * time.Second
	}
	if opts.CountTimeout <= 0 {
		opts.CountTimeout = 5 * time.Second
	}
	reg := opts.Registry
	var cs []prometheus.Collector
	if reg == nil {
		reg = prometheus.NewRegistry()
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	e := &Exporter{reg: reg}
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "openworkflow", Name: name, Help: help, Buckets: buckets}, labels)
		cs = append(cs, h)
		return h
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "openworkflow", Name: name, Help: help})
		cs = append(cs, c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "openworkflow", Name: name, Help: help})
		cs = append(cs, g)
		return g
	}
	e.runDuration = hist("run_duration_seconds", "Time from a run's first claim to its end, for the runs this process's workers finished, by workflow and final status (completed, failed).", runBuckets, "workflow", "status")
	e.stepDuration = hist("step_duration_seconds", "Time a function step ran, for the step attempts this process's workers executed, by workflow and status (completed, failed).", stepBuckets, "workflow", "status")
	e.passDuration = hist("pass_duration_seconds", "Time of an execution pass, from the claim to the commit of its transition, by workflow and outcome (completed, suspended, retrying, failed, stale).", stepBuckets, "workflow", "outcome")
	e.claimDuration = hist("claim_duration_seconds", "Claim latency: how long the backend took to answer a worker's claim.", dbBuckets).WithLabelValues()
	e.claimedRuns = counter("claimed_runs_total", "Runs claimed by this process's workers.")
	e.claimErrors = counter("claim_errors_total", "Claims that failed (the backend did not answer or refused).")
	e.commitDur = hist("commit_duration_seconds", "Time of a group commit of the worker's write pipeline; its count over the count of step_duration_seconds is the commits per step.", dbBuckets).WithLabelValues()
	e.commitWrites = hist("commit_writes", "Writes applied by one group commit (the batch size).", sizeBuckets).WithLabelValues()
	e.commitGroups = hist("commit_groups", "Write groups (one pass's writes each) applied by one group commit.", sizeBuckets).WithLabelValues()
	e.commitFailed = counter("commit_failed_groups_total", "Write groups a group commit did not apply (refused by the fence, invalid, or the commit failed).")
	e.workers = gauge("workers", "Workers started in this process.")
	e.slots = gauge("worker_slots", "Slots (concurrency) of the workers started in this process.")
	e.slotsBusy = gauge("worker_slots_busy", "Slots executing a run.")
	e.abandoned = gauge("worker_abandoned_steps", "Execution passes whose user code (step functions, workflow code) went on ignoring its canceled context and was abandoned by its worker, and still runs: goroutines no slot counts. A worker claims nothing while it has WorkerOptions.MaxAbandonedSteps of them.")
	e.requests = hist("http_request_duration_seconds", "HTTP API requests by route pattern, method and status code.", requestBuckets, "route", "method", "code")
	e.schedFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "openworkflow", Name: "schedule_failures_total",
		Help: "Fires of a schedule that failed (its run could not be started; the schedule backs off and the others go on), by schedule."}, []string{"schedule"})
	cs = append(cs, e.schedFailures)
	e.dagFinished = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "openworkflow", Name: "dag_runs_finished_total",
		Help: "DAG runs their interpreter ended, by workflow and final DAG status: completed, failed (nothing to compensate), compensated, compensation_failed (a compensation failed for good: not all undone). Counted at least once (a final pass whose commit is lost reports again)."}, []string{"workflow", "status"})
	cs = append(cs, e.dagFinished)
	if opts.Client != nil {
		cs = append(cs, newRunCounts(opts.Client, opts.CountsMaxAge, opts.CountTimeout))
		if rr, ok := opts.Client.Backend().(backend.ReadReplicas); ok && rr.HasReadReplica() {
			cs = append(cs, newReplicaCollector(rr))
		}
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	hopts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}
	if opts.Logger != nil {
		hopts.ErrorLog = slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn)
	}
	e.handler = promhttp.HandlerFor(reg, hopts)
	return e, nil
}

// Handler serves the registry's metrics in Prometheus' text format (or
// another format the scraper asks for), for GET /metrics.
func (e *Exporter) Handler() http.Handler { return e.handler }

// Registry is the registry the exporter's metrics are in.
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// ObserveClaim implements [telemetry.Metrics].
func (e *Exporter) ObserveClaim(d time.Duration, _, claimed int, err error) {
	e.claimDuration.Observe(d.Seconds())
	if err != nil {
		e.claimErrors.Inc()
		return
	}
	e.claimedRuns.Add(float64(claimed))
}

// ObserveWorker implements [telemetry.Metrics].
func (e *Exporter) ObserveWorker(started bool, slots int) {
	sign := 1.0
	if !started {
		sign = -1
	}
	e.workers.Add(sign)
	e.slots.Add(sign * float64(slots))
}

// ObserveSlot implements [telemetry.Metrics].
func (e *Exporter) ObserveSlot(busy bool) {
	if busy {
		e.slotsBusy.Inc()
	} else {
		e.slotsBusy.Dec()
	}
}

// ObserveAbandonedStep implements [telemetry.Metrics].
func (e *Exporter) ObserveAbandonedStep(abandoned bool) {
	if abandoned {
		e.abandoned.Inc()
	} else {
		e.abandoned.Dec()
	}
}

// ObserveStep implements [telemetry.Metrics].
func (e *Exporter) ObserveStep(workflow, status string, d time.Duration) {
	e.stepDuration.WithLabelValues(workflow, status).Observe(d.Seconds())
}

// ObservePass implements [telemetry.Metrics].
func (e *Exporter) ObservePass(workflow, outcome string, d time.Duration) {
	e.passDuration.WithLabelValues(workflow, outcome).Observe(d.Seconds())
}

// ObserveRunFinished implements [telemetry.Metrics].
func (e *Exporter) ObserveRunFinished(workflow, status string, d time.Duration) {
	e.runDuration.WithLabelValues(workflow, status).Observe(d.Seconds())
}

// ObserveDAGRunFinished implements dag.Metrics: give the Exporter to
// dag.Options.Metrics to count DAG runs by final DAG status in
// openworkflow_dag_runs_finished_total.
func (e *Exporter) ObserveDAGRunFinished(workflow, status string) {
	e.dagFinished.WithLabelValues(workflow, status).Inc()
}

// ObserveCommit implements [telemetry.Metrics].
func (e *Exporter) ObserveCommit(groups, writes, failed int, d time.Duration) {
	e.commitDur.Observe(d.Seconds())
	e.commitWrites.Observe(float64(writes))
	e.commitGroups.Observe(float64(groups))
	if failed > 0 {
		e.commitFailed.Add(float64(failed))
	}
}

// ObserveScheduleFailure implements [telemetry.Metrics].
func (e *Exporter) ObserveScheduleFailure(schedule string) {
	e.schedFailures.WithLabelValues(schedule).Inc()
}

// ObserveRequest implements [telemetry.Metrics]. Methods outside HTTP's
// standard ones are labelled "other", so that a client cannot grow the
// label's values; a request that matched no route has route "unmatched".
func (e *Exporter) ObserveRequest(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	e.requests.WithLabelValues(route, methodLabel(method), strconv.Itoa(status)).Observe(d.Seconds())
}

// methodLabel is method when it is one of HTTP's standard methods, else
// "other".
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}
