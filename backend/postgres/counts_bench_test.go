package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// BenchmarkCountTriggers measures what the run-count triggers of go
// migration 6 cost the hot path: the whole life of N runs per op —
// created (one statement), claimed (one), a heartbeat each, then one step
// and the completion of each in one group commit — in a schema with the
// triggers and in one without them, alternately within one benchmark so
// that both run under the same load (this machine is shared): it reports
// each one's time per op and their ratio.
//
//	go test ./backend/postgres -run '^$' -bench CountTriggers -benchtime 300x
func BenchmarkCountTriggers(b *testing.B) {
	ctx := context.Background()
	pool, with := scratchSchema(b, "ow_trig_")
	_, without := scratchSchema(b, "ow_notrig_")
	for _, s := range []string{with, without} {
		if err := Migrate(ctx, pool, s); err != nil {
			b.Fatal(err)
		}
	}
	for _, trigger := range []string{"inserted", "updated", "deleted", "truncated"} {
		if _, err := pool.Exec(ctx, `DROP TRIGGER "openworkflow_go_count_`+trigger+`_runs" ON `+quoteIdent(without)+`."workflow_runs"`); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{1, 50} {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			ns := id.New("ns")
			lives := make([]func(), 2)
			for i, schema := range []string{with, without} {
				be, err := newBackend(pool, Options{Schema: schema, NamespaceID: ns})
				if err != nil {
					b.Fatal(err)
				}
				lives[i] = func() { runLives(b, be, n) }
			}
			var spent [2]time.Duration
			for i := 0; b.Loop(); i++ {
				// Alternate which goes first, so neither always follows the other.
				for j := range 2 {
					k := (i + j) % 2
					start := time.Now()
					lives[k]()
					spent[k] += time.Since(start)
				}
			}
			b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "with-ns/op")
			b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "without-ns/op")
			b.ReportMetric(float64(spent[0])/float64(spent[1]), "with/without")
		})
	}
}

// runLives runs the whole life of n runs on be: created (one statement),
// claimed (one), a heartbeat each, then one step and the completion of
// each in one group commit.
func runLives(b *testing.B, be *Backend, n int) {
	ctx := context.Background()
	params := make([]backend.CreateWorkflowRunParams, n)
	workers := make([]string, n)
	for i := range params {
		params[i] = backend.CreateWorkflowRunParams{WorkflowName: "bench", Input: json.RawMessage(`{"i":1}`)}
		workers[i] = id.New("w")
	}
	if _, err := be.CreateWorkflowRuns(ctx, params); err != nil {
		b.Fatal(err)
	}
	runs, err := be.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: time.Hour})
	if err != nil || len(runs) != n {
		b.Fatalf("claim %d runs: got %d, %v", n, len(runs), err)
	}
	groups := make([][]backend.Write, n)
	for i, r := range runs {
		if err := be.ExtendWorkflowRunLease(ctx, backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: r.ID, WorkerID: *r.WorkerID, LeaseDuration: time.Hour}); err != nil {
			b.Fatal(err)
		}
		groups[i] = []backend.Write{
			{Kind: backend.WriteInsertStep, WorkflowRunID: r.ID, WorkerID: *r.WorkerID,
				Step: &backend.StepAttempt{ID: id.New(id.PrefixStep), StepName: "only", Kind: backend.StepFunction,
					Status: backend.StepCompleted, Output: json.RawMessage(`{"i":1}`)}},
			{Kind: backend.WriteCompleteRun, WorkflowRunID: r.ID, WorkerID: *r.WorkerID, Output: json.RawMessage(`{"done":true}`)},
		}
	}
	for i, err := range be.ApplyWrites(ctx, groups) {
		if err != nil {
			b.Fatalf("group %d: %v", i, err)
		}
	}
}
