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
//	ErrLeaseLost            the run was canceled or moved to another worker
//	*RunFailedError         Result of a failed run; ErrRunCanceled of a canceled one
//
// # Workers
//
// A [Worker] claims runs for its free slots in one statement, executes each
// claimed run's pass, renews the lease with heartbeats, and commits the
// step results and run transitions of all its passes through a group
// commit: a step that returns quickly costs one write, shared with other
// runs' writes, and a pass waits for its commit before its next step runs.
// Cancellation reaches the step's context at once (PostgreSQL
// notifications, in-process events on SQLite) or at the next heartbeat.
// [Worker.Stop] lets passes finish within a grace period and hands the rest
// back. Set [WorkerOptions].OnlyRegistered when workers of other
// deployments or languages share the namespace, and TracerProvider (also
// in [ClientOptions]) for OpenTelemetry spans named as in OpenWorkflow.
//
// See the examples directory and the README for the CLI (ow) and the
// backends.
package openworkflow
