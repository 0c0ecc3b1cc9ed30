package openworkflow_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
)

// realTimeBackends returns a SQLite backend and a PostgreSQL one (in a
// schema of the test's own on the test server) on the real clock,
// for behaviours that both must show. PostgreSQL is left out when
// unreachable and OPENWORKFLOW_SKIP_POSTGRES=1.
func realTimeBackends(t *testing.T) map[string]backend.Backend {
	t.Helper()
	ctx := context.Background()
	lite, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out := map[string]backend.Backend{"sqlite": lite}
	if pgtest.Skipped() {
		t.Log("PostgreSQL left out (OPENWORKFLOW_SKIP_POSTGRES=1)")
		return out
	}
	out["postgres"] = pgtest.Open(t, postgres.Options{MaxConns: 4})
	return out
}

// A worker that claims a run whose workflow it has not registered hands it
// back with OpenWorkflow's backoff, but never fails it before the run's
// own deadline: when the backoff would end past the deadline, the run is
// rescheduled at the deadline (a worker that has the workflow may still
// run it until then), and the deadline sweep fails it at its time.
func TestAnUnregisteredRunIsNeverFailedBeforeItsDeadline(t *testing.T) {
	t.Parallel()
	for name, b := range realTimeBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 1, ID: "no-such-workflow-here", ClaimUnregistered: true})
			client := ow.NewClient(b)
			tick := func() int {
				t.Helper()
				n, err := testhooks.Tick(ctx, w)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			notRegistered := func(r *backend.WorkflowRun, name string) {
				t.Helper()
				var e map[string]any
				_ = json.Unmarshal(r.Error, &e)
				if r.Status != backend.RunPending || r.WorkerID != nil || e["message"] != `Workflow "`+name+`" is not registered` {
					t.Fatalf("run %s after the claim: status %s, worker %v, error %s; want pending, no worker, not registered", r.ID, r.Status, r.WorkerID, r.Error)
				}
			}

			// Far deadline: the usual 5 s backoff.
			far, err := client.StartByName(ctx, "elsewhere-far", "", 1, ow.WithDeadline(time.Now().Add(time.Hour)))
			must(t, err)
			before := time.Now()
			if tick() != 1 {
				t.Fatal("the run was not claimed")
			}
			r := getRun(t, b, far.ID)
			notRegistered(r, "elsewhere-far")
			if lo, hi := before.Add(5*time.Second-time.Millisecond), time.Now().Add(5*time.Second); r.AvailableAt.Before(lo) || r.AvailableAt.After(hi) {
				t.Fatalf("rescheduled at %v, want 5 s after the claim (%v … %v)", r.AvailableAt, lo, hi)
			}
			_, err = client.CancelRun(ctx, far.ID)
			must(t, err)

			// Near deadline (before the backoff ends): rescheduled at the
			// deadline, failed by the sweep once it passed.
			deadline := time.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
			near, err := client.StartByName(ctx, "elsewhere-near", "", 1, ow.WithDeadline(deadline))
			must(t, err)
			if tick() != 1 {
				t.Fatal("the run was not claimed")
			}
			r = getRun(t, b, near.ID)
			notRegistered(r, "elsewhere-near")
			if !r.AvailableAt.Equal(deadline) {
				t.Fatalf("rescheduled at %v, want its deadline %v", r.AvailableAt, deadline)
			}
			waitUntil := time.Now().Add(10 * time.Second)
			for r.Status != backend.RunFailed {
				if time.Now().After(waitUntil) {
					t.Fatalf("run %s still %s 10 s after its deadline", near.ID, r.Status)
				}
				time.Sleep(50 * time.Millisecond)
				tick() // the claim's deadline sweep
				r = getRun(t, b, near.ID)
			}
			var e map[string]any
			_ = json.Unmarshal(r.Error, &e)
			if e["message"] != "Workflow run deadline exceeded" || r.FinishedAt == nil || r.FinishedAt.Before(deadline) {
				t.Fatalf("run failed with %s at %v; want the deadline error, at or after %v", r.Error, r.FinishedAt, deadline)
			}
		})
	}
}

func getRun(t *testing.T, b backend.Backend, id string) *backend.WorkflowRun {
	t.Helper()
	r, err := b.GetWorkflowRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
