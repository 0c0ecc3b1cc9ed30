// Package backendtest is the conformance suite of the storage seam: every
// [backend.Backend] implementation runs it from its own tests, and a new
// backend is done when it passes.
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, backendtest.Harness{
//			NewBackend: func(t testing.TB, ns string) backend.Backend { ... },
//			AgeRun:     func(t testing.TB, b backend.Backend, runID string, d time.Duration) { ... },
//		})
//	}
//
// Each specification is a parallel subtest that makes its own backend(s) in
// a fresh random namespace, so the harness may share one database between
// all of them. Two backends made with the same namespace stand for two
// processes (two workers, or a client and a worker) and must see the same
// data.
//
// The suite never sleeps to wait for an event: where time must pass in the
// database (a lease expiring) it uses tiny leases and polls the condition
// with a deadline; where an event is awaited it selects with a timeout.
// Timestamps written by the backend are compared with the test's clock
// within [clockSlack], so the database clock must be close to the process
// clock (the same host, or NTP).
package backendtest

import (
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Harness adapts one backend implementation to the suite.
type Harness struct {
	// NewBackend returns a backend bound to namespaceID; the suite closes it (t.Cleanup).
	NewBackend func(t testing.TB, namespaceID string) backend.Backend
	// AgeRun moves a run's created_at back by d (to test the idempotency window).
	AgeRun func(t testing.TB, b backend.Backend, runID string, d time.Duration)
}

// suite carries the harness to the specifications.
type suite struct {
	h Harness
}

// Run runs every specification of the suite against the backends made by h.
// Tests needing h.AgeRun are skipped when it is nil; the group-commit
// specifications (ApplyWrites, CreateWorkflowRuns) are skipped when the
// backend does not implement [backend.Batcher].
func Run(t *testing.T, h Harness) {
	if h.NewBackend == nil {
		t.Fatal("backendtest: Harness.NewBackend is nil")
	}
	s := &suite{h: h}
	areas := []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"CreateWorkflowRun", testCreateWorkflowRun},
		{"GetWorkflowRun", testGetWorkflowRun},
		{"JSON values", testJSONRoundTrip},
		{"ListWorkflowRuns", testListWorkflowRuns},
		{"CountWorkflowRuns", testCountWorkflowRuns},
		{"ClaimWorkflowRuns", testClaimWorkflowRuns},
		{"NextDueAt", testNextDueAt},
		{"ExtendWorkflowRunLease", testExtendWorkflowRunLease},
		{"Deadlines", testDeadlines},
		{"SleepWorkflowRun", testSleepWorkflowRun},
		{"Parent wake-ups", testParentWakeUps},
		{"CompleteWorkflowRun", testCompleteWorkflowRun},
		{"FailWorkflowRun", testFailWorkflowRun},
		{"RescheduleWorkflowRunAfterFailedStepAttempt", testRescheduleWorkflowRun},
		{"CancelWorkflowRun", testCancelWorkflowRun},
		{"Step attempts", testStepAttempts},
		{"ListStepAttempts", testListStepAttempts},
		{"ListStepHistories", testListStepHistories},
		{"SetStepAttemptChildWorkflowRun", testSetStepAttemptChildWorkflowRun},
		{"Ownership fencing", testOwnershipFencing},
		{"SendSignal", testSendSignal},
		{"GetSignalDelivery", testGetSignalDelivery},
		{"Subscribe", testSubscribe},
		{"Namespaces", testNamespaces},
		{"ApplyWrites", testApplyWrites},
		{"CreateWorkflowRuns", testCreateWorkflowRuns},
	}
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			a.run(t, s)
		})
	}
}
