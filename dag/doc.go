// Package dag runs DAG workflows with saga compensation, with the
// semantics of @pgshift/workflow: a workflow is a set of named steps,
// each executed by a handler registered in Go and depending on other
// steps; independent steps run in parallel; a failed step is retried with
// backoff; and when a step fails for good, the steps done so far are
// compensated in reverse order.
//
// A DAG workflow is executed by an interpreter that is itself an ordinary
// workflow on the core (package openworkflow, the only one this package
// imports), so its runs are durable, park while they wait, can be
// canceled, and show in the CLI and the API like any run.
//
// # Getting started
//
//	eng := dag.New(ow.NewClient(b), dag.Options{Handlers: map[string]dag.Handler{
//		"reserve": reserve, "release": release, "charge": charge, "refund": refund,
//	}})
//	_, err := eng.Define(ctx, dag.Definition{Name: "order", Steps: []dag.Step{
//		{Name: "reserve-stock", Handler: "reserve", Compensate: "release"},
//		{Name: "charge-card", Handler: "charge", Compensate: "refund", DependsOn: []string{"reserve-stock"}},
//	}})
//	w := ow.NewWorker(b, ow.WorkerOptions{})
//	w.Register(eng.Workflow("order"))
//	w.Start(ctx)
//	h, err := eng.Start(ctx, "order", map[string]any{"orderId": 42})
//	st, err := eng.Status(ctx, h.ID) // per-step status, attempts, outputs, errors
//
// Definitions can also come from YAML or JSON files ([Parse]) that name
// handlers registered in Go. [Engine.Define] validates a definition
// (unknown dependency, unknown handler, cycle, duplicate step, …) and
// stores it in the backend, so every worker and client of the namespace
// sees it; each run keeps a copy of the definition it started with.
//
// # Execution
//
// Root steps start at once; a step starts as soon as all its dependencies
// completed; ready steps run in parallel, each as an ow.Go branch of the
// interpreter's pass (a step that is all the run can do at that moment, as
// in a chain, runs inline with ow.Run). A handler receives a [StepContext]: the run id, its
// step name, the run input, its attempt number (1-based) and the outputs
// of the completed steps. A failed attempt is retried after
// [Backoff](k) = min(2^(k−1) s, 30 s), Retries times (default 3: up to 4
// executions); the delay is enforced durably: the step does not run
// again before it, other steps keep running meanwhile, and when only
// backoffs remain the run parks on a durable sleep, holding no worker
// slot. An error wrapped with ow.NonRetryable is not retried.
//
// Every attempt is its own durable key ("charge-card", "charge-card#2",
// …; see keys.go): the interpreter looks each key up in the run's history
// (ow.LookupStep) before it executes anything, so no completed step and
// no failed attempt is ever executed again, and what a pass does depends
// only on what was recorded. Handlers run at least once per attempt and
// must be idempotent.
//
// # Compensation
//
// When a step fails for good, the interpreter starts nothing more, lets
// the attempts in flight end, and runs, one after another, the compensate
// handlers of the steps that completed or failed (the failed step's own
// included, as in pgshift), in reverse order of completion as the run's
// history records it (pgshift's "reverse execution order"; steps that
// ended in the same millisecond in reverse topological order, the later
// declared first), so a step is undone before the steps it depends on.
// A compensation is retried like a step; one that
// fails for good is recorded on its step and the chain goes on. A crash
// during compensation resumes without running again the compensations
// that completed. Before its first compensation runs, the interpreter
// marks the run with ow.MarkNotRetryable, so ow.Client.RetryRun (and the
// API, CLI and dashboard behind it) refuses to retry it forward with
// ow.ErrRunNotRetryable: its completed steps were undone. A fork
// (ow.Client.ForkRun) is a new run and is allowed.
//
// # Statuses
//
// The stored run status stays one of OpenWorkflow's, so TypeScript
// workers and clients sharing the database are not disturbed: a run
// compensating is stored running, and a compensated run is stored failed
// with the error {"name":"CompensatedError","code":"COMPENSATED"}, or
// {"name":"CompensationFailedError","code":"COMPENSATION_FAILED"} when a
// compensation failed for good (DAG status compensation_failed: the steps
// were not all undone); a run with nothing to compensate fails with code
// STEP_FAILED. The DAG statuses — compensating, compensated and
// compensation_failed among them — are derived by
// [Engine.Status] and [StatusOf] from the stored run and step attempts.
//
// # Differences from pgshift
//
//   - Backoff delays are enforced (pgshift stores them and ignores them).
//   - A failing compensation is recorded, retried, and the chain goes on
//     (pgshift's recording statement fails and leaves the run stuck);
//     the run then ends compensation_failed, not compensated.
//   - Compensations run in reverse order of completion, as pgshift's
//     documentation says (its code uses reverse topological order).
//   - A run that began to compensate cannot be retried forward.
//   - The failed step reads failed even when its own compensation ran
//     (pgshift marks it compensated); only completed steps read
//     compensating, compensated or compensation_failed.
//   - A run with nothing to compensate ends failed, not compensated.
//   - A crash during a step re-executes the same attempt: the crashed
//     execution does not use up a retry (the core's leases stand in for
//     pgshift's 30 s lock reaper).
//   - Steps that never started in a finished run read skipped.
//   - Cancel (ow.Client.CancelRun) stops a run without compensating it.
package dag
