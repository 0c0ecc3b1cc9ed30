package backend

import (
	"encoding/json"
	"math"
	"time"
)

// RetryPolicy is an exponential backoff policy, as in OpenWorkflow:
// the delay before retry n (n >= 1) is
// min(InitialInterval × BackoffCoefficient^(n−1), MaximumInterval).
type RetryPolicy struct {
	// InitialInterval is the delay before the first retry; must be > 0.
	InitialInterval time.Duration `json:"initialInterval"`
	// BackoffCoefficient multiplies the delay after each failure; must be
	// finite and > 0.
	BackoffCoefficient float64 `json:"backoffCoefficient"`
	// MaximumInterval caps the delay; must be > 0.
	MaximumInterval time.Duration `json:"maximumInterval"`
	// MaximumAttempts is the total number of attempts allowed, the first
	// included; 0 means unlimited.
	MaximumAttempts int `json:"maximumAttempts"`
}

// Default policies, as in OpenWorkflow.
var (
	// DefaultStepRetryPolicy: 1 s, ×2, at most 100 s, 10 attempts.
	DefaultStepRetryPolicy = RetryPolicy{time.Second, 2, 100 * time.Second, 10}
	// DefaultWorkflowRetryPolicy: 1 s, ×2, at most 100 s, 1 attempt
	// (workflow-level retries are off).
	DefaultWorkflowRetryPolicy = RetryPolicy{time.Second, 2, 100 * time.Second, 1}
	// MissingDefinitionRetryPolicy reschedules a run whose workflow is not
	// registered on the claiming worker: 5 s, ×2, at most 5 min, forever.
	MissingDefinitionRetryPolicy = RetryPolicy{5 * time.Second, 2, 5 * time.Minute, 0}
	// NoRetryPolicy fails at the first failure.
	NoRetryPolicy = RetryPolicy{time.Second, 2, 100 * time.Second, 1}
)

// WithDefaults returns p with every invalid field replaced by the field of
// def, as OpenWorkflow's resolveRetryPolicy: intervals must be > 0, the
// coefficient finite and > 0, MaximumAttempts >= 0 (0 is kept: it means
// unlimited). So a zero interval or coefficient means "the default".
func (p RetryPolicy) WithDefaults(def RetryPolicy) RetryPolicy {
	if p.InitialInterval <= 0 {
		p.InitialInterval = def.InitialInterval
	}
	if !(p.BackoffCoefficient > 0) || math.IsInf(p.BackoffCoefficient, 0) {
		p.BackoffCoefficient = def.BackoffCoefficient
	}
	if p.MaximumInterval <= 0 {
		p.MaximumInterval = def.MaximumInterval
	}
	if p.MaximumAttempts < 0 {
		p.MaximumAttempts = def.MaximumAttempts
	}
	return p
}

// Delay returns the backoff before retry number attempt (1-based):
// min(InitialInterval × BackoffCoefficient^(attempt−1), MaximumInterval).
func (p RetryPolicy) Delay(attempt int) time.Duration {
	exp := attempt - 1
	if exp < 0 {
		exp = 0
	}
	d := float64(p.InitialInterval) * math.Pow(p.BackoffCoefficient, float64(exp))
	if d > float64(p.MaximumInterval) || math.IsInf(d, 0) || math.IsNaN(d) {
		return p.MaximumInterval
	}
	return time.Duration(d)
}

// DeadlineExceededError is the error stored on a run failed because its
// deadline passed, as in OpenWorkflow.
var DeadlineExceededError = json.RawMessage(`{"message":"Workflow run deadline exceeded"}`)

// FailedRunUpdate is the outcome of a failure: a retry at RetryAt, or a
// terminal failure with Error.
type FailedRunUpdate struct {
	// Terminal is true when the run fails for good.
	Terminal bool
	// RetryAt is when the run becomes pending-claimable again (zero when
	// Terminal).
	RetryAt time.Time
	// Error is the error to store (the deadline error replaces the
	// original one when the deadline has passed).
	Error json.RawMessage
}

// ComputeFailedRunUpdate decides what a failure does, as OpenWorkflow's
// computeFailedWorkflowRunUpdate: attempts is the number of attempts made so
// far (the run's attempts column for workflow failures, the failed count of
// the step name for step failures).
//
//  1. now >= deadline: terminal, with the deadline error;
//  2. MaximumAttempts > 0 and attempts >= MaximumAttempts: terminal;
//  3. now + Delay(attempts) >= deadline: terminal;
//  4. otherwise retry at now + Delay(attempts).
func ComputeFailedRunUpdate(p RetryPolicy, attempts int, deadline *time.Time, errJSON json.RawMessage, now time.Time) FailedRunUpdate {
	if deadline != nil && !now.Before(*deadline) {
		return FailedRunUpdate{Terminal: true, Error: DeadlineExceededError}
	}
	if p.MaximumAttempts > 0 && attempts >= p.MaximumAttempts {
		return FailedRunUpdate{Terminal: true, Error: errJSON}
	}
	next := now.Add(p.Delay(attempts))
	if deadline != nil && !next.Before(*deadline) {
		return FailedRunUpdate{Terminal: true, Error: errJSON}
	}
	return FailedRunUpdate{RetryAt: next, Error: errJSON}
}
