package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// BatchOptions say when the open batch of a workflow and key is flushed
// into one run, as Inngest's batchEvents: when it holds MaxSize items,
// when the next item would take it over MaxBytes, or Timeout after its
// first item. An open batch keeps the options of its first item (they
// are stored on it), so that a later append with other options cannot
// move its flush. Docs: docs/debounce-and-batching.md.
type BatchOptions struct {
	// MaxSize is the most items one run gets: the append that brings the
	// batch to it flushes it. 2 to [MaxBatchSize] (Inngest: ≥ 2).
	MaxSize int `json:"maxSize"`
	// Timeout is how long after its first item a batch is flushed,
	// however few items it holds. At least [MinBatchTimeout] (Inngest:
	// 1 s), at most [MaxBatchTimeout].
	Timeout time.Duration `json:"timeout"`
	// MaxBytes bounds the JSON bytes of a batch's items (the run's input
	// is their array): an item that would take the batch over it flushes
	// the batch first and opens the next one. 0 means
	// [DefaultBatchMaxBytes]; at most [MaxBatchMaxBytes]. A single item
	// larger than MaxBytes is refused.
	MaxBytes int `json:"maxBytes,omitempty"`
}

// Batch limits.
const (
	// MaxBatchSize is the largest BatchOptions.MaxSize.
	MaxBatchSize = 1000
	// MinBatchTimeout and MaxBatchTimeout bound BatchOptions.Timeout.
	MinBatchTimeout = time.Second
	MaxBatchTimeout = 24 * time.Hour
	// DefaultBatchMaxBytes is BatchOptions.MaxBytes when 0: 4 MiB, as
	// the reference recommends (Hatchet's gRPC cap).
	DefaultBatchMaxBytes = 4 << 20
	// MaxBatchMaxBytes is the largest BatchOptions.MaxBytes (16 MiB).
	MaxBatchMaxBytes = 16 << 20
	// MaxBatchKeyLength is the longest batch key, in bytes.
	MaxBatchKeyLength = 1024
)

// Validate checks o and returns it with its defaults applied, or an error
// wrapping [ErrInvalidArgument] (a *FieldError naming the field).
func (o BatchOptions) Validate() (BatchOptions, error) {
	if o.MaxSize < 2 || o.MaxSize > MaxBatchSize {
		return o, &FieldError{Field: "batch.maxSize", Value: fmt.Sprint(o.MaxSize), Reason: fmt.Sprintf("must be from 2 to %d", MaxBatchSize)}
	}
	if o.Timeout < MinBatchTimeout || o.Timeout > MaxBatchTimeout {
		return o, &FieldError{Field: "batch.timeout", Value: o.Timeout.String(), Reason: fmt.Sprintf("must be from %v to %v", MinBatchTimeout, MaxBatchTimeout)}
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultBatchMaxBytes
	}
	if o.MaxBytes < 0 || o.MaxBytes > MaxBatchMaxBytes {
		return o, &FieldError{Field: "batch.maxBytes", Value: fmt.Sprint(o.MaxBytes), Reason: fmt.Sprintf("must be from 1 to %d", MaxBatchMaxBytes)}
	}
	return o, nil
}

// AppendBatchItemParams are the inputs of [BatchStore.AppendBatchItem].
type AppendBatchItemParams struct {
	// WorkflowName is the workflow the batch's run starts (required).
	WorkflowName string
	// Version is the run's version (nil: unversioned); the batch's first
	// item decides it.
	Version *string
	// Key partitions the workflow's batches ("" is a key like any other:
	// the default one). Valid text of at most [MaxBatchKeyLength] bytes.
	Key string
	// Item is the item's JSON (nil is JSON null).
	Item json.RawMessage
	// Options apply when this item opens a batch.
	Options BatchOptions
}

// Validate checks p and returns it with its defaults applied (the
// options' defaults; a nil item made JSON null), or an error wrapping
// [ErrInvalidArgument] naming the field.
func (p AppendBatchItemParams) Validate() (AppendBatchItemParams, error) {
	if err := checkName("workflowName", p.WorkflowName, MaxWorkflowNameLength, true); err != nil {
		return p, err
	}
	if p.Version != nil {
		if err := checkName("version", *p.Version, MaxVersionLength, false); err != nil {
			return p, err
		}
	}
	if len(p.Key) > MaxBatchKeyLength || !ValidText(p.Key) {
		return p, &FieldError{Field: "batch.key", Value: shown(p.Key), Reason: fmt.Sprintf("must be valid text of at most %d bytes", MaxBatchKeyLength)}
	}
	var err error
	if p.Options, err = p.Options.Validate(); err != nil {
		return p, err
	}
	if len(p.Item) == 0 {
		p.Item = json.RawMessage("null")
	}
	if err := ValidateJSON(p.Item); err != nil {
		return p, &FieldError{Field: "item", Value: shown(string(p.Item)), Reason: "cannot be stored: " + err.Error()}
	}
	if len(p.Item) > p.Options.MaxBytes {
		return p, &FieldError{Field: "item", Value: shown(string(p.Item)),
			Reason: fmt.Sprintf("is %d bytes, more than the batch's max bytes %d", len(p.Item), p.Options.MaxBytes)}
	}
	return p, nil
}

// BatchAppend is what [BatchStore.AppendBatchItem] did.
type BatchAppend struct {
	// Seq is the item's position in arrival order among all items of the
	// namespace (increasing).
	Seq int64 `json:"seq"`
	// Count and Bytes are the batch's items and their JSON bytes after
	// the append (0 when the append flushed it).
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
	// Flushed holds the runs this append created: the batch it filled,
	// and the batch before it when the item would have taken that one
	// over its max bytes. Empty when the item waits in an open batch.
	Flushed []*WorkflowRun `json:"flushed,omitempty"`
}

// OpenBatch is an open batch as [BatchStore.ListOpenBatches] lists it.
type OpenBatch struct {
	WorkflowName string  `json:"workflowName"`
	Version      *string `json:"version"`
	Key          string  `json:"key"`
	// Count and Bytes are its items and their JSON bytes.
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
	// MaxSize and MaxBytes are the options of its first item.
	MaxSize  int   `json:"maxSize"`
	MaxBytes int64 `json:"maxBytes"`
	// FirstAt is its first item's time; FlushAt when its timeout
	// flushes it (FirstAt + Timeout).
	FirstAt time.Time `json:"firstAt"`
	FlushAt time.Time `json:"flushAt"`
}

// BatchStore is an optional capability of a [Backend]: batching items
// into runs (as Inngest's batching). Both built-in backends implement it.
//
// A flush is one transaction: it creates the run, as CreateWorkflowRun
// would, with input the JSON array of the batch's items in arrival order,
// and deletes the items and the open batch. An acknowledged append (nil
// error) is therefore in exactly one run's input once its batch is
// flushed, whatever process dies when; an append whose outcome is unknown
// (the process died, or the connection failed before the commit) is in
// one run or none. After the flush the run is an ordinary run (a retry
// replays the same input; nothing is batched again).
type BatchStore interface {
	// AppendBatchItem appends p.Item to the open batch of (workflow, key),
	// opening one with p.Options when there is none, and flushes it when
	// it is full (see [BatchOptions]); the item's append, count and any
	// flush commit together. Invalid params fail with an error wrapping
	// [ErrInvalidArgument], nothing stored.
	AppendBatchItem(ctx context.Context, p AppendBatchItemParams) (*BatchAppend, error)
	// AppendBatchItemTx is AppendBatchItem in the caller's transaction,
	// of the kind [TxStarter] takes (PostgreSQL: a pgx.Tx; SQLite: the
	// *sql.Tx of the backend's InTx), so that the item is appended if
	// and only if that transaction commits: an event's trigger appends
	// it in the event's publish transaction.
	AppendBatchItemTx(ctx context.Context, tx any, p AppendBatchItemParams) (*BatchAppend, error)
	// FlushDueBatches flushes the open batches whose timeout has passed
	// (at most limit of them; limit ≤ 0 means 100), each in a transaction
	// of its own, skipping those another transaction holds. It returns
	// how many it flushed and when the next open batch is due, by the
	// caller's clock (ok false: none is open). Workers call it from their
	// batch loop.
	FlushDueBatches(ctx context.Context, limit int) (flushed int, next time.Time, ok bool, err error)
	// ListOpenBatches lists the open batches, soonest due first, at most
	// limit (0: [DefaultPageSize]).
	ListOpenBatches(ctx context.Context, limit int) ([]OpenBatch, error)
}

// BatchInput is the input of the run of a batch: the JSON array of its
// items in arrival order.
func BatchInput(items []json.RawMessage) json.RawMessage {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}
