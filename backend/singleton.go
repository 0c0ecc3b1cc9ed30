package backend

import (
	"errors"
	"fmt"
	"strings"
)

// SingletonMode says what a start does when its workflow already has an
// active run of the same singleton key ([Singleton]). The modes are
// Inngest's singleton modes (skip, cancel) and a queue mode that never
// supersedes queued runs (unlike GitHub Actions' concurrency groups, whose
// newer pending run cancels the older pending one).
type SingletonMode string

// The singleton modes.
const (
	// SingletonSkip creates nothing when the key has an active run: the
	// create returns that run (the oldest active one), with
	// [WorkflowRun.SingletonSkipped] set.
	SingletonSkip SingletonMode = "skip"
	// SingletonQueue creates the run held (pending, available_at NULL, so
	// that no claim takes it, OpenWorkflow's TypeScript claim included)
	// when the key has an active run; when the key's last released run
	// ends, whoever ends it, the oldest held run is released (FIFO, one at
	// a time). Held runs never supersede one another.
	SingletonQueue SingletonMode = "queue"
	// SingletonCancel is cancel-in-progress: the create cancels every
	// active run of the key (their workers stop at their next step
	// boundary, as with CancelWorkflowRun), then creates the run.
	SingletonCancel SingletonMode = "cancel"
)

// Singleton makes a create admit at most one active run per (workflow
// name, Key): "active" is any run not terminal — pending, running or
// sleeping, parked, paused or held alike. The decision is taken when the
// run is created, in the create's transaction, under a lock per
// (namespace, workflow, key) (PostgreSQL: pg_advisory_xact_lock; SQLite:
// the write lock), so concurrent starts from any number of processes
// cannot make two active runs of a key. As Inngest's singleton
// (https://www.inngest.com/docs/guides/singleton), which the
// reference's §10.2 recommends; see docs/flow-control.md.
//
// Runs the TypeScript SDK starts take no part (its inserts have no key).
type Singleton struct {
	// Key is the singleton key: valid text of at most
	// [MaxConcurrencyKeyLength] bytes; "" is a key like any other (one
	// active run of the workflow).
	Key string `json:"key"`
	// Mode is skip, queue or cancel; required.
	Mode SingletonMode `json:"mode"`
}

// ErrSingletonSkipped is returned, with the handle of the key's active
// run, by starts that asked to be told ([Singleton] in mode skip) that
// nothing was created because the key had an active run.
var ErrSingletonSkipped = errors.New("singleton: the key has an active run; nothing was started")

// ParseSingletonMode returns the mode named s (skip, queue or cancel),
// or an error wrapping [ErrInvalidArgument].
func ParseSingletonMode(s string) (SingletonMode, error) {
	switch m := SingletonMode(strings.ToLower(strings.TrimSpace(s))); m {
	case SingletonSkip, SingletonQueue, SingletonCancel:
		return m, nil
	}
	return "", fmt.Errorf("%w: singleton mode %q, want skip, queue or cancel", ErrInvalidArgument, s)
}

// Validate checks s: a known mode and a key of valid text of at most
// [MaxConcurrencyKeyLength] bytes. The error is a *[FieldError] (which
// wraps [ErrInvalidArgument]) naming singleton.mode or singleton.key.
func (s Singleton) Validate() error {
	switch s.Mode {
	case SingletonSkip, SingletonQueue, SingletonCancel:
	default:
		return &FieldError{Field: "singleton.mode", Value: shown(string(s.Mode)), Reason: "must be skip, queue or cancel"}
	}
	if err := checkText("singleton key", s.Key); err != nil {
		return &FieldError{Field: "singleton.key", Value: shown(s.Key), Reason: "not valid text (invalid UTF-8 or U+0000)"}
	}
	if len(s.Key) > MaxConcurrencyKeyLength {
		return &FieldError{Field: "singleton.key", Value: shown(s.Key), Reason: fmt.Sprintf("%d bytes, longer than %d", len(s.Key), MaxConcurrencyKeyLength)}
	}
	return nil
}

// ErrSingletonBatch is the error of a batched create
// ([Client.CreateWorkflowRuns]) with an entry that has a [Singleton]:
// singleton starts are decided one by one, under their key's lock. It
// wraps [ErrInvalidArgument].
var ErrSingletonBatch = fmt.Errorf("%w: singleton starts are not batched; create them one by one", ErrInvalidArgument)
