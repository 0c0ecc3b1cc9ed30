package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors of hooks.
var (
	// ErrHookNotFound: no live hook has that token (or id) in this
	// namespace. A hook lives while its run is not terminal; once the run
	// completes, fails or is canceled its hooks are disposed, and their
	// tokens name nothing.
	ErrHookNotFound = errors.New("hook not found")
	// ErrHookConflict: a live hook of another run (or another hook of the
	// same run) already holds the token.
	ErrHookConflict = errors.New("hook token is held by another live hook")
)

// StepHook and StepHookWait are this SDK's step kinds of hooks, beside
// OpenWorkflow's: a hook's creation (output {"hookId","token"}) and one
// wait for its next payload (context {"kind":"hook-wait","hookId",
// "afterSeq","timeoutAt"}, output {"seq","data"} or null on timeout).
const (
	StepHook     StepKind = "hook"
	StepHookWait StepKind = "hook-wait"
)

// HookStore is an optional capability of a [Backend]: hooks, the
// token-addressed way to resume a run from outside (a human approving, a
// webhook calling back). A workflow creates a hook with a token, given or
// generated; a caller who has the token delivers payloads to it; the
// workflow receives them in order, each exactly once in its history,
// payloads delivered before it waits included (they are kept). Both
// built-in backends implement it, in tables of this SDK's own migration
// line (workflow_hooks, workflow_hook_payloads).
//
// A hook is live while its run is not terminal (pending, running or
// sleeping): reaching completed, failed or canceled disposes a run's
// hooks, whose tokens may then be taken again. Liveness is read from the
// run's status, never stored, so a run canceled by any client (the
// TypeScript SDK included) disposes its hooks at once.
//
// A run parked waiting on a hook has a running attempt of kind
// [StepHookWait] whose context names the hook ("hookId") and the sequence
// number it waits after ("afterSeq"). A payload delivered while the run is
// so parked makes it due at once, and announces work (EventWorkAvailable);
// a payload delivered while the run still executes is found by the park
// that follows, which leaves the run due at once, so a delivery is never
// missed between a pass's last read and its park.
type HookStore interface {
	// CreateHook creates the hook p.ID with p.Token for run
	// p.WorkflowRunID, fenced like a worker write (the run must be running
	// and leased to p.WorkerID: else an error wrapping [ErrNotOwner], or
	// [ErrRunNotFound]). A hook the same run already created at the same
	// step (p.StepName: a pass that crashed between the hook's creation
	// and its step's record, replayed) is returned as it is, with its
	// first id and token, whatever p.ID and p.Token are now. A token held
	// by another live hook, of another run or of another step of this one,
	// fails with [ErrHookConflict]; concurrent creates of one token are
	// serialized, so exactly one succeeds. Bad params
	// ([CreateHookParams.Validate]) fail with [ErrInvalidArgument] and
	// store nothing.
	CreateHook(ctx context.Context, p CreateHookParams) (*Hook, error)
	// NextHookPayload returns the first payload of the hook hookID (of the
	// backend's namespace) whose sequence number is above afterSeq, or ok
	// false when none has come yet (an unknown id has none). It reads
	// disposed hooks too: a run's replay reads what was delivered.
	NextHookPayload(ctx context.Context, hookID string, afterSeq int64) (p *HookPayload, ok bool, err error)

	// ResumeHook delivers data to the live hook holding token: it is kept
	// with the hook's next sequence number (1, 2, …: concurrent deliveries
	// to one hook get distinct consecutive numbers), and the hook's run,
	// if parked waiting on it, is made due at once. It returns the hook
	// (Payloads counting this one) and the payload as stored. Data nil is
	// stored as JSON null. A token that is not valid ([CheckToken]) or
	// data that is not storable JSON ([ValidateJSON]) fails with
	// [ErrInvalidArgument]; no live hook holding token with
	// [ErrHookNotFound]. On any error nothing is stored.
	ResumeHook(ctx context.Context, token string, data json.RawMessage) (*Hook, *HookPayload, error)
	// GetHookByToken returns the live hook holding token, or an error
	// wrapping [ErrHookNotFound] ([ErrInvalidArgument] for a token that is
	// not valid). Should two live hooks hold one token — a failed run
	// retried after another run took its hook's token — the newest is the
	// one resumed and returned.
	GetHookByToken(ctx context.Context, token string) (*Hook, error)
	// ListHooks lists the hooks of run runID, live or disposed, oldest
	// first (created_at, then id); an unknown run has none (an empty,
	// non-nil slice).
	ListHooks(ctx context.Context, runID string) ([]Hook, error)
}

// Hook is one hook of a run.
type Hook struct {
	// NamespaceID and ID ("hook_" + ULID) identify the hook.
	NamespaceID string `json:"namespaceId"`
	ID          string `json:"id"`
	// Token is what a caller resumes the hook with.
	Token string `json:"token"`
	// WorkflowRunID is the run the hook belongs to; StepName the durable
	// key of the step (of kind [StepHook]) that created it, StepAttemptID
	// that step's attempt.
	WorkflowRunID string `json:"workflowRunId"`
	StepName      string `json:"stepName"`
	StepAttemptID string `json:"stepAttemptId"`
	// Metadata is the JSON the workflow attached to the hook (nil: none).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Live is false once the hook's run is terminal (the hook is
	// disposed).
	Live bool `json:"live"`
	// Payloads is how many payloads were delivered to the hook.
	Payloads int64 `json:"payloads"`
	// CreatedAt is the hook's creation (UTC, milliseconds).
	CreatedAt time.Time `json:"createdAt"`
}

// HookPayload is one payload delivered to a hook.
type HookPayload struct {
	// HookID is the hook; Seq its place among the hook's payloads, from 1.
	HookID string `json:"hookId"`
	Seq    int64  `json:"seq"`
	// Data is the JSON delivered (null when null was sent).
	Data json.RawMessage `json:"data"`
	// CreatedAt is the delivery's time (UTC, milliseconds).
	CreatedAt time.Time `json:"createdAt"`
}

// MaxTokenLength is the longest hook token, in bytes.
const MaxTokenLength = 256

// CreateHookParams are the inputs of [HookStore.CreateHook].
type CreateHookParams struct {
	// WorkflowRunID and WorkerID name the run and its leaseholder (the
	// fence).
	WorkflowRunID string
	WorkerID      string
	// ID is the hook's id, chosen by the caller ("hook_" + ULID);
	// StepName and StepAttemptID the step creating it.
	ID            string
	StepName      string
	StepAttemptID string
	// Token is required: 1 to [MaxTokenLength] bytes of valid text.
	Token string
	// Metadata is optional JSON.
	Metadata json.RawMessage
}

// Validate checks p as every backend does, with errors wrapping
// [ErrInvalidArgument] that name the field: the ids, the step name and
// the worker id are required and valid text ([ValidText]), the token
// passes [CheckToken], the metadata [ValidateJSON].
func (p CreateHookParams) Validate() error {
	for _, f := range []struct{ field, s string }{
		{"hook id", p.ID}, {"workflow run id", p.WorkflowRunID}, {"worker id", p.WorkerID},
		{"step name", p.StepName}, {"step attempt id", p.StepAttemptID},
	} {
		if f.s == "" {
			return fmt.Errorf("%w: a hook needs a %s", ErrInvalidArgument, f.field)
		}
		if err := checkText(f.field, f.s); err != nil {
			return err
		}
	}
	if err := CheckToken(p.Token); err != nil {
		return err
	}
	return checkJSONField("hook metadata", p.Metadata)
}

// CheckToken checks a hook token: 1 to [MaxTokenLength] bytes of valid
// text ([ValidText]). The error wraps [ErrInvalidArgument].
func CheckToken(token string) error {
	if token == "" || len(token) > MaxTokenLength {
		return fmt.Errorf("%w: a hook token is 1 to %d bytes, got %d", ErrInvalidArgument, MaxTokenLength, len(token))
	}
	return checkText("hook token", token)
}

// CheckHookPayload checks the data of [HookStore.ResumeHook] as every
// backend does: nil (stored as JSON null) or JSON [ValidateJSON] accepts.
// The error wraps [ErrInvalidArgument] and names the hook payload.
func CheckHookPayload(data json.RawMessage) error {
	return checkJSONField("hook payload", data)
}
