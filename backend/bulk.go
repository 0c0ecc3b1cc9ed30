package backend

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// BulkActionStore is an optional capability of a [Backend]: durable bulk
// actions, which cancel, retry or delete every run a query selects, page
// by page (issue 21; Temporal's batch operations, reference §3). Both
// built-in backends implement it, in a table of this SDK's own
// (go_bulk_actions, go migration 14); nothing of OpenWorkflow's changes.
//
// An action is a row: its operation, its query (text the SDK parses; the
// backend stores it as given), its state and a keyset cursor with the
// counts of what it did. Any process leases a running action
// ([BulkActionStore.ClaimBulkAction]) and drives it with
// [BulkActionStore.ApplyBulkActionPage]: the caller lists the next page
// of the selection after the action's cursor (with
// [Client.ListWorkflowRuns], in its order) and hands the page's run ids
// and the cursor it started from; the backend, in one transaction, checks
// that the caller still holds the lease and that the action's cursor is
// still the one the page started from, acts on each run of the page with
// the guarded statement of the single-run operation (so a run that is no
// longer eligible is counted as skipped, not acted on), and advances the
// cursor and the counts. A page is therefore applied once or not at all,
// whoever drives it and whenever the driver dies: a run is acted on at
// most once per action, and every selected run is reached once the
// action completes.
type BulkActionStore interface {
	// CreateBulkAction stores a new running action, unleased, created
	// now (its snapshot time: runs created after it are not selected).
	// Invalid params fail with [ErrInvalidArgument] naming the field.
	CreateBulkAction(ctx context.Context, p CreateBulkActionParams) (*BulkAction, error)
	// GetBulkAction returns the action, or an error wrapping
	// [ErrBulkActionNotFound].
	GetBulkAction(ctx context.Context, id string) (*BulkAction, error)
	// ListBulkActions lists the namespace's actions newest first
	// (created_at DESC, id DESC), paginated as [Client.ListWorkflowRuns].
	ListBulkActions(ctx context.Context, p ListBulkActionsParams) (*Page[BulkAction], error)
	// CancelBulkAction asks a running action to stop: its state becomes
	// canceling, and its driver stops at the next page boundary (the page
	// it is applying, if any, commits or not as a whole), setting it
	// canceled with the counts of what it did. Canceling a canceling or
	// canceled action returns it unchanged; a completed or failed one
	// gives an error wrapping [ErrBulkActionFinished], a missing one
	// [ErrBulkActionNotFound].
	CancelBulkAction(ctx context.Context, id string) (*BulkAction, error)
	// ClaimBulkAction leases the oldest action that is running or
	// canceling and not leased (never leased, or its lease expired) to
	// p.Owner until now + p.Lease, setting started_at on its first claim,
	// and returns it; nil when there is none. Concurrent claimers never
	// take the same action (PostgreSQL FOR UPDATE SKIP LOCKED; SQLite's
	// single writer).
	ClaimBulkAction(ctx context.Context, p ClaimBulkActionParams) (*BulkAction, error)
	// ApplyBulkActionPage applies one page of an action, in one
	// transaction, as described on [BulkActionStore], and extends the
	// lease to now + p.Lease. It returns the action as it is after the
	// page. When the action is canceling, it acts on nothing and marks
	// the action canceled (finished now); when p.Last, the action
	// completes (finished now) after the page. A caller that no longer
	// holds the lease, or whose page no longer starts at the action's
	// cursor (another driver applied it), gets an error wrapping
	// [ErrBulkActionLost] and nothing is applied; a finished action
	// [ErrBulkActionFinished].
	ApplyBulkActionPage(ctx context.Context, p ApplyBulkActionPageParams) (*BulkAction, error)
	// FailBulkAction ends an action the caller holds with state failed
	// and message as its last error (a selection that cannot be read
	// again and again, say). Errors as ApplyBulkActionPage's.
	FailBulkAction(ctx context.Context, id, owner, message string) (*BulkAction, error)
}

// BulkOperation is what a bulk action does to each run it selects.
type BulkOperation string

// The operations of a bulk action and the runs each acts on (its implicit
// eligibility, reference §3.3; a selected run that is not eligible when
// its page is applied is skipped). Each acts with the statement of the
// single-run operation named, in the page's transaction:
const (
	// BulkCancel cancels pending and running runs, as
	// [Client.CancelWorkflowRun].
	BulkCancel BulkOperation = "cancel"
	// BulkRetry retries failed runs that are not marked never to be
	// retried, as [Client.RetryWorkflowRun] (each retried run's attempts
	// are reset by the retry mark, its deadline cleared).
	BulkRetry BulkOperation = "retry"
	// BulkDelete deletes terminal runs (completed, failed, canceled) with
	// everything they own, as a retention prune does ([RunPruner]); a
	// finished child whose parent still waits for it is skipped. Runs
	// that are not terminal are never deleted: a TypeScript worker may
	// hold one under its lease and would write to a missing row.
	BulkDelete BulkOperation = "delete"
	// BulkPause pauses pending and running runs, as
	// [RunPauser.PauseWorkflowRun], with the action's reason; a run
	// paused already is skipped.
	BulkPause BulkOperation = "pause"
	// BulkResume resumes paused and canceled runs, as
	// [RunPauser.ResumeWorkflowRun]; a run neither paused nor canceled
	// when reached, or canceled with its deadline passed, is skipped.
	BulkResume BulkOperation = "resume"
)

// BulkOperations are the operations a bulk action may have, in the order
// documentation lists them.
var BulkOperations = []BulkOperation{BulkCancel, BulkRetry, BulkDelete, BulkPause, BulkResume}

// Valid reports whether o is one of [BulkOperations].
func (o BulkOperation) Valid() bool {
	for _, v := range BulkOperations {
		if o == v {
			return true
		}
	}
	return false
}

// Eligible reports whether a run of stored status s may be one the
// operation acts on (before the per-run guards: the not-retryable mark, a
// parent waiting for a child to be deleted, a pause; statuses do not say
// which runs are paused).
func (o BulkOperation) Eligible(s RunStatus) bool {
	switch o {
	case BulkCancel, BulkPause:
		return !s.Terminal()
	case BulkResume: // paused runs are not terminal; the statement tells them apart
		return !s.Terminal() || s.Normalize() == RunCanceled
	case BulkRetry:
		return s.Normalize() == RunFailed
	case BulkDelete:
		return s.Terminal()
	}
	return false
}

// BulkActionState is the state of a bulk action.
type BulkActionState string

// The states of a bulk action. Running and canceling are open (a driver
// may lease the action); the others are final.
const (
	BulkRunning   BulkActionState = "running"
	BulkCanceling BulkActionState = "canceling"
	BulkCanceled  BulkActionState = "canceled"
	BulkCompleted BulkActionState = "completed"
	BulkFailed    BulkActionState = "failed"
)

// Open reports whether the action is still to be driven (running or
// canceling).
func (s BulkActionState) Open() bool { return s == BulkRunning || s == BulkCanceling }

// BulkAction is a stored bulk action.
type BulkAction struct {
	NamespaceID string
	// ID is the action's id ("bulk_…").
	ID        string
	Operation BulkOperation
	// Query is the selection as the user wrote it.
	Query string
	// Reason and RequestedBy are free text kept for the record ("" when
	// not given).
	Reason, RequestedBy string
	State               BulkActionState
	// MaxPerSecond bounds how many runs per second a driver acts on; 0
	// means no bound.
	MaxPerSecond int
	// Matched is how many runs the selection held when the action was
	// created (an estimate: runs change until their page is reached).
	Matched int64
	// Acted, Skipped and Failed count the runs the pages applied so far
	// acted on, skipped (no longer eligible when reached) and failed on.
	Acted, Skipped, Failed int64
	// Pages counts the pages applied.
	Pages int64
	// Cursor is the keyset position after the last page applied (a
	// [Cursor] encoded, in the list order); "" before the first.
	Cursor string
	// LastError is the last error a driver recorded ("" for none).
	LastError string
	// LeaseOwner and LeaseExpiresAt name the driver holding the action
	// and until when; "" and nil when none.
	LeaseOwner     string
	LeaseExpiresAt *time.Time
	// CreatedAt is also the selection's snapshot bound: runs created
	// after it are not selected.
	CreatedAt, UpdatedAt  time.Time
	StartedAt, FinishedAt *time.Time
}

// CreateBulkActionParams are the inputs of
// [BulkActionStore.CreateBulkAction].
type CreateBulkActionParams struct {
	// ID is the new action's id, required (the SDK makes one).
	ID string
	// Operation is required, one of [BulkOperations].
	Operation BulkOperation
	// Query is the selection's text as the user wrote it, stored as
	// given (the SDK parses and checks it; "" selects every run).
	Query string
	// Reason and RequestedBy are optional text, at most
	// [MaxBulkReasonBytes] each.
	Reason, RequestedBy string
	// MaxPerSecond bounds the driver's rate; 0: none; not negative.
	MaxPerSecond int
	// Matched is the count of the selection at creation.
	Matched int64
	// CreatedAt, when set, is the action's creation and snapshot time
	// (the SDK passes the time it counted at); zero means now.
	CreatedAt time.Time
}

// MaxBulkReasonBytes bounds a bulk action's reason and requester, as
// Temporal bounds a batch job's reason; MaxBulkQueryBytes its query.
const (
	MaxBulkReasonBytes = 1000
	MaxBulkQueryBytes  = 10_000
)

// Validate checks p as every backend does, with errors wrapping
// [ErrInvalidArgument] that name the field.
func (p CreateBulkActionParams) Validate() error {
	switch {
	case p.ID == "" || !ValidText(p.ID):
		return fmt.Errorf("%w: bulk action id %q is empty or not valid text", ErrInvalidArgument, p.ID)
	case !p.Operation.Valid():
		return fmt.Errorf("%w: bulk operation %q, want one of %v", ErrInvalidArgument, p.Operation, BulkOperations)
	case !ValidText(p.Query) || len(p.Query) > MaxBulkQueryBytes:
		return fmt.Errorf("%w: bulk action query is not valid text or longer than %d bytes", ErrInvalidArgument, MaxBulkQueryBytes)
	case !ValidText(p.Reason) || len(p.Reason) > MaxBulkReasonBytes:
		return fmt.Errorf("%w: bulk action reason is not valid text or longer than %d bytes", ErrInvalidArgument, MaxBulkReasonBytes)
	case !ValidText(p.RequestedBy) || len(p.RequestedBy) > MaxBulkReasonBytes:
		return fmt.Errorf("%w: bulk action requestedBy is not valid text or longer than %d bytes", ErrInvalidArgument, MaxBulkReasonBytes)
	case p.MaxPerSecond < 0:
		return fmt.Errorf("%w: bulk action maxPerSecond %d is negative", ErrInvalidArgument, p.MaxPerSecond)
	case p.Matched < 0:
		return fmt.Errorf("%w: bulk action matched count %d is negative", ErrInvalidArgument, p.Matched)
	}
	return nil
}

// ListBulkActionsParams paginate [BulkActionStore.ListBulkActions].
type ListBulkActionsParams struct {
	// Limit is the page size; 0 means [DefaultPageSize].
	Limit int
	// After and Before are cursors from a previous page; at most one.
	After, Before string
}

// ClaimBulkActionParams are the inputs of
// [BulkActionStore.ClaimBulkAction].
type ClaimBulkActionParams struct {
	// Owner names the driver (a worker id), required.
	Owner string
	// Lease is how long the claim holds before another driver may take
	// the action over; required, positive.
	Lease time.Duration
}

// ApplyBulkActionPageParams are the inputs of
// [BulkActionStore.ApplyBulkActionPage].
type ApplyBulkActionPageParams struct {
	// ID is the action; Owner the driver holding its lease.
	ID, Owner string
	// Lease is the lease's new length from now, positive.
	Lease time.Duration
	// From is the action's cursor the page was listed after ("" for the
	// first page); To the cursor after the page's last run ("" when the
	// page is empty).
	From, To string
	// RunIDs are the page's runs, at most [MaxBulkPage].
	RunIDs []string
	// Last says the selection has no run after this page: the action
	// completes with it.
	Last bool
}

// MaxBulkPage is the most runs one page of a bulk action may hold (a
// page is one list page, so at most [MaxPageSize]); DefaultBulkPage the
// page size of [NextBulkPage] when it is given none (Temporal's batcher
// pages 1,000 too).
const (
	MaxBulkPage     = MaxPageSize
	DefaultBulkPage = MaxPageSize
)

// Validate checks p's shape, with errors wrapping [ErrInvalidArgument].
func (p ApplyBulkActionPageParams) Validate() error {
	switch {
	case p.ID == "" || p.Owner == "":
		return fmt.Errorf("%w: a bulk action page needs the action id and its owner", ErrInvalidArgument)
	case p.Lease <= 0:
		return fmt.Errorf("%w: bulk action lease %s is not positive", ErrInvalidArgument, p.Lease)
	case len(p.RunIDs) > MaxBulkPage:
		return fmt.Errorf("%w: bulk action page of %d runs, at most %d", ErrInvalidArgument, len(p.RunIDs), MaxBulkPage)
	}
	return nil
}

// Errors of [BulkActionStore].
var (
	// ErrBulkActionNotFound: no action of the namespace has the id.
	ErrBulkActionNotFound = errors.New("bulk action not found")
	// ErrBulkActionFinished: the action is completed, failed or canceled.
	ErrBulkActionFinished = errors.New("bulk action finished")
	// ErrBulkActionLost: the caller no longer drives the action (its
	// lease was taken over, or the page was applied by another driver).
	ErrBulkActionLost = errors.New("bulk action lost to another driver")
)

// CheckBulkDriver is the fence of every page of a bulk action, the same
// on every backend: a's state must be open ([ErrBulkActionFinished]
// otherwise), owner must hold its lease and from must be its cursor
// ([ErrBulkActionLost] otherwise: another driver took the action over, or
// applied the page already).
func CheckBulkDriver(a *BulkAction, owner, from string) error {
	switch {
	case !a.State.Open():
		return fmt.Errorf("bulk action %s is %s: %w", a.ID, a.State, ErrBulkActionFinished)
	case a.LeaseOwner != owner:
		return fmt.Errorf("bulk action %s is driven by %q, not %q: %w", a.ID, a.LeaseOwner, owner, ErrBulkActionLost)
	case a.Cursor != from:
		return fmt.Errorf("bulk action %s has moved past the page's start: %w", a.ID, ErrBulkActionLost)
	}
	return nil
}

// TruncateText returns s cut to at most n bytes at a character boundary.
func TruncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// NextBulkPage lists the next page of action a's selection — the runs of
// c that selection (its filters; Limit, cursors and payload options are
// set here) selects, created no later than a.CreatedAt (the snapshot
// bound), in the list order after a.Cursor, at most limit of them — and
// returns the page as params for [BulkActionStore.ApplyBulkActionPage]
// (ID, From, To, RunIDs and Last; the caller sets Owner and Lease). Every
// driver of every backend pages this way, so what a page holds depends
// only on the stored action and the runs.
func NextBulkPage(ctx context.Context, c Client, a *BulkAction, selection ListWorkflowRunsParams, limit int) (ApplyBulkActionPageParams, error) {
	if limit <= 0 || limit > MaxBulkPage {
		limit = DefaultBulkPage
	}
	bound := a.CreatedAt.Truncate(time.Millisecond).Add(time.Millisecond) // created_at <= a.CreatedAt
	if selection.CreatedBefore == nil || selection.CreatedBefore.After(bound) {
		selection.CreatedBefore = &bound
	}
	selection.Limit, selection.After, selection.Before = limit, a.Cursor, ""
	selection.OmitPayloads, selection.MaxBytes = true, 0
	page, err := c.ListWorkflowRuns(ctx, selection)
	if err != nil {
		return ApplyBulkActionPageParams{}, fmt.Errorf("list the next page of bulk action %s: %w", a.ID, err)
	}
	p := ApplyBulkActionPageParams{ID: a.ID, From: a.Cursor, To: a.Cursor, Last: page.Next == nil}
	for _, r := range page.Data {
		p.RunIDs = append(p.RunIDs, r.ID)
	}
	if n := len(page.Data); n > 0 {
		p.To = Cursor{CreatedAt: page.Data[n-1].CreatedAt, ID: page.Data[n-1].ID}.Encode()
	}
	return p, nil
}

// EligibleStatuses are the statuses of the runs o may act on, those of
// [BulkOperation.Eligible]: the SDK adds them to an action's query, so
// that its pages list only those runs.
func (o BulkOperation) EligibleStatuses() []RunStatus {
	var out []RunStatus
	for _, s := range []RunStatus{RunPending, RunRunning, RunCompleted, RunFailed, RunCanceled} {
		if o.Eligible(s) {
			out = append(out, s)
		}
	}
	return out
}
