package backendtest

import (
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

// Time that passes: a specification in which a lease must run out, a
// deadline pass or a delayed run come due runs its backends on a fake
// clock (Harness.NewBackend's now) and moves it, rather than waiting on
// the wall clock.

// fakeEpoch is where a specification's fake clock starts: a year away
// from the wall clock, so that a backend reading the wall clock where it
// should read its injected one is caught (its leases, deadlines and
// timestamps would be a year off).
var fakeEpoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// newClock returns a fake clock standing at fakeEpoch.
func newClock() *clock.Fake { return clock.NewFake(fakeEpoch) }

// newBackendOn returns a backend in a fresh namespace whose clock is clk.
func (s *suite) newBackendOn(t *testing.T, clk *clock.Fake) backend.Backend {
	t.Helper()
	return s.backendInOn(t, newNamespace(), clk)
}

// expireLease shortens worker's lease on runID to a second and moves clk
// past its end: the run is claimable again, while the other runs claimed
// under longLease keep their leases.
func expireLease(t testing.TB, clk *clock.Fake, b backend.Backend, runID, worker string) {
	t.Helper()
	const lease = time.Second
	err := b.ExtendWorkflowRunLease(t.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: runID, WorkerID: worker, LeaseDuration: lease})
	if err != nil {
		t.Fatalf("ExtendWorkflowRunLease(%s, %v): %v", runID, lease, err)
	}
	clk.Advance(lease + time.Millisecond)
}

// requireTimeAt fails unless got is set and equal to want (to the
// millisecond timestamps are stored with); it returns got, to be copied
// into an expected record. Times written on a fake clock are exact.
func requireTimeAt(t testing.TB, what string, got *time.Time, want time.Time) *time.Time {
	t.Helper()
	if got == nil || !got.Equal(ms(want)) {
		t.Fatalf("%s = %v, want %s", what, got, ms(want).Format(time.RFC3339Nano))
	}
	return got
}
