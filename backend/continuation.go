package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// RunContinuer is an optional capability of a [Backend]: continue-as-new,
// as Temporal's ContinueAsNewError. A run that is running and leased to a
// worker ends and a fresh run of the same workflow starts with a new
// input and an empty history, in one transaction, so that an endless
// workflow keeps a bounded history. Both built-in backends implement it.
//
// Statuses stay OpenWorkflow's five: the old run is stored completed,
// worker_id kept, with the output [ContinuedOutput] ({"continuedAsNew":
// {"runId": <successor>}}), which a TypeScript client reads as a finished
// run whose output names its successor. The lineage is stored both ways in
// the runs' context column (see [ContinuationOf]).
type RunContinuer interface {
	// ContinueWorkflowRun ends run p.WorkflowRunID, which must be running
	// and leased to p.WorkerID (the fence of every worker write), and
	// inserts its successor, in one transaction, returning the successor
	// as stored. On any error nothing is written. A run not running or
	// not leased to the worker (its lease was lost, it was canceled)
	// fails with [ErrNotOwner]; a missing run with [ErrRunNotFound]; bad
	// params ([ContinueWorkflowRunParams.Validate]) with
	// [ErrInvalidArgument].
	//
	// The successor is pending, due at p.AvailableAt (or now), of the
	// same namespace, workflow name, version (unless p.Version names
	// another), config, priority, concurrency key, parent link and
	// deadline (an absolute time: the deadline bounds the whole chain, as
	// Temporal's workflow execution timeout does); it has no idempotency
	// key (the first run keeps it). A successor of a workflow with stored
	// limits waits for admission, as any new run of it.
	//
	// In the same transaction: the run signals stored for the old run and
	// not yet received (SignalRun) move to the successor, keeping their
	// order; a parent's running workflow-kind attempt linked to the old
	// run is linked to the successor, so the parent waits for the end of
	// the chain (and wakes when it ends); a schedule's record of the old
	// run (ScheduleStore) names the successor, so the schedule's overlap
	// rule sees the chain running. Subscribers get EventRunFinished for
	// the old run and EventWorkAvailable.
	ContinueWorkflowRun(ctx context.Context, p ContinueWorkflowRunParams) (*WorkflowRun, error)
}

// ContinueWorkflowRunParams are the inputs of
// [RunContinuer.ContinueWorkflowRun].
type ContinueWorkflowRunParams struct {
	// WorkflowRunID and WorkerID name the run continued and the worker
	// holding its lease (the fence).
	WorkflowRunID string
	WorkerID      string
	// Input is the successor's JSON input (nil: JSON null).
	Input json.RawMessage
	// Version is the successor's workflow version; nil keeps the old
	// run's.
	Version *string
	// Context is the successor's trace context (the SDK's creating span,
	// as on a start), or nil; the backend adds the lineage and carries the
	// old run's schedule link (see [ContinuationContext]).
	Context json.RawMessage
	// AvailableAt is when the successor is first due; zero: now.
	AvailableAt time.Time
}

// Validate checks p as every backend does, with errors wrapping
// [ErrInvalidArgument] that name the field: ids of valid text, a
// storable input and context ([ValidateJSON]), a version of valid text.
func (p ContinueWorkflowRunParams) Validate() error {
	if p.WorkflowRunID == "" || p.WorkerID == "" {
		return fmt.Errorf("%w: continue-as-new needs the run's id and its worker's id", ErrInvalidArgument)
	}
	if err := checkText("workflow run id", p.WorkflowRunID); err != nil {
		return err
	}
	if err := checkText("worker id", p.WorkerID); err != nil {
		return err
	}
	if p.Version != nil {
		if err := checkText("version", *p.Version); err != nil {
			return err
		}
	}
	if err := checkJSONField("input", p.Input); err != nil {
		return err
	}
	return checkJSONField("context", p.Context)
}

// Continuation is what a successor's context records of its predecessor:
// the run it continues and its place in the chain (Generation 1 for the
// first successor of a run that was not itself a successor).
type Continuation struct {
	// RunID is the run this one continues (its predecessor).
	RunID string `json:"runId"`
	// Generation is this run's place in the chain: 1 for the first
	// successor, one more for each link after it.
	Generation int `json:"generation"`
}

// ContinuedOutput is the output stored on a run that continued as
// nextRunID: {"continuedAsNew": {"runId": nextRunID}}.
func ContinuedOutput(nextRunID string) json.RawMessage {
	out, _ := json.Marshal(map[string]any{"continuedAsNew": map[string]string{"runId": nextRunID}})
	return out
}

// ContinuationContext is the context column of the successor of run from
// (whose context is old): the old context's schedule link, the trace
// context of sdk (the SDK's, nil for none), and "continuedFrom" with the
// generation one above the old run's. A fork's and a predecessor's own
// lineage ("forkOf", "forks", "continuedTo") are not carried: they
// describe the old run. A context that is not a JSON object is dropped.
func ContinuationContext(old, sdk json.RawMessage, from string) json.RawMessage {
	m := map[string]json.RawMessage{}
	var o map[string]json.RawMessage
	if len(old) > 0 && json.Unmarshal(old, &o) == nil {
		if s, ok := o["schedule"]; ok {
			m["schedule"] = s
		}
	}
	var s map[string]json.RawMessage
	if len(sdk) > 0 && json.Unmarshal(sdk, &s) == nil {
		for k, v := range s {
			m[k] = v
		}
	}
	gen := 1
	if prev, ok := ContinuationOf(old); ok {
		gen = prev.Generation + 1
	}
	m["continuedFrom"], _ = json.Marshal(Continuation{RunID: from, Generation: gen})
	out, _ := json.Marshal(m)
	return out
}

// ContinuationOf reads what a successor's context records of the run it
// continues; ok is false for a run that continues none.
func ContinuationOf(runContext json.RawMessage) (c Continuation, ok bool) {
	if !strings.Contains(string(runContext), `"continuedFrom"`) {
		return c, false
	}
	var v struct {
		From *Continuation `json:"continuedFrom"`
	}
	if json.Unmarshal(runContext, &v) != nil || v.From == nil || v.From.RunID == "" {
		return c, false
	}
	return *v.From, true
}

// ContinuedTo reads the successor a continued run's context names
// ("continuedTo", written by the continuation's transaction); ok is false
// for a run that did not continue as new.
func ContinuedTo(runContext json.RawMessage) (runID string, ok bool) {
	if !strings.Contains(string(runContext), `"continuedTo"`) {
		return "", false
	}
	var v struct {
		To string `json:"continuedTo"`
	}
	if json.Unmarshal(runContext, &v) != nil || v.To == "" {
		return "", false
	}
	return v.To, true
}
