// Package openflow runs OpenFlow flows — the open JSON/YAML standard of
// Windmill's flows — durably, on the OpenWorkflow core.
//
// The interpreter is an ordinary workflow ([Engine.Workflow], named
// "openflow"): every module execution is a durable step, so a run that
// crashes mid-flow resumes on any worker without re-running the modules
// that finished, retries and sleeps are durable waits, and a suspended
// flow parks its run until it is resumed. The package imports only the
// SDK (the root package): it is a client of the core like any user code.
// Semantics are Windmill's, as read from its code and tests
// (shared/reference/openflow.md); docs/openflow.md lists what is
// supported and the decisions taken where Windmill is ambiguous.
//
// # Getting started
//
//	f, err := openflow.ParseFile("etl.flow.yaml") // JSON or YAML, validated
//	if err != nil {
//		return err // a *ValidationError: each problem with its JSON path
//	}
//	e := openflow.New(openflow.Options{Dirs: []string{"flows"}})
//	w := ow.NewWorker(b, ow.WorkerOptions{})
//	if err := e.Register(w, true); err != nil { // "openflow" + the flows of Dirs
//		return err
//	}
//	w.Start(ctx)
//	defer w.Stop(ctx)
//
//	c := ow.NewClient(b)
//	h, err := e.Start(ctx, c, f, json.RawMessage(`{"x": 5}`), "etl.flow.yaml")
//	res, err := openflow.Wait(ctx, c, h.ID) // res.Success, res.Result
//
// The flows of Options.Dirs are also workflows named by their path
// ([Engine.DirWorkflows]): start "f/team/etl" with the flow's args as the
// run's input, from any client or SDK. The ow command line wraps all of
// this: ow flow validate, ow flow run, ow flow resume and ow worker.
//
// # Modules and steps
//
// Each attempt of a script, rawscript or identity module is one step
// whose output records its status, result (failures included, so a
// replay never runs a finished script again), args, log (the script's
// stdout and stderr) and process time. Loops, branches and flows by path
// record what they evaluate before their body in a "<id>@pre" step
// (skip_if, the iterator, the chosen branch) and after it in "<id>@post"
// (stop_after_all_iters_if, a computed sleep); bodies' steps are keyed by
// path: "loop[2]/step", "branch/0/step", "sub/step"; retries are
// "<id>#1", "<id>#2". A run records at most [ow.StepLimit] steps: a loop
// whose iterations would take more runs them in chunks, child runs of the
// [LoopWorkflowName] workflow that record the iterations' steps under the
// same keys ("<id>@chunk[250-749]" is the loop run's step of one chunk).
//
// Expressions are JavaScript evaluated with goja in a fresh runtime each
// time, with Windmill's scope (flow_input, results.<id>, previous_result,
// resume, resumes, approvers, flow_env, error, …) and a time limit
// ([Options].ExprTimeout). Scripts run as subprocesses: bash, python3,
// deno, bun and go ([Languages]), each with Windmill's calling convention,
// in a working directory of their own.
//
// # Errors
//
//	*ValidationError      an invalid flow, or args that break its schema: nothing ran
//	*RunnerMissingError   a script language's runner is not installed (what to install)
//	*ExprError            an expression threw, timed out or did not give JSON
//	ErrNotSuspended       Resume: no module of the run waits for a resume event
//
// A module that fails does not return a Go error: its result is the
// {"error": {name, message, …}} object Windmill gives, and the flow
// follows Windmill's failure path (retry, continue_on_error, failure
// module). A failed flow fails its run with the error of its result;
// [Wait] returns the whole result.
//
// # Suspend and resume
//
// A module with suspend.required_events waits, after it succeeds, for
// that many resume events ([Resume], ow flow resume) within its timeout.
// The module creates a hook (ow.CreateHook) and receives the events from
// it, so an event is kept if it comes before the wait, and the hook's
// token ([SuspendedModule].Token) resumes the module from the HTTP API
// (POST /v1/hooks/{token}) too.
package openflow
