package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Limits of updates, as Temporal's history.maxInFlightUpdates and its
// payload limit, scaled to one run's table rows (control-and-events.md
// §4.4).
const (
	// MaxInFlightUpdates is how many updates of one run may wait admitted
	// (neither rejected nor settled) at a time; the next admission fails
	// with ErrTooManyUpdates.
	MaxInFlightUpdates = 10
	// MaxUpdatesPerRun is how many updates one run may ever admit,
	// rejected ones included (a rejection still stores its row).
	MaxUpdatesPerRun = 2000
	// MaxUpdateInputBytes is the largest update input accepted, in bytes
	// of its JSON text (1 MiB).
	MaxUpdateInputBytes = 1 << 20
)

// ErrTooManyUpdates: the run has MaxInFlightUpdates admitted updates
// waiting, or admitted MaxUpdatesPerRun in all; retry once some settle.
var ErrTooManyUpdates = errors.New("too many updates for this workflow run")

// ErrUpdateNotFound: the run has no update with that id.
var ErrUpdateNotFound = errors.New("workflow run update not found")

// RunUpdateState is the state of one update of a run (UpdateStore), as
// Temporal's update lifecycle but durable from admission: admitted (stored,
// waiting for the run's next wait point), then rejected (the validator
// refused it, or nobody handles its name, or the run finished first),
// completed (the handler returned a result) or failed (the handler
// returned an error).
type RunUpdateState string

// Update states.
const (
	UpdateAdmitted  RunUpdateState = "admitted"
	UpdateRejected  RunUpdateState = "rejected"
	UpdateCompleted RunUpdateState = "completed"
	UpdateFailed    RunUpdateState = "failed"
)

// Settled reports whether s is final (rejected, completed or failed).
func (s RunUpdateState) Settled() bool {
	return s == UpdateRejected || s == UpdateCompleted || s == UpdateFailed
}

// RunUpdate is one update of a run, as stored in go_run_updates.
type RunUpdate struct {
	// NamespaceID and WorkflowRunID name the run the update is for.
	NamespaceID   string `json:"namespaceId"`
	WorkflowRunID string `json:"workflowRunId"`
	// ID is the update id: the caller's idempotency key within the run.
	ID string `json:"id"`
	// Name is the handler's name the update is for.
	Name string `json:"name"`
	// Seq orders the run's updates in admission order (1, 2, …).
	Seq int64 `json:"seq"`
	// Input is the update's JSON input as sent (JSON null when none).
	Input json.RawMessage `json:"input"`
	// State is admitted until a worker settles it.
	State RunUpdateState `json:"state"`
	// Result is the handler's JSON result (completed only).
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the stored error of a rejected or failed update
	// ({"message": …}).
	Error json.RawMessage `json:"error,omitempty"`
	// CreatedAt is when it was admitted.
	CreatedAt time.Time `json:"createdAt"`
	// SettledAt is when it was rejected, completed or failed.
	SettledAt *time.Time `json:"settledAt,omitempty"`
	// Duplicate is true on the answer of an admission whose id the run
	// already had: nothing was stored, and the row is the earlier one.
	Duplicate bool `json:"-"`
}

// AdmitRunUpdateParams are UpdateStore.AdmitRunUpdate's.
type AdmitRunUpdateParams struct {
	// WorkflowRunID is the run the update is for (required).
	WorkflowRunID string
	// UpdateID is the update's id, unique within the run (required).
	UpdateID string
	// Name is the handler's name (required).
	Name string
	// Input is the JSON input; nil stores JSON null.
	Input json.RawMessage
}

// Validate checks the params: ids and name present and valid text, input
// valid JSON of at most MaxUpdateInputBytes.
func (p AdmitRunUpdateParams) Validate() error {
	for _, f := range []struct{ what, v string }{{"workflow run id", p.WorkflowRunID}, {"update id", p.UpdateID}, {"update name", p.Name}} {
		if f.v == "" {
			return fmt.Errorf("%w: empty %s", ErrInvalidArgument, f.what)
		}
		if !ValidText(f.v) {
			return fmt.Errorf("%w: %s holds U+0000 or invalid UTF-8", ErrInvalidArgument, f.what)
		}
	}
	if len(p.Input) > MaxUpdateInputBytes {
		return fmt.Errorf("%w: update input is %d bytes, more than the %d allowed", ErrInvalidArgument, len(p.Input), MaxUpdateInputBytes)
	}
	if len(p.Input) > 0 {
		if err := ValidateJSON(p.Input); err != nil {
			return fmt.Errorf("update input: %w", err)
		}
	}
	return nil
}

// SettleRunUpdateParams are UpdateStore.SettleRunUpdate's.
type SettleRunUpdateParams struct {
	// WorkflowRunID and UpdateID name the update.
	WorkflowRunID string
	// WorkerID fences the write: the run must be running under it.
	WorkerID string
	UpdateID string
	// State is the final state: rejected, completed or failed.
	State RunUpdateState
	// Result is a completed update's JSON result; Error a rejected or
	// failed one's stored error.
	Result, Error json.RawMessage
}

// UpdateStore is implemented by backends that store updates of runs
// (go migration 15, go_run_updates): a client's synchronous request into
// a running workflow, as Temporal's workflow update, but admitted
// durably. Both built-in backends implement it.
type UpdateStore interface {
	// AdmitRunUpdate stores an admitted update for a run and makes the
	// run claimable now if it is parked (keeping the wake-up times of its
	// waits, which live in its step attempts), announcing work. An update
	// id the run already has returns that row with Duplicate set, in
	// whatever state (even once the run finished), and wakes the run
	// again if the row is still admitted. Errors: ErrRunNotFound;
	// ErrRunTerminal for a new id on a finished run; ErrTooManyUpdates at
	// the limits; ErrInvalidArgument for bad params.
	AdmitRunUpdate(ctx context.Context, p AdmitRunUpdateParams) (*RunUpdate, error)
	// GetRunUpdate returns one update of a run, or ErrUpdateNotFound.
	GetRunUpdate(ctx context.Context, workflowRunID, updateID string) (*RunUpdate, error)
	// ListRunUpdates returns the run's updates in admission order; with
	// onlyAdmitted, those still admitted.
	ListRunUpdates(ctx context.Context, workflowRunID string, onlyAdmitted bool) ([]RunUpdate, error)
	// SettleRunUpdate moves an admitted update to its final state, fenced
	// on the run's lease (ErrNotOwner), and announces it
	// (EventUpdateSettled). An update already settled is left as it is
	// (no error): the first settlement wins.
	SettleRunUpdate(ctx context.Context, p SettleRunUpdateParams) error
}
