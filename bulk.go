package openworkflow

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// BulkAction is a stored bulk action (see [Client.StartBulkAction]).
type BulkAction = backend.BulkAction

// BulkOperation is what a bulk action does to each run it selects:
// [backend.BulkCancel], [backend.BulkRetry] or [backend.BulkDelete].
type BulkOperation = backend.BulkOperation

// BulkActionOptions are the optional inputs of [Client.StartBulkAction].
type BulkActionOptions struct {
	// Reason is kept with the action for the record, at most
	// [backend.MaxBulkReasonBytes]; "" for none.
	Reason string
	// RequestedBy names who asked (a token's name, a user); "" for none.
	RequestedBy string
	// MaxPerSecond bounds how many runs per second the action acts on:
	// its driver rests between pages to keep to it, so that workers
	// sharing the database keep their pace (docs/benchmarks.md measures
	// W1 beside a bulk cancel). 0 means [DefaultBulkRate]; negative is
	// invalid.
	MaxPerSecond int
}

// DefaultBulkRate is the rate of a bulk action given none, in runs per
// second: the pace at which W1 on PostgreSQL kept within 15 % of its
// throughput alone on the shared 2-core test machine (0.86×; at 5,000
// runs/s it fell to 0.75×: docs/benchmarks.md). An operator who wants a
// bulk cancel done faster, and can afford it, asks for a higher rate.
// Temporal's batcher defaults to 50 per second per job, since each of its
// operations is an RPC; ours are a page's statements in one transaction.
const DefaultBulkRate = 1000

// BulkDryRun is what a bulk action would act on now ([Client.DryRunBulkAction]).
type BulkDryRun struct {
	// Operation and Query are as asked.
	Operation BulkOperation `json:"operation"`
	Query     string        `json:"query"`
	// Matched counts the runs the query selects now; Eligible those of
	// them whose status the operation applies to (cancel, pause: pending
	// or running; retry: failed; delete: completed, failed, canceled;
	// resume: pending, running or canceled — statuses do not say which
	// runs are paused). The action skips, when it reaches them, the runs
	// its single-run statement refuses: a failed run marked not
	// retryable, a child its parent still waits for, a run paused already
	// or not paused.
	Matched  int64 `json:"matched"`
	Eligible int64 `json:"eligible"`
}

// bulkStore returns the client's bulk action store, or an error wrapping
// backend.ErrNotSupported.
func (c *Client) bulkStore() (backend.BulkActionStore, error) {
	s, ok := c.b.(backend.BulkActionStore)
	if !ok {
		return nil, fmt.Errorf("%w: the backend (%T) has no bulk actions", backend.ErrNotSupported, c.b)
	}
	return s, nil
}

// BulkSelection returns the list filter a bulk action of op over query
// pages with: the runs query selects (the run query language, package
// runquery, docs/queries.md) whose status op may act on
// ([backend.BulkOperation.EligibleStatuses]). It is the one place a bulk
// action's query becomes a selection, for the actions started here and
// for their drivers, which parse the stored text again. Blank text
// selects every run. Errors wrap [backend.ErrInvalidArgument] and, for a
// bad query, runquery's [*runquery.Error] with the line and column of the
// fault in query as given.
func BulkSelection(op BulkOperation, query string) (backend.ListWorkflowRunsParams, error) {
	if err := checkBulkOperation(op); err != nil {
		return backend.ListWorkflowRunsParams{}, err
	}
	if _, err := runquery.Parse(query); err != nil { // positions in the user's text
		return backend.ListWorkflowRunsParams{}, fmt.Errorf("%w: %w", backend.ErrInvalidArgument, err)
	}
	statuses := make([]string, 0, 5)
	for _, st := range op.EligibleStatuses() {
		statuses = append(statuses, strconv.Quote(string(st)))
	}
	text := "status IN (" + strings.Join(statuses, ", ") + ")"
	if strings.TrimSpace(query) != "" {
		text = "(" + query + ") AND " + text
	}
	q, err := runquery.Parse(text)
	if err != nil {
		return backend.ListWorkflowRunsParams{}, fmt.Errorf("%w: the query with its operation's statuses: %w", backend.ErrInvalidArgument, err)
	}
	return backend.ListWorkflowRunsParams{Query: q}, nil
}

// checkBulkOperation refuses an unknown operation with an error wrapping
// backend.ErrInvalidArgument.
func checkBulkOperation(op BulkOperation) error {
	if !op.Valid() {
		return fmt.Errorf("%w: unknown bulk operation %q; the operations are %v", backend.ErrInvalidArgument, op, backend.BulkOperations)
	}
	return nil
}

// DryRunBulkAction counts what a bulk action of op over query would act on
// now, writing nothing (Trigger.dev's and Restate's "count first"), with
// two [backend.Client.CountMatchingRuns]. Errors: a bad operation or
// query wraps [backend.ErrInvalidArgument] (see [BulkSelection]).
func (c *Client) DryRunBulkAction(ctx context.Context, op BulkOperation, query string) (BulkDryRun, error) {
	out := BulkDryRun{Operation: op, Query: query}
	sel, err := BulkSelection(op, query)
	if err != nil {
		return out, err
	}
	all, err := runquery.Parse(query)
	if err != nil {
		return out, fmt.Errorf("%w: %w", backend.ErrInvalidArgument, err)
	}
	if out.Matched, err = c.b.CountMatchingRuns(ctx, backend.ListWorkflowRunsParams{Query: all}); err != nil {
		return out, fmt.Errorf("count the runs of the bulk action's query: %w", err)
	}
	if out.Eligible, err = c.b.CountMatchingRuns(ctx, sel); err != nil {
		return out, fmt.Errorf("count the runs the bulk action would act on: %w", err)
	}
	return out, nil
}

// StartBulkAction stores a durable bulk action that applies op to every
// run query selects (Temporal's StartBatchOperation; reference §3): the
// query is checked first (a bad one is refused with its position, and
// nothing is stored), the selection counted (the action's Matched: the
// runs op applies to now), and the action stored running. Runs created
// after it are never selected. It returns at once: any [Worker] of the
// namespace (and `ow server` or `ow dev` running one) takes the action
// and applies it page by page, each page in one transaction with the
// action's progress, so it survives the driver's death, goes on from
// where it was, and acts on each run at most once. Follow it with
// [Client.GetBulkAction] and stop it with [Client.CancelBulkAction].
//
// Errors: an unknown operation, a bad query or option wraps
// [backend.ErrInvalidArgument]; a backend without bulk actions
// [backend.ErrNotSupported].
func (c *Client) StartBulkAction(ctx context.Context, op BulkOperation, query string, opts BulkActionOptions) (*BulkAction, error) {
	s, err := c.bulkStore()
	if err != nil {
		return nil, err
	}
	if opts.MaxPerSecond < 0 {
		return nil, fmt.Errorf("%w: bulk action maxPerSecond %d is negative", backend.ErrInvalidArgument, opts.MaxPerSecond)
	}
	if opts.MaxPerSecond == 0 {
		opts.MaxPerSecond = DefaultBulkRate
	}
	dry, err := c.DryRunBulkAction(ctx, op, query)
	if err != nil {
		return nil, err
	}
	return s.CreateBulkAction(ctx, backend.CreateBulkActionParams{
		ID: id.New("bulk"), Operation: op, Query: query, Reason: opts.Reason, RequestedBy: opts.RequestedBy,
		MaxPerSecond: opts.MaxPerSecond, Matched: dry.Eligible,
	})
}

// GetBulkAction returns the bulk action, or an error wrapping
// [backend.ErrBulkActionNotFound].
func (c *Client) GetBulkAction(ctx context.Context, actionID string) (*BulkAction, error) {
	s, err := c.bulkStore()
	if err != nil {
		return nil, err
	}
	return s.GetBulkAction(ctx, actionID)
}

// ListBulkActions lists the namespace's bulk actions newest first, a page
// at a time (as [Client.ListRuns]).
func (c *Client) ListBulkActions(ctx context.Context, p backend.ListBulkActionsParams) (*backend.Page[BulkAction], error) {
	s, err := c.bulkStore()
	if err != nil {
		return nil, err
	}
	return s.ListBulkActions(ctx, p)
}

// CancelBulkAction stops a bulk action at its next page boundary (the
// page being applied, if any, commits or not as a whole): it is canceling
// until its driver marks it canceled with the counts of what it did
// (Temporal's StopBatchOperation, best effort in the same way). Canceling
// a canceling or canceled action returns it; a completed or failed one
// gives an error wrapping [backend.ErrBulkActionFinished], a missing one
// [backend.ErrBulkActionNotFound].
func (c *Client) CancelBulkAction(ctx context.Context, actionID string) (*BulkAction, error) {
	s, err := c.bulkStore()
	if err != nil {
		return nil, err
	}
	return s.CancelBulkAction(ctx, actionID)
}

// bulkFailAfter is how many pages in a row may fail before the driver
// fails the action (temporalio/temporal#11683: a job retrying a failing
// query forever stayed RUNNING for good).
const bulkFailAfter = 5

// bulkLoop drives the namespace's bulk actions until ctx ends: it claims
// an open action whose lease is free, drives it to its end (or until it
// loses it), and otherwise looks again every BulkActionPoll.
func (w *Worker) bulkLoop(ctx context.Context, s backend.BulkActionStore) {
	owner := w.opts.ID + "/bulk"
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		a, err := s.ClaimBulkAction(ctx, backend.ClaimBulkActionParams{Owner: owner, Lease: w.opts.BulkActionLease})
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Warn("openworkflow: claiming a bulk action failed", "error", err)
		case a != nil:
			w.driveBulkAction(ctx, s, a, owner)
			timer.Reset(0) // another may be waiting
			continue
		}
		timer.Reset(w.opts.BulkActionPoll)
	}
}

// driveBulkAction applies a's pages until it is final, lost, or ctx ends,
// resting between pages to keep to the action's rate.
func (w *Worker) driveBulkAction(ctx context.Context, s backend.BulkActionStore, a *BulkAction, owner string) {
	log := w.log.With("bulk_action", a.ID, "operation", a.Operation)
	sel, err := BulkSelection(a.Operation, a.Query)
	if err != nil {
		if _, ferr := s.FailBulkAction(ctx, a.ID, owner, "the query cannot be read: "+err.Error()); ferr != nil {
			log.Warn("openworkflow: failing a bulk action failed", "error", ferr)
		}
		return
	}
	failures := 0
	for a.State.Open() && ctx.Err() == nil {
		start := time.Now()
		page, err := backend.NextBulkPage(ctx, w.b, a, sel, w.opts.BulkActionPage)
		var next *BulkAction
		if err == nil {
			page.Owner, page.Lease = owner, w.opts.BulkActionLease
			next, err = s.ApplyBulkActionPage(ctx, page)
		}
		if errors.Is(err, backend.ErrBulkActionLost) || errors.Is(err, backend.ErrBulkActionFinished) {
			log.Info("openworkflow: bulk action left to another driver", "reason", err)
			return
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			log.Warn("openworkflow: a page of a bulk action failed", "error", err, "failures_in_a_row", failures)
			if failures >= bulkFailAfter {
				if _, ferr := s.FailBulkAction(ctx, a.ID, owner, err.Error()); ferr != nil {
					log.Warn("openworkflow: failing a bulk action failed", "error", ferr)
				}
				return
			}
			if !sleepCtx(ctx, time.Duration(failures)*time.Second) {
				return
			}
			continue
		}
		failures = 0
		a = next
		if rate := a.MaxPerSecond; rate > 0 && a.State.Open() {
			want := time.Duration(len(page.RunIDs)) * time.Second / time.Duration(rate)
			if rest := want - time.Since(start); rest > 0 && !sleepCtx(ctx, rest) {
				return
			}
		}
	}
	if !a.State.Open() {
		log.Info("openworkflow: bulk action ended", "state", a.State, "acted", a.Acted, "skipped", a.Skipped, "pages", a.Pages)
	}
}

// sleepCtx waits d or until ctx ends, reporting whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
