package backend

import (
	"encoding/json"
	"fmt"
	"time"
)

// WriteKind names one fenced worker write (see [Write]): every write a
// worker makes is one of these, applied by [Worker.ApplyWrites]. The rows
// each kind writes are those of OpenWorkflow's corresponding backend
// method (named beside it), so the TypeScript SDK reads them alike.
type WriteKind int

// Write kinds. Every kind is fenced: it applies only while the run is
// running and leased to Write.WorkerID.
const (
	// WriteInsertStep inserts Write.Step, with the id, name, kind, status,
	// context, output and error the caller chose (createStepAttempt). A
	// fast step is one insert of an attempt already completed (or failed);
	// a slow one is inserted running and finished later by
	// WriteFinishStep. A completed attempt's nil output is stored as JSON
	// null; started_at is Step.StartedAt or now, finished_at
	// Step.FinishedAt, or now for a completed or failed attempt.
	WriteInsertStep WriteKind = iota + 1
	// WriteFinishStep sets the running attempt Write.Step.ID to
	// Write.Step.Status (completed or failed) with its output or error
	// (completeStepAttempt, failStepAttempt). Finishing an attempt already
	// finished the same way keeps its first output or error.
	WriteFinishStep
	// WriteLinkChild links the running workflow-kind attempt Write.Step.ID
	// to the child run Write.Step.ChildWorkflowRunNamespaceID and
	// ChildWorkflowRunID (setStepAttemptChildWorkflowRun).
	WriteLinkChild
	// WriteCompleteRun completes the run with Write.Output, worker_id kept
	// (completeWorkflowRun); a parked parent waiting on it is woken. A run
	// whose deadline has passed cannot complete: the same write fails it
	// instead, with [DeadlineExceededError], as the claim's deadline sweep
	// would.
	WriteCompleteRun
	// WriteParkRun parks the run until Write.AvailableAt: status running,
	// worker_id NULL (sleepWorkflowRun). When what the run waits for
	// already happened (a running workflow step whose child is terminal,
	// a running signal-wait with a delivery, a running hook-wait whose
	// hook has a payload numbered above its afterSeq: see [HookStore]),
	// the run is made due now. A
	// worker also hands a run back this way, parked due now.
	WriteParkRun
	// WriteRescheduleRun sets the run pending at Write.AvailableAt with
	// Write.Error, worker_id and started_at cleared
	// (rescheduleWorkflowRunAfterFailedStepAttempt, failWorkflowRun's
	// retry); the caller has decided on a retry.
	WriteRescheduleRun
	// WriteFailRun fails the run terminally with Write.Error, worker_id
	// and started_at cleared (failWorkflowRun); a parked parent waiting on
	// it is woken. The caller has decided the failure is terminal.
	WriteFailRun
)

// String returns the kind's name, for messages.
func (k WriteKind) String() string {
	switch k {
	case WriteInsertStep:
		return "insert step"
	case WriteFinishStep:
		return "finish step"
	case WriteLinkChild:
		return "link child run"
	case WriteCompleteRun:
		return "complete run"
	case WriteParkRun:
		return "park run"
	case WriteRescheduleRun:
		return "reschedule run"
	case WriteFailRun:
		return "fail run"
	}
	return "unknown write"
}

// Write is one fenced worker write applied by [Worker.ApplyWrites].
type Write struct {
	// Kind says what the write does; it selects the fields used.
	Kind WriteKind
	// WorkflowRunID and WorkerID name the run and its owner (the fence).
	WorkflowRunID string
	WorkerID      string
	// Step is the attempt written by WriteInsertStep (every field but the
	// namespace, run id and timestamps, which the backend sets; StartedAt
	// and FinishedAt, if set, are kept), WriteFinishStep (ID, Status,
	// Output, Error) and WriteLinkChild (ID and the child's namespace and
	// id).
	Step *StepAttempt
	// Output is the run's JSON output for WriteCompleteRun (nil: JSON null).
	Output json.RawMessage
	// Error is the serialized error for WriteRescheduleRun and WriteFailRun.
	Error json.RawMessage
	// AvailableAt is the wake-up (WriteParkRun) or retry time
	// (WriteRescheduleRun).
	AvailableAt time.Time
	// OnlySleeps, on a WriteParkRun, says that every running attempt of
	// the run is a durable sleep (no child run, signal, hook or event is
	// waited for), so nothing but time can make it due: the backend may
	// then skip the reconciliation of its waits that a park otherwise
	// gets (see WriteParkRun), which could find nothing. The PostgreSQL
	// backend does (a statement and a round trip after the commit, per
	// park); SQLite's park reconciles within its one statement and
	// ignores it. False, the default, always reconciles.
	OnlySleeps bool
}

// ValidateGroup checks the shape [Worker.ApplyWrites] requires of one
// group: not empty, every write of the same run and worker, a known kind,
// a run transition only last, and a step attempt where the kind needs
// one. It returns an error wrapping [ErrInvalidArgument] naming the first
// bad write.
func ValidateGroup(g []Write) error {
	if len(g) == 0 {
		return fmt.Errorf("%w: empty write group", ErrInvalidArgument)
	}
	for i, w := range g {
		if w.WorkflowRunID != g[0].WorkflowRunID || w.WorkerID != g[0].WorkerID {
			return fmt.Errorf("%w: write %d (%s) is for run %s, worker %s; the group's first write is for run %s, worker %s",
				ErrInvalidArgument, i, w.Kind, w.WorkflowRunID, w.WorkerID, g[0].WorkflowRunID, g[0].WorkerID)
		}
		switch w.Kind {
		case WriteInsertStep, WriteFinishStep, WriteLinkChild:
			if w.Step == nil || w.Step.ID == "" {
				return fmt.Errorf("%w: write %d (%s) of run %s has no step attempt id", ErrInvalidArgument, i, w.Kind, w.WorkflowRunID)
			}
			if w.Kind == WriteLinkChild && (w.Step.ChildWorkflowRunNamespaceID == nil || w.Step.ChildWorkflowRunID == nil) {
				return fmt.Errorf("%w: write %d (%s) of run %s names no child run", ErrInvalidArgument, i, w.Kind, w.WorkflowRunID)
			}
		case WriteCompleteRun, WriteParkRun, WriteRescheduleRun, WriteFailRun:
			if i != len(g)-1 {
				return fmt.Errorf("%w: write %d (%s) of run %s is a run transition but not the group's last write",
					ErrInvalidArgument, i, w.Kind, w.WorkflowRunID)
			}
		default:
			return fmt.Errorf("%w: write %d of run %s has unknown kind %d", ErrInvalidArgument, i, w.WorkflowRunID, int(w.Kind))
		}
	}
	return nil
}
