// Package openworkflow makes ordinary Go functions durable workflows.
//
// Each step of a workflow is checkpointed in a backend (PostgreSQL in
// production, an embedded SQLite file by default), so a run survives
// crashes, restarts and deploys. There is no orchestrator server: stateless
// workers claim runs from the backend under a lease kept alive by
// heartbeats and replay the workflow from the top, returning the recorded
// results of completed steps. Durable sleeps and waits park the run and
// free the worker's slot. The storage semantics and PostgreSQL schema are
// those of the TypeScript OpenWorkflow, so both SDKs can share a database.
//
// # Getting started
//
//	b, err := sqlite.Open(ctx, ".openworkflow/openworkflow.db", sqlite.Options{})
//
//	greet := ow.Define(ow.Spec{Name: "greet"}, func(ctx ow.Context, name string) (string, error) {
//		user, err := ow.Run(ctx, "load-user", func(ctx context.Context) (User, error) {
//			return loadUser(ctx, name)
//		})
//		if err != nil {
//			return "", err
//		}
//		if err := ow.Sleep(ctx, "cool-off", time.Hour); err != nil {
//			return "", err // ErrSuspended: the run parks; no goroutine waits
//		}
//		return ow.Run(ctx, "send", func(ctx context.Context) (string, error) {
//			return send(ctx, user)
//		})
//	})
//
//	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 10})
//	w.Register(greet)
//	w.Start(ctx)
//	defer w.Stop(ctx)
//
//	h, err := greet.Start(ctx, ow.NewClient(b), "ada")
//	out, err := h.Result(ctx)
//
// # Rules of replay
//
// The workflow function runs again from the top on every pass (after a
// sleep, a wait, a retry or a crash). Code outside steps must therefore be
// deterministic: do I/O, read clocks and draw random numbers inside steps.
// Steps are identified by their durable key, the name given in call order
// ("fetch", then "fetch:1", "fetch:2" on repeats). Return every error a
// step function returns, [ErrSuspended] included.
//
// # Errors
//
//	ErrSuspended            a wait point parked the run; return it
//	*StepError              a step attempt failed; returning it retries the step by its policy
//	NonRetryable(err)       fail the step (and the run) without retry
//	*PanicError             a panic in workflow or step code, recorded with its stack
//	*StepLimitExceededError the run would exceed 1000 step attempts
//	ErrLeaseLost            the run was canceled, moved to another worker, passed its deadline,
//	                        or the backend failed: the pass ends and commits nothing more
//	*RunFailedError         Result of a failed run; ErrRunCanceled of a canceled one
//	ContinueAsNew(input)    end the run and start a fresh one of the workflow with input (return it)
//	*RunContinuedError      Result with DisableFollowingRuns of a run that continued as new
//	ErrRunNotFound          GetRun, CancelRun, Result: no such run in the namespace
//	ErrRunTerminal          CancelRun of a completed or failed run
//	ErrInvalidArgument      a malformed request, or a value no backend can store
//	ErrScheduleNotFound     GetSchedule, PauseSchedule, …: no such schedule in the namespace
//	*backend.ScheduleFieldError  PutSchedule, RegisterSchedules: a bad field, named (cron, timeZone, …)
//
// A value a step returns must be storable by every backend (see
// backend.ValidateJSON): JSON that is valid UTF-8, without lone surrogate
// escapes, numbers within PostgreSQL's numeric range, nested at most 1,000
// levels. Any other value fails its step at once, without retry, with an
// error naming the step and what was wrong. An error value whose methods
// panic (a typed nil pointer, say) fails its run, never the worker.
//
// # Workers
//
// A [Worker] claims runs for its free slots in one statement, executes each
// claimed run's pass, renews the lease with heartbeats, and commits the
// step results and run transitions of all its passes through a group
// commit: a step that returns quickly costs one write, shared with other
// runs' writes, and a pass waits for its commit before its next step runs.
// Cancellation reaches the step's context at once (PostgreSQL
// notifications, in-process events on SQLite) or at the next heartbeat; a
// run's deadline is its pass's context deadline, and the run fails at it
// whatever its step does. A pause reaches the executing pass the same
// way: its step in progress finishes, and no further step starts. When
// the backend fails mid-pass (a database restarting), the worker hands
// the run back as soon as the backend answers again rather than when its
// lease expires. [Worker.Stop] lets
// passes finish within a grace period and hands the rest back.
//
// A step function, and the workflow function between steps, must honour
// its context: return soon after ctx.Done() is closed, which happens when
// the run is canceled, fails at its deadline or is lost, or the worker
// stops. Go cannot stop a goroutine that does not. The worker waits
// [WorkerOptions].AbandonStepAfter (1 s) for it, then abandons it: the run
// is settled anyway (failed at its deadline, handed back at shutdown),
// the slot runs other work, and nothing the code does after that is
// recorded — but its goroutine, and whatever it holds, lives on until it
// returns. Each abandonment is logged as a warning naming the run and its
// steps, and counted ([Worker.AbandonedSteps], the metrics' gauge
// openworkflow_worker_abandoned_steps); at MaxAbandonedSteps of them the
// worker claims nothing, logs an error and fails its claims with
// [ErrAbandonedSteps], until one returns. Fix such code (pass ctx to the
// calls that block, select on ctx.Done()); restart the process to be rid
// of goroutines already abandoned. A worker claims only runs of the
// workflows registered on it, leaving the others to workers of other
// deployments or languages sharing the namespace ([WorkerOptions].ClaimUnregistered
// restores OpenWorkflow's rule of claiming every run). Set TracerProvider (or the client's
// [WithTracerProvider]) for OpenTelemetry spans named as in OpenWorkflow
// (package telemetry has the names).
//
// # Operating runs
//
// Besides starting, listing, canceling and signaling runs, a [Client]
// starts a run inside a transaction of yours ([Workflow.StartTx]: the run
// exists if and only if that transaction commits, and idle workers wake
// when it does), retries a failed run from its failed step
// ([Client.RetryRun]), forks a run from a named step, reusing the results
// of the steps before it ([Client.ForkRun]), follows a run that continued
// as new ([ContinueAsNew]) to its chain's last run in [RunHandle.Result]
// and [Client.SignalRun], and deletes the finished runs
// a [Retention] no longer keeps ([Client.PruneRuns]; a [Pruner] does it
// periodically, as `ow server` does with the retention of
// openworkflow.yaml).
//
// # Schedules
//
// A schedule starts a run of a workflow on a cron expression read in a
// time zone ([ScheduleSpec], [Client.PutSchedule], or
// [Worker.RegisterSchedules] to declare it with a worker's workflows).
// Every started worker fires the namespace's due ticks, and each tick
// starts exactly one run however many workers do; a run knows the tick it
// is for from RunInfo().Schedule. Overlap policies, the catch-up window
// after downtime, pause, resume and trigger are in docs/schedules.md.
//
// # Limits and priorities
//
// A workflow's [Spec].Limits bound its runs across every worker process:
// at most Concurrency at once in all, ConcurrencyPerKey per concurrency
// key ([WithConcurrencyKey], e.g. a customer id), PerWorker in one worker,
// and RateLimit starts per RatePeriod per key. Workers store them when
// they start and admit runs within them in their claims; a run waiting for
// admission holds no slot and is unclaimable by any other claim (the
// TypeScript SDK's included), and an admitted run holds its slot until it
// finishes, sleeps and waits included ([Limits] has the details).
// [WithPriority] orders the claims of pending runs, higher first, FIFO
// within a priority.
//
//	var sync = ow.Define(ow.Spec{Name: "sync-account", Limits: ow.Limits{ConcurrencyPerKey: 5}}, syncAccount)
//	sync.Start(ctx, client, id, ow.WithConcurrencyKey(id), ow.WithPriority(10))
//
// # Options
//
// A long-lived value is configured by an options struct whose zero value
// is the default ([WorkerOptions]); a call, and the client, by functional
// options ([StartOption], [StepOption], [WaitOption], [ClientOption]).
//
// # Testing
//
// Package owtest runs workflows in a test without waiting on real time: an
// owtest.Env is a worker, a client and an embedded SQLite database on a
// fake clock, and the test drives the worker pass by pass:
//
//	env := owtest.New(t, ow.WorkerOptions{}, greet)
//	h, _ := greet.Start(ctx, env.Client, "ada")
//	env.Drain()                  // until the run parks on its sleep
//	env.Clock.Advance(time.Hour) // the sleep is over
//	env.Drain()
//	out, err := h.Result(ctx)
//
// Step functions run for real; replace what they call (an HTTP client, a
// database) as in any Go test. A run that must survive a crash is tested
// by running its passes in a second Env on the same database file, or by
// killing a real worker process as the SDK's own crash tests do.
//
// See the examples directory and the README for the CLI (ow) and the
// backends.
package openworkflow
