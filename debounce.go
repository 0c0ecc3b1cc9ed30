package openworkflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Debounce collapses a burst of starts of one workflow with one key into
// one run (as DBOS's Debouncer and Inngest's debounce): see
// [backend.Debounce] for its fields (Key, Period, MaxDelay, Leading), their
// limits and defaults, and docs/debounce-and-batching.md.
type Debounce = backend.Debounce

// WithDebounce debounces the start ([Client.StartByName], [Workflow.Start]):
// if a run of the workflow started with d.Key is still pending (not yet
// claimed by a worker), this start joins it — its due time moves to now +
// d.Period, never past its first start + d.MaxDelay, and it takes this
// start's input unless d.Leading — and the handle returned is that run's;
// otherwise a run is created, due d.Period from now. Every start of a
// burst so gets the handle of the one run the burst makes
// ([RunHandle.Debounced] says whether the start joined one).
//
// Bad options (empty key, a period under 1 ms, a max delay shorter than
// the period or over 7 days) fail the start with an error wrapping
// backend.ErrInvalidArgument and naming the field. It cannot be combined
// with [WithIdempotencyKey] or [WithStartAt] (same error), nor used with
// StartMany or StartTx, and needs a backend implementing
// backend.Debouncer (both built-in ones do; otherwise the start fails
// with backend.ErrNotSupported).
func WithDebounce(d Debounce) StartOption {
	return func(o *startOptions) { o.debounce = &d }
}

// startDebounced is StartByName for a start with [WithDebounce].
func (c *Client) startDebounced(ctx context.Context, name string, p backend.CreateWorkflowRunParams, d Debounce) (*RunHandle, error) {
	db, ok := c.b.(backend.Debouncer)
	if !ok {
		return nil, fmt.Errorf("start workflow %q with debounce: %w: the backend (%T) cannot debounce", name, backend.ErrNotSupported, c.b)
	}
	got, err := db.DebounceWorkflowRun(ctx, p, d)
	if err != nil {
		return nil, fmt.Errorf("start workflow %q: %w", name, err)
	}
	h := c.startedHandle(name, got.Run, p.Input)
	h.Debounced = got.Debounced
	return h, nil
}

// refuseDebounce fails a start that cannot debounce (StartMany, StartTx).
func refuseDebounce(o startOptions, name, how string) error {
	if o.debounce == nil {
		return nil
	}
	return fmt.Errorf("start workflow %q: %w: debounce cannot be used with %s: start the runs one by one", name, backend.ErrInvalidArgument, how)
}

// BatchOptions say when a workflow's batch is flushed into one run: see
// [backend.BatchOptions] (MaxSize, Timeout, MaxBytes) and
// docs/debounce-and-batching.md.
type BatchOptions = backend.BatchOptions

// BatchAppend is what an append to a batch did: see [backend.BatchAppend].
type BatchAppend = backend.BatchAppend

// EnqueueBatchItem appends item (JSON-encoded) to the open batch of
// workflow wf and key ("" is the default key), as Inngest's batching:
// the batch is flushed into one run of wf, whose input is the JSON array
// of the batch's items in arrival order, when it reaches wf's
// Spec.Batch.MaxSize items or MaxBytes, or Timeout after its first item
// (workers flush timed-out batches). wf must declare Spec.Batch (an error
// wrapping backend.ErrInvalidArgument otherwise), and its input type is
// the slice of the items' type. An acknowledged append (nil error) is in
// exactly one run's input once flushed, whatever process dies.
func EnqueueBatchItem[I any, O any](ctx context.Context, c *Client, wf *Workflow[[]I, O], key string, item I) (*BatchAppend, error) {
	if wf.spec.Batch == nil {
		return nil, fmt.Errorf("enqueue batch item for workflow %q: %w: the workflow declares no Spec.Batch", wf.spec.Name, backend.ErrInvalidArgument)
	}
	return c.EnqueueBatchItem(ctx, wf.spec.Name, wf.spec.Version, key, item, *wf.spec.Batch)
}

// EnqueueBatchItem is [EnqueueBatchItem] by workflow name and version
// ("" for unversioned), with the batch's options given: they apply when
// this item opens a batch (an open batch keeps those of its first item).
// A backend without backend.BatchStore fails with backend.ErrNotSupported.
func (c *Client) EnqueueBatchItem(ctx context.Context, name, version, key string, item any, opts BatchOptions) (*BatchAppend, error) {
	bs, ok := c.b.(backend.BatchStore)
	if !ok {
		return nil, fmt.Errorf("enqueue batch item for workflow %q: %w: the backend (%T) cannot batch", name, backend.ErrNotSupported, c.b)
	}
	raw, err := encodeValue(item)
	if err != nil {
		return nil, fmt.Errorf("enqueue batch item for workflow %q: item: %w", name, err)
	}
	out, err := bs.AppendBatchItem(ctx, backend.AppendBatchItemParams{
		WorkflowName: name, Version: versionPtr(version), Key: key, Item: json.RawMessage(raw), Options: opts,
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue batch item for workflow %q: %w", name, err)
	}
	return out, nil
}
