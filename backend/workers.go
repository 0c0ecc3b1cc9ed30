package backend

import (
	"context"
	"fmt"
	"time"
)

// WorkerState is what a worker of the registry ([WorkerRegistry]) is
// doing, as Temporal's worker heartbeat status (RUNNING, SHUTTING_DOWN,
// SHUTDOWN) plus "gone".
type WorkerState string

const (
	// WorkerRunning: the worker claims and executes runs.
	WorkerRunning WorkerState = "running"
	// WorkerDraining: Stop was called; the worker claims nothing more and
	// lets its executing passes finish.
	WorkerDraining WorkerState = "draining"
	// WorkerStopped: the worker stopped cleanly (it said so).
	WorkerStopped WorkerState = "stopped"
	// WorkerGone is never stored: a running or draining worker whose last
	// heartbeat is older than [WorkerMissedHeartbeats] of its heartbeat
	// intervals is read as gone (its process died or lost the database).
	WorkerGone WorkerState = "gone"
)

// WorkerMissedHeartbeats is how many heartbeat intervals a running or
// draining worker may miss before it is read as [WorkerGone] (as
// Hatchet's and the recommended semantics of
// docs/reference control-and-events §6.4: stale after 3 missed beats).
const WorkerMissedHeartbeats = 3

// WorkerForgetAfter is how long after its last heartbeat a worker of
// any state is forgotten: no longer listed, and deleted by the next
// [WorkerRegistry.PutWorker] of the namespace (24 h; Temporal's registry
// evicts after 5 min, but a day keeps yesterday's crashed worker visible
// to whoever looks in the morning).
const WorkerForgetAfter = 24 * time.Hour

// MaxRegisteredWorkflows bounds how many workflows one worker record
// lists (a worker registering more is refused by [WorkerRecord.Validate]).
const MaxRegisteredWorkflows = 10_000

// WorkerRegistry is an optional capability of a [Backend]: the live
// registry of the namespace's workers (Go workers only — TypeScript
// OpenWorkflow workers do not write it). It is advisory: the claim never
// reads it, and a worker missing from it still claims and executes. Both
// built-in backends implement it in a table of this SDK's own migration
// line (go migration 17, "go_workers"). Discover it with a type assertion.
type WorkerRegistry interface {
	// PutWorker inserts or replaces the record of worker p.ID of the
	// backend's namespace, setting its last heartbeat to the backend's
	// now (and its start to now when it is new and p.StartedAt is zero),
	// and deletes the namespace's records whose last heartbeat is older
	// than [WorkerForgetAfter]. One small statement: a worker calls it at
	// start, on its heartbeat timer and when it stops. An invalid record
	// fails with an error wrapping [ErrInvalidArgument] and writes
	// nothing.
	PutWorker(ctx context.Context, w WorkerRecord) error
	// ListWorkers lists the namespace's workers heard from within
	// [WorkerForgetAfter], by id, with their state as read now (a running
	// or draining worker silent for [WorkerMissedHeartbeats] intervals is
	// [WorkerGone]).
	ListWorkers(ctx context.Context) ([]WorkerRecord, error)
	// CountActiveRunsByWorkflow counts the namespace's pending and running
	// runs per workflow name and version (terminal runs are not counted:
	// counting them would read every run; GET /v1/runs/counts has the
	// namespace's totals). Ordered by name, then version (unversioned
	// first).
	CountActiveRunsByWorkflow(ctx context.Context) ([]WorkflowRunCount, error)
}

// WorkerRecord is one worker's record in the [WorkerRegistry].
type WorkerRecord struct {
	// NamespaceID is the worker's namespace (set by the backend).
	NamespaceID string `json:"namespaceId"`
	// ID is the worker's id (WorkerOptions.ID), the prefix of the slot ids
	// it writes to runs ("<ID>/<slot>"); required, at most
	// [MaxDefinitionNameLength] bytes.
	ID string `json:"id"`
	// Host is the host name, PID the process id.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// SDK names the SDK ("openworkflow-go"), SDKVersion its module version
	// from the build information ("devel" when not built as a dependency).
	SDK        string `json:"sdk"`
	SDKVersion string `json:"sdkVersion"`
	// State is running, draining or stopped as written; gone is derived
	// when read.
	State WorkerState `json:"state"`
	// Concurrency is the worker's slots, InUse how many of them executed a
	// run at its last heartbeat (0 ≤ InUse ≤ Concurrency).
	Concurrency int `json:"concurrency"`
	InUse       int `json:"inUse"`
	// HeartbeatInterval is how often the worker writes its record; it
	// must be positive. The record is read as gone after
	// [WorkerMissedHeartbeats] of them.
	HeartbeatInterval time.Duration `json:"heartbeatInterval"`
	// StartedAt is when the worker started (zero on PutWorker: the
	// backend's now on the first put, kept after), LastHeartbeatAt its
	// latest put (set by the backend). UTC, milliseconds.
	StartedAt       time.Time `json:"startedAt"`
	LastHeartbeatAt time.Time `json:"lastHeartbeatAt"`
	// Workflows are the workflows registered on the worker, by name then
	// version.
	Workflows []RegisteredWorkflow `json:"workflows"`
}

// RegisteredWorkflow is a workflow (name and version) registered on a
// worker, with the example input its spec gives (JSON text, "" for none).
type RegisteredWorkflow struct {
	Name         string `json:"name"`
	Version      string `json:"version,omitempty"`
	InputExample string `json:"inputExample,omitempty"`
}

// WorkflowRunCount is the number of active runs of one workflow name and
// version ("" for unversioned runs).
type WorkflowRunCount struct {
	Name    string
	Version string
	Counts  RunCounts
}

// Validate checks w as every WorkerRegistry does before writing: an id,
// host, SDK and workflow names that are valid text of at most
// [MaxDefinitionNameLength] bytes, a stored state (running, draining or
// stopped), a positive heartbeat interval, 0 ≤ InUse ≤ Concurrency, and
// example inputs that are JSON. The error wraps [ErrInvalidArgument] and
// names what is wrong.
func (w WorkerRecord) Validate() error {
	if w.ID == "" {
		return fmt.Errorf("%w: empty worker id", ErrInvalidArgument)
	}
	texts := []struct{ what, v string }{{"worker id", w.ID}, {"worker host", w.Host}, {"worker sdk", w.SDK}, {"worker sdk version", w.SDKVersion}}
	for _, f := range texts {
		if len(f.v) > MaxDefinitionNameLength {
			return fmt.Errorf("%w: %s %.40q… is longer than %d bytes", ErrInvalidArgument, f.what, f.v, MaxDefinitionNameLength)
		}
		if err := checkText(f.what, f.v); err != nil {
			return err
		}
	}
	switch w.State {
	case WorkerRunning, WorkerDraining, WorkerStopped:
	default:
		return fmt.Errorf("%w: worker %q: state %q is not running, draining or stopped", ErrInvalidArgument, w.ID, w.State)
	}
	if w.HeartbeatInterval <= 0 {
		return fmt.Errorf("%w: worker %q: heartbeat interval %v is not positive", ErrInvalidArgument, w.ID, w.HeartbeatInterval)
	}
	if w.Concurrency < 0 || w.InUse < 0 || w.InUse > w.Concurrency {
		return fmt.Errorf("%w: worker %q: %d slots in use of %d", ErrInvalidArgument, w.ID, w.InUse, w.Concurrency)
	}
	if len(w.Workflows) > MaxRegisteredWorkflows {
		return fmt.Errorf("%w: worker %q registers %d workflows, more than %d", ErrInvalidArgument, w.ID, len(w.Workflows), MaxRegisteredWorkflows)
	}
	for _, r := range w.Workflows {
		if r.Name == "" || len(r.Name) > MaxDefinitionNameLength || !ValidText(r.Name) || !ValidText(r.Version) {
			return fmt.Errorf("%w: worker %q: registered workflow %.40q is not a valid name of at most %d bytes", ErrInvalidArgument, w.ID, r.Name, MaxDefinitionNameLength)
		}
		if r.InputExample != "" {
			if err := checkJSONField(fmt.Sprintf("worker %q: input example of workflow %q", w.ID, r.Name), []byte(r.InputExample)); err != nil {
				return err
			}
		}
	}
	return nil
}

// StateAt returns the state of w read at now: [WorkerGone] for a running
// or draining worker whose last heartbeat is more than
// [WorkerMissedHeartbeats] heartbeat intervals before now, else its
// stored state.
func (w WorkerRecord) StateAt(now time.Time) WorkerState {
	if w.State == WorkerStopped {
		return w.State
	}
	if now.Sub(w.LastHeartbeatAt) > WorkerMissedHeartbeats*w.HeartbeatInterval {
		return WorkerGone
	}
	return w.State
}

// Live reports whether w, read at its State (see [WorkerRecord.StateAt]),
// still claims runs: running.
func (w WorkerRecord) Live() bool { return w.State == WorkerRunning }
