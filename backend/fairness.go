package backend

import (
	"context"
	"math"
	"strconv"
	"time"
)

// Fairness puts a run under fair shares (docs/flow-control.md, "Fair
// shares"): when runs of many keys wait, claims take turns between the
// keys in proportion to their weights, by stride scheduling (reference
// control-and-events.md §11.3). A run gets a pass each time it goes into
// the queue — its start, a retry's reschedule, a resume —,
// max(vtime, its key's last pass) + ceil(1000 / Weight), and claims order
// by priority, then pass. Fairness orders dispatch only: it never
// preempts a run, and a workflow's concurrency limits still apply.
type Fairness struct {
	// Key is the fairness key (a tenant, a customer): valid text of at
	// most [MaxFairnessKeyLength] bytes; "" is a key like any other.
	Key string `json:"key"`
	// Weight is the key's share relative to other keys': a key of weight
	// 2 gets about twice the claims of a key of weight 1 while both have
	// runs waiting. 0 means [DefaultFairnessWeight]; otherwise clamped to
	// [[MinFairnessWeight], [MaxFairnessWeight]]. Negative, NaN or
	// infinite weights are refused.
	Weight float64 `json:"weight,omitempty"`
}

// MaxFairnessKeyLength is the longest [Fairness.Key], in bytes.
const MaxFairnessKeyLength = 64

// DefaultFairnessWeight, MinFairnessWeight and MaxFairnessWeight bound
// [Fairness.Weight].
const (
	DefaultFairnessWeight = 1.0
	MinFairnessWeight     = 0.001
	MaxFairnessWeight     = 1000.0
)

// FairnessStride is the pass a run of weight w adds to its key's:
// ceil(1000 / w), w normalized as [Fairness.Normalized] does.
func FairnessStride(w float64) int64 {
	return int64(math.Ceil(1000 / Fairness{Weight: w}.Normalized().Weight))
}

// Normalized returns f with its weight defaulted and clamped.
func (f Fairness) Normalized() Fairness {
	switch {
	case f.Weight == 0:
		f.Weight = DefaultFairnessWeight
	case f.Weight < MinFairnessWeight:
		f.Weight = MinFairnessWeight
	case f.Weight > MaxFairnessWeight:
		f.Weight = MaxFairnessWeight
	}
	return f
}

// Validate checks f: its key valid text of at most
// [MaxFairnessKeyLength] bytes, its weight a finite number not below 0.
// The error is a *[FieldError] wrapping [ErrInvalidArgument].
func (f Fairness) Validate() error {
	if !ValidText(f.Key) {
		return &FieldError{Field: "fairness.key", Value: shown(f.Key), Reason: "not valid text (invalid UTF-8 or U+0000)"}
	}
	if len(f.Key) > MaxFairnessKeyLength {
		return &FieldError{Field: "fairness.key", Value: shown(f.Key), Reason: "longer than " + strconv.Itoa(MaxFairnessKeyLength) + " bytes"}
	}
	if math.IsNaN(f.Weight) || math.IsInf(f.Weight, 0) || f.Weight < 0 {
		return &FieldError{Field: "fairness.weight", Value: strconv.FormatFloat(f.Weight, 'g', -1, 64),
			Reason: "must be a finite number from 0 (the default, 1) up; it is clamped to [0.001, 1000]"}
	}
	return nil
}

// FairQueue is one fairness key's queue, as [FairQueueLister] lists it.
type FairQueue struct {
	// Key is the fairness key.
	Key string `json:"key"`
	// Weight is the weight the key's last run was enqueued with.
	Weight float64 `json:"weight"`
	// Queued counts the key's runs waiting in the fair queue (due or
	// not); Running those started and not finished (executing or parked).
	Queued  int `json:"queued"`
	Running int `json:"running"`
	// NextPass is the lowest pass of the key's waiting runs (nil when
	// none waits): the lower, the sooner a claim takes it. LastPass is
	// the pass the key's last enqueued run got.
	NextPass *int64 `json:"nextPass"`
	LastPass int64  `json:"lastPass"`
	// OldestQueuedAt is when the key's longest-waiting run became due
	// (nil when none waits).
	OldestQueuedAt *time.Time `json:"oldestQueuedAt"`
	// UpdatedAt is when a run of the key was last enqueued.
	UpdatedAt time.Time `json:"updatedAt"`
}

// FairQueues is a page of [FairQueue]s with the namespace's virtual time.
type FairQueues struct {
	// VTime is the namespace's virtual time: the highest pass a claim
	// took. A key's next run is claimed about when VTime reaches its pass.
	VTime int64 `json:"vtime"`
	// Queues are the page's keys, in key order (the backend's collation).
	Queues []FairQueue `json:"queues"`
	// Next is the After of the next page; nil on the last page.
	Next *string `json:"next"`
}

// ListFairQueuesParams page [FairQueueLister.ListFairQueues].
type ListFairQueuesParams struct {
	// Limit is the page size; 0 means [DefaultPageSize].
	Limit int
	// After is the last key of the previous page ("" for the first).
	After string
}

// FairQueueLister lists the per-key queues of fair shares, by key. Both
// backends implement it.
type FairQueueLister interface {
	ListFairQueues(ctx context.Context, p ListFairQueuesParams) (*FairQueues, error)
}
