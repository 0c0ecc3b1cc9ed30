package backendtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// storeStatus writes a stored status as is, skipping the test when the
// harness cannot.
func (s *suite) storeStatus(t *testing.T, b backend.Backend, runID, status string) {
	t.Helper()
	if s.h.StoreStatus == nil {
		t.Skip("Harness.StoreStatus is nil: cannot write a legacy status")
	}
	s.h.StoreStatus(t, b, runID, status)
}

// Older OpenWorkflow versions stored a parked run as "sleeping" and a
// completed one as "succeeded"; the database is shared with them, so every
// backend reads those rows under the current names (RunStatus.Normalize).
func testLegacyStatuses(t *testing.T, s *suite) {
	t.Run("counts, lists, cancels and claims sleeping and succeeded runs as running and completed ones", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		sleeping := createRun(t, b, backend.CreateWorkflowRunParams{})
		succeeded := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(time.Now().Add(farFuture))})
		s.storeStatus(t, b, sleeping.ID, string(backend.RunSleeping))
		s.storeStatus(t, b, succeeded.ID, string(backend.RunSucceeded))

		requireCounts(t, "legacy statuses", b, backend.RunCounts{Running: 1, Completed: 1})
		for status, id := range map[backend.RunStatus]string{backend.RunRunning: sleeping.ID, backend.RunCompleted: succeeded.ID} {
			page := listRuns(t, b, backend.ListWorkflowRunsParams{Status: status})
			if len(page.Data) != 1 || page.Data[0].ID != id || page.Data[0].Status != status {
				t.Fatalf("runs listed as %s = %+v, want run %s, as %s", status, page.Data, id, status)
			}
			if got := getRun(t, b, id); got.Status != status {
				t.Fatalf("GetWorkflowRun(%s).Status = %s, want %s", id, got.Status, status)
			}
		}
		_, err := b.CancelWorkflowRun(t.Context(), succeeded.ID)
		requireErrorIs(t, "cancel of a succeeded run", err, backend.ErrRunTerminal)
		claimRun(t, b, newWorkerID(), longLease, sleeping.ID)
	})

	t.Run("lists runs of every stored status under the current names, merged in created_at and id order, the same pages forward and back", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		stored := []backend.RunStatus{backend.RunPending, backend.RunRunning, backend.RunSleeping, backend.RunCompleted,
			backend.RunSucceeded, backend.RunFailed, backend.RunCanceled}
		type row struct {
			id, name string
			status   backend.RunStatus
			created  time.Time
		}
		// Twenty runs per created_at, of several statuses and names, and
		// in created_at groups that are not in id order.
		base := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
		var rows []row
		for i := range 100 {
			r := row{name: []string{"a", "b"}[i%2], status: stored[(i*3)%len(stored)], created: base.Add(time.Duration((i*37)%100/20) * time.Second)}
			run := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: r.name})
			r.id = run.ID
			s.ageRun(t, b, run.ID, run.CreatedAt.Sub(r.created))
			s.storeStatus(t, b, run.ID, string(r.status))
			rows = append(rows, r)
		}
		slices.SortFunc(rows, func(x, y row) int {
			if c := y.created.Compare(x.created); c != 0 {
				return c
			}
			return strings.Compare(y.id, x.id)
		})
		for _, r := range listRuns(t, b, backend.ListWorkflowRunsParams{Limit: len(rows)}).Data {
			if i := slices.IndexFunc(rows, func(x row) bool { return x.id == r.ID }); i < 0 || r.Status != rows[i].status.Normalize() {
				t.Fatalf("run %s listed with status %q", r.ID, r.Status)
			}
		}
		for _, status := range []backend.RunStatus{"", backend.RunPending, backend.RunRunning, backend.RunCompleted, backend.RunFailed,
			backend.RunCanceled, backend.RunSleeping, backend.RunSucceeded} {
			for _, name := range []string{"", "a", "b", "none"} {
				want := []string{}
				for _, r := range rows {
					if (status == "" || r.status.Normalize() == status.Normalize()) && (name == "" || r.name == name) {
						want = append(want, r.id)
					}
				}
				for _, limit := range []int{1, 3, 4, 7, 100} {
					t.Run(fmt.Sprintf("status %q, name %q, limit %d", status, name, limit), func(t *testing.T) {
						requirePaginates(t, b, backend.ListWorkflowRunsParams{Status: status, WorkflowName: name, Limit: limit}, want)
					})
				}
			}
		}
	})
}
