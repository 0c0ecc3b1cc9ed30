package openworkflow

import (
	"encoding/json"
	"testing"
	"time"
)

// TestFailedRunDecidesBetweenARetryAndATerminalFailure is the policy of
// OpenWorkflow's computeFailedWorkflowRunUpdate: the backoff per attempt,
// its cap, the attempt budget, and the deadline.
func TestFailedRunDecidesBetweenARetryAndATerminalFailure(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	stored := json.RawMessage(`{"message":"boom"}`)
	minutely := RetryPolicy{InitialInterval: time.Minute, BackoffCoefficient: 2, MaximumInterval: time.Hour}
	limited := RetryPolicy{InitialInterval: time.Minute, BackoffCoefficient: 2, MaximumInterval: time.Hour, MaximumAttempts: 3}
	in := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	cases := []struct {
		name      string
		policy    RetryPolicy
		attempts  int
		deadline  *time.Time
		wantRetry time.Duration // 0: terminal
		wantError json.RawMessage
	}{
		{"the first failure is retried after the initial interval", minutely, 1, nil, time.Minute, stored},
		{"each attempt multiplies the interval by the coefficient", minutely, 3, nil, 4 * time.Minute, stored},
		{"the interval is capped at the maximum", minutely, 10, nil, time.Hour, stored},
		{"MaximumAttempts 0 retries forever", minutely, 5000, nil, time.Hour, stored},
		{"attempts reaching MaximumAttempts fail for good", limited, 3, nil, 0, stored},
		{"attempts below MaximumAttempts retry", limited, 2, nil, 2 * time.Minute, stored},
		{"the default workflow policy fails at the first failure", DefaultWorkflowRetryPolicy(), 1, nil, 0, stored},
		{"a retry that would come after the deadline is a terminal failure with the run's error", minutely, 1, in(30 * time.Second), 0, stored},
		{"a retry before the deadline is made", minutely, 1, in(2 * time.Minute), time.Minute, stored},
		{"past the deadline the failure is the deadline error, whatever the policy", minutely, 1, in(-time.Millisecond), 0, json.RawMessage(`{"message":"Workflow run deadline exceeded"}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := failedRun(c.policy, c.attempts, c.deadline, stored, now)
			switch {
			case c.wantRetry == 0 && !got.terminal:
				t.Fatalf("a retry at %v, want a terminal failure", got.retryAt)
			case c.wantRetry != 0 && (got.terminal || !got.retryAt.Equal(now.Add(c.wantRetry))):
				t.Fatalf("terminal %v, retry at %v; want a retry at now+%v", got.terminal, got.retryAt, c.wantRetry)
			case string(got.stored) != string(c.wantError):
				t.Fatalf("stored error %s, want %s", got.stored, c.wantError)
			}
		})
	}
}

// TestRetryPolicyFieldsDefaultOneByOne follows OpenWorkflow's
// resolveRetryPolicy: each invalid field takes the default's value alone.
func TestRetryPolicyFieldsDefaultOneByOne(t *testing.T) {
	def := DefaultStepRetryPolicy()
	got := RetryPolicy{BackoffCoefficient: 3, MaximumAttempts: -1}.withDefaults(def)
	want := RetryPolicy{InitialInterval: def.InitialInterval, BackoffCoefficient: 3, MaximumInterval: def.MaximumInterval, MaximumAttempts: def.MaximumAttempts}
	if got != want {
		t.Fatalf("withDefaults = %+v, want %+v", got, want)
	}
	if got := (RetryPolicy{MaximumAttempts: 0}).withDefaults(def).MaximumAttempts; got != 0 {
		t.Fatalf("MaximumAttempts 0 became %d, want 0 (unlimited) kept", got)
	}
}
