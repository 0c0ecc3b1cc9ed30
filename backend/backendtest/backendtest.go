// Package backendtest is the conformance suite of the storage seam: every
// [backend.Backend] implementation runs it from its own tests, and a new
// backend is done when it passes.
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, backendtest.Harness{
//			NewBackend: func(t testing.TB, ns string, now func() time.Time) backend.Backend { ... },
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
// The suite never sleeps to wait for time to pass: where it must (a lease
// running out, a deadline passing, a delayed run coming due) the
// specification runs its backends on a fake clock, given to
// Harness.NewBackend, and moves it; where an event is awaited it selects
// with a timeout. Elsewhere the backends keep their own clocks, and the
// timestamps they write are compared with the test's clock within
// [clockSlack], so the database clock must be close to the process clock
// (the same host, or NTP).
package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Harness adapts one backend implementation to the suite.
type Harness struct {
	// NewBackend returns a backend bound to namespaceID; the suite closes
	// it (t.Cleanup). When now is not nil it is the backend's clock: every
	// time the backend writes, and every comparison it makes with the
	// present (claims, leases, deadlines, the idempotency window), reads
	// now rather than its own clock (postgres.Options.Now,
	// sqlite.Options.Now). Backends of one namespace made within one
	// specification share one clock.
	NewBackend func(t testing.TB, namespaceID string, now func() time.Time) backend.Backend
	// AgeRun moves a run's created_at back by d (to test the idempotency window).
	AgeRun func(t testing.TB, b backend.Backend, runID string, d time.Duration)
	// StoreStatus writes status as is into a run's stored status, as an
	// older OpenWorkflow did ("sleeping", "succeeded"), to test that every
	// backend reads those legacy statuses under their current names.
	StoreStatus func(t testing.TB, b backend.Backend, runID, status string)
	// StoreScheduleWorkflowName writes name as is into a stored
	// schedule's workflow name, bypassing every check, as a row written
	// before the checks existed may hold one, to test that the firing loop
	// skips and reports such a schedule. Nil skips those specifications.
	StoreScheduleWorkflowName func(t testing.TB, b backend.Backend, schedule, name string)
	// InTx runs fn in a transaction of the kind b's
	// [backend.TxStarter] takes, committing it when fn returns nil and
	// rolling it back when fn returns an error, which InTx returns. Nil
	// skips the specifications of CreateWorkflowRunTx.
	InTx func(t testing.TB, b backend.Backend, fn func(ctx context.Context, tx any) error) error
}

// suite carries the harness to the specifications.
type suite struct {
	h Harness
}

// Run runs every specification of the suite against the backends made by h.
// Every worker write is a [backend.Write] applied through ApplyWrites: the
// specifications of a write kind apply it alone (a group in a batch of its
// own, see [Single]) and those of group commit apply it among others.
// Tests needing h.AgeRun or h.StoreStatus are skipped when it is nil, the
// Definitions ones when the backend does not implement
// [backend.DefinitionStore], the Hooks and Streams ones when it does not
// implement [backend.HookStore] and [backend.StreamStore], the Retention
// ones when it does not implement [backend.RunPruner], and the Schedules
// ones when it does not implement [backend.ScheduleStore].
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
		{"CreateWorkflowRun with a claim", testCreateClaim},
		{"GetWorkflowRun", testGetWorkflowRun},
		{"JSON values", testJSONRoundTrip},
		{"ListWorkflowRuns", testListWorkflowRuns},
		{"Run queries", testRunQueries},
		{"Search attributes", testSearchAttributes},
		{"CountWorkflowRuns", testCountWorkflowRuns},
		{"Legacy statuses", testLegacyStatuses},
		{"Write groups", testWriteGroups},
		{"ClaimWorkflowRuns", testClaimWorkflowRuns},
		{"Claim order", testClaimOrder},
		{"NextDueAt", testNextDueAt},
		{"ExtendWorkflowRunLease", testExtendWorkflowRunLease},
		{"ReleaseWorkflowRuns", testReleaseWorkflowRuns},
		{"Deadlines", testDeadlines},
		{"WriteParkRun", testParkRun},
		{"Parent wake-ups", testParentWakeUps},
		{"WriteCompleteRun", testCompleteRun},
		{"WriteFailRun", testFailRun},
		{"WriteRescheduleRun", testRescheduleRun},
		{"CancelWorkflowRun", testCancelWorkflowRun},
		{"RetryWorkflowRun", testRetryWorkflowRun},
		{"Pause and resume", testPauseResume},
		{"Step attempts (WriteInsertStep, WriteFinishStep)", testStepAttempts},
		{"ListStepAttempts", testListStepAttempts},
		{"ListStepHistories", testListStepHistories},
		{"ListBounds", testListBounds},
		{"WriteLinkChild", testLinkChild},
		{"Ownership fencing", testOwnershipFencing},
		{"SendSignal", testSendSignal},
		{"GetSignalDelivery", testGetSignalDelivery},
		{"SignalRun", testSignalRun},
		{"Updates", testUpdates},
		{"Subscribe", testSubscribe},
		{"Namespaces", testNamespaces},
		{"ApplyWrites", testApplyWrites},
		{"CreateWorkflowRuns", testCreateWorkflowRuns},
		{"Definitions", testDefinitions},
		{"Hooks", testHooks},
		{"Streams", testStreams},
		{"Retention", testRetention},
		{"CreateWorkflowRunTx", testCreateWorkflowRunTx},
		{"ForkWorkflowRun", testForkWorkflowRun},
		{"ContinueWorkflowRun", testContinueWorkflowRun},
		{"Schedules", testSchedules},
		{"Priorities", testPriorities},
		{"Limits", testLimits},
		{"Limit audit", testLimitAudit},
		{"Limit backlog", testLimitBacklog},
		{"WorkerRegistry", testWorkerRegistry},
		{"Bulk actions", testBulkActions},
		{"Singleton", testSingleton},
		{"Debounce", testDebounce},
		{"Batching", testBatching},
		{"Fair shares", testFairness},
	}
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			a.run(t, s)
		})
	}
}
