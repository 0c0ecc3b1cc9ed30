package backend

import (
	"context"
	"fmt"
	"time"
)

// Debounce collapses a burst of starts of one workflow with one key into
// one run, as DBOS's Debouncer and Inngest's debounce do: the run waits
// until no start with the key came for Period, and at most until MaxDelay
// after the first start of the burst. Docs: docs/debounce-and-batching.md.
type Debounce struct {
	// Key names the burst within the workflow (valid text of 1 to
	// [MaxDebounceKeyLength] bytes). Starts of other workflows never
	// share a burst, whatever their keys.
	Key string
	// Period is how long the run waits after the latest start of the
	// burst: each start moves its due time to now + Period. At least
	// [MinDebouncePeriod].
	Period time.Duration
	// MaxDelay bounds the wait from the first start of the burst: the
	// run is due at the latest at first start + MaxDelay, a deadline
	// fixed then and stored on the run, so that a later start cannot move
	// it (Trigger.dev evaluates its maxDelay per call, which a call with
	// another value breaks). At least Period (a smaller one could never
	// collapse anything, as Trigger.dev #4521 found); 0 means
	// [DefaultDebounceMaxDelay]; at most [MaxDebounceMaxDelay].
	MaxDelay time.Duration
	// Leading keeps the first start's input; false (the default,
	// "trailing", as DBOS and Inngest) gives the run the latest start's.
	Leading bool
}

// Debounce limits.
const (
	// MaxDebounceKeyLength is the longest debounce key, in bytes.
	MaxDebounceKeyLength = 1024
	// MinDebouncePeriod is the shortest period: timestamps are stored to
	// the millisecond.
	MinDebouncePeriod = time.Millisecond
	// DefaultDebounceMaxDelay is the max delay of a [Debounce] that
	// gives none: a steady stream of starts cannot postpone the run
	// forever (Trigger.dev's docs warn of that trap).
	DefaultDebounceMaxDelay = time.Hour
	// MaxDebounceMaxDelay is the longest max delay, as Inngest's longest
	// debounce period (7 days).
	MaxDebounceMaxDelay = 7 * 24 * time.Hour
)

// Validate checks d and returns it with its defaults applied: an error
// wrapping [ErrInvalidArgument] (a *FieldError naming the debounce field)
// for an empty or invalid key, a period under [MinDebouncePeriod], a max
// delay above [MaxDebounceMaxDelay] or under the period.
func (d Debounce) Validate() (Debounce, error) {
	if err := checkName("debounce.key", d.Key, MaxDebounceKeyLength, true); err != nil {
		return d, err
	}
	if d.Period < MinDebouncePeriod {
		return d, &FieldError{Field: "debounce.period", Value: d.Period.String(), Reason: fmt.Sprintf("must be at least %v", MinDebouncePeriod)}
	}
	if d.MaxDelay == 0 {
		d.MaxDelay = max(DefaultDebounceMaxDelay, d.Period)
	}
	if d.MaxDelay > MaxDebounceMaxDelay {
		return d, &FieldError{Field: "debounce.maxDelay", Value: d.MaxDelay.String(), Reason: fmt.Sprintf("must be at most %v", MaxDebounceMaxDelay)}
	}
	if d.MaxDelay < d.Period {
		return d, &FieldError{Field: "debounce.maxDelay", Value: d.MaxDelay.String(),
			Reason: fmt.Sprintf("is shorter than the period %v: the run would always start at the max delay, so nothing could be collapsed", d.Period)}
	}
	return d, nil
}

// Debouncer is an optional capability of a [Backend]: debounced starts.
// Both built-in backends implement it.
//
// A debounced run is an ordinary pending run whose available_at is in the
// future, with its debounce key and deadline in columns of this SDK's own
// (go migration 20): no claim, the TypeScript SDK's included, takes it
// before it is due. While it is pending its key is held, by a partial
// unique index on (namespace, workflow, key) over pending keyed runs; the
// claim that starts it takes it out of pending, which frees the key
// (nothing else to clean up), so the next start opens a new burst.
type Debouncer interface {
	// DebounceWorkflowRun starts p under d: when a pending run of
	// p.WorkflowName holds d.Key, one statement moves its due time to
	// min(now + d.Period, its deadline) and (trailing) replaces its input
	// with p.Input, and that run is returned with Debounced set;
	// otherwise a run is created as by CreateWorkflowRun, due at now +
	// d.Period, with the deadline now + d.MaxDelay, under the unique
	// index (a create that loses a race to another loops and extends).
	// p.AvailableAt and p.IdempotencyKey must be nil (an error wrapping
	// [ErrInvalidArgument] otherwise: a delay is the debounce's, and an
	// idempotency key would decide the run another way). A run that is
	// extended keeps its version, priority, concurrency key, deadline and
	// search attributes: only its input and due time change. A paused
	// pending run keeps collecting the burst (its saved due time moves);
	// a canceled one has left pending and no longer holds the key.
	DebounceWorkflowRun(ctx context.Context, p CreateWorkflowRunParams, d Debounce) (*DebouncedRun, error)
	// ListDebouncedRuns lists the pending debounced runs of the
	// namespace, soonest due first, at most limit (0: [DefaultPageSize]).
	ListDebouncedRuns(ctx context.Context, limit int) ([]DebouncedRun, error)
}

// DebouncedRun is a pending debounced run, as [Debouncer] returns it.
type DebouncedRun struct {
	// Run is the run as stored after the call.
	Run *WorkflowRun `json:"run"`
	// Key is the debounce key it holds.
	Key string `json:"key"`
	// DueAt is when it becomes claimable (its available_at, or the due
	// time saved aside while it waits for admission or is paused).
	DueAt time.Time `json:"dueAt"`
	// Deadline is the latest due time of the burst: its first start +
	// max delay.
	Deadline time.Time `json:"deadline"`
	// Debounced is true when the call joined an existing burst (the run
	// was extended), false when it created the run.
	Debounced bool `json:"debounced"`
}

// ValidateDebounceStart checks the create parameters of a debounced start
// besides [CreateWorkflowRunParams.Validate]: no start time nor
// idempotency key (see [Debouncer.DebounceWorkflowRun]), nor singleton
// (a burst's later starts extend its run without the singleton's admission).
func ValidateDebounceStart(p CreateWorkflowRunParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.IdempotencyKey != nil {
		return &FieldError{Field: "idempotencyKey", Value: shown(*p.IdempotencyKey),
			Reason: "cannot be combined with debounce on one start: the key would return an earlier run while the debounce extends another"}
	}
	if p.AvailableAt != nil {
		return &FieldError{Field: "availableAt", Value: p.AvailableAt.Format(time.RFC3339Nano),
			Reason: "cannot be combined with debounce: a debounced run is due a period after the latest start"}
	}
	if p.Singleton != nil {
		return &FieldError{Field: "singleton", Value: shown(p.Singleton.Key),
			Reason: "cannot be combined with debounce on one start: a burst's later starts extend its pending run without the singleton's admission"}
	}
	return nil
}
