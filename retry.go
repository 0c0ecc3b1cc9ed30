package openworkflow

import (
	"encoding/json"
	"math"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// RetryPolicy is an exponential backoff policy, as in OpenWorkflow: the
// delay before retry n (n >= 1) is
// min(InitialInterval × BackoffCoefficient^(n−1), MaximumInterval).
// A zero or invalid interval or coefficient means the default's
// ([DefaultStepRetryPolicy] for a step, [DefaultWorkflowRetryPolicy] for a
// workflow), as OpenWorkflow's resolveRetryPolicy decides.
type RetryPolicy struct {
	// InitialInterval is the delay before the first retry.
	InitialInterval time.Duration `json:"initialInterval"`
	// BackoffCoefficient multiplies the delay after each failure.
	BackoffCoefficient float64 `json:"backoffCoefficient"`
	// MaximumInterval caps the delay.
	MaximumInterval time.Duration `json:"maximumInterval"`
	// MaximumAttempts is the total number of attempts allowed, the first
	// included; 0 means unlimited.
	MaximumAttempts int `json:"maximumAttempts"`
}

// DefaultStepRetryPolicy is the policy of a step that sets none: 1 s, ×2,
// at most 100 s, 10 attempts per step name (as in OpenWorkflow).
func DefaultStepRetryPolicy() RetryPolicy {
	return RetryPolicy{time.Second, 2, 100 * time.Second, 10}
}

// DefaultWorkflowRetryPolicy is the workflow-level policy when a Spec sets
// none: 1 attempt, so an error the workflow function returns fails the run
// (as in OpenWorkflow).
func DefaultWorkflowRetryPolicy() RetryPolicy {
	return RetryPolicy{time.Second, 2, 100 * time.Second, 1}
}

// Engine policies that users do not set.
var (
	// noRetryPolicy fails at the first failure.
	noRetryPolicy = RetryPolicy{time.Second, 2, 100 * time.Second, 1}
	// missingDefinitionRetryPolicy reschedules a run whose workflow is not
	// registered on the claiming worker: 5 s, ×2, at most 5 min, forever,
	// as in OpenWorkflow.
	missingDefinitionRetryPolicy = RetryPolicy{5 * time.Second, 2, 5 * time.Minute, 0}
)

// withDefaults returns p with every invalid field replaced by def's, as
// OpenWorkflow's resolveRetryPolicy: intervals must be > 0, the
// coefficient finite and > 0, MaximumAttempts >= 0 (0 is kept: unlimited).
func (p RetryPolicy) withDefaults(def RetryPolicy) RetryPolicy {
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

// delay returns the backoff before retry number attempt (1-based).
func (p RetryPolicy) delay(attempt int) time.Duration {
	exp := max(attempt-1, 0)
	d := float64(p.InitialInterval) * math.Pow(p.BackoffCoefficient, float64(exp))
	if d > float64(p.MaximumInterval) || math.IsInf(d, 0) || math.IsNaN(d) {
		return p.MaximumInterval
	}
	return time.Duration(d)
}

// failedRunUpdate is what a failure does to a run: a retry at retryAt, or
// a terminal failure, storing stored.
type failedRunUpdate struct {
	terminal bool
	retryAt  time.Time
	stored   json.RawMessage
}

// failedRun decides what a failure does, as OpenWorkflow's
// computeFailedWorkflowRunUpdate: attempts is the number made so far (the
// run's attempts for workflow failures, the failed count of the step name
// for step failures).
//
//  1. now >= deadline: terminal, with the deadline error;
//  2. MaximumAttempts > 0 and attempts >= MaximumAttempts: terminal;
//  3. now + delay(attempts) >= deadline: terminal;
//  4. otherwise a retry at now + delay(attempts).
func failedRun(p RetryPolicy, attempts int, deadline *time.Time, stored json.RawMessage, now time.Time) failedRunUpdate {
	if deadline != nil && !now.Before(*deadline) {
		return failedRunUpdate{terminal: true, stored: backend.DeadlineExceededError()}
	}
	if p.MaximumAttempts > 0 && attempts >= p.MaximumAttempts {
		return failedRunUpdate{terminal: true, stored: stored}
	}
	next := now.Add(p.delay(attempts))
	if deadline != nil && !next.Before(*deadline) {
		return failedRunUpdate{terminal: true, stored: stored}
	}
	return failedRunUpdate{retryAt: next, stored: stored}
}
