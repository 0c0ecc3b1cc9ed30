package crash

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// TestWorkerProcessKilledInAChainThatContinuesAsNew: a worker process
// runs a countdown chain (one step per run, then continue-as-new),
// commits two continuations and is killed with SIGKILL in the third
// run's step; a second process takes the run over after its lease. The
// chain has exactly one successor per link — the continued runs are not
// replayed into a second successor — and ends with the chain's result.
func TestWorkerProcessKilledInAChainThatContinuesAsNew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{
		{"on a SQLite file shared by the processes", sqliteTarget},
		{"on PostgreSQL", postgresTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg := tc.target(t)
			client := tg.open(t)
			stepLog := filepath.Join(t.TempDir(), "steps.log")
			cfg := workerConfig{
				Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
				Concurrency: 1, LeaseDuration: crashLease, HeartbeatInterval: crashHeartbeat,
				MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: crashGrace,
			}
			blocking := cfg
			blocking.BlockStep = "tick-1"
			first := startWorkerProcess(t, blocking)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			h, err := countdownWorkflow.Start(ctx, client, countdown{Left: 3})
			if err != nil {
				t.Fatalf("start run: %v", err)
			}
			waitFor(t, time.Minute, "the first worker to block in the third run's step tick-1", func() (bool, error) {
				events, err := readStepLog(stepLog)
				if err != nil {
					return false, err
				}
				for _, ev := range events {
					if ev.Kind == eventStart && ev.Key == "tick-1" && ev.PID == first.pid() {
						return true, nil
					}
				}
				return false, nil
			})
			if _, err := first.signalAndWait(syscall.SIGKILL, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			startWorkerProcess(t, cfg)

			out, err := h.Result(ctx)
			if err != nil || out != 4 {
				t.Fatalf("Result of the chain = %d, %v; want 4 (four runs)", out, err)
			}
			page, err := client.ListRuns(ctx, backend.ListWorkflowRunsParams{WorkflowName: countdownSpec.Name})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Data) != 4 {
				t.Fatalf("%d runs of the chain's workflow, want exactly 4: one successor per link", len(page.Data))
			}
			runID, links := h.ID, 0
			for {
				r, err := client.GetRun(ctx, runID)
				if err != nil {
					t.Fatal(err)
				}
				next, ok := backend.ContinuedTo(r.Context)
				if !ok {
					break
				}
				links++
				runID = next
			}
			if links != 3 {
				t.Fatalf("the chain from %s has %d links, want 3", h.ID, links)
			}
			events, err := readStepLog(stepLog)
			if err != nil {
				t.Fatal(err)
			}
			starts := map[string]int{}
			for _, ev := range events {
				if ev.Kind == eventStart {
					starts[ev.Key]++
				}
			}
			// The runs that continued before the kill ran their step once;
			// the killed one ran it again in the second process.
			if starts["tick-3"] != 1 || starts["tick-2"] != 1 || starts["tick-1"] != 2 || starts["tick-0"] != 1 {
				t.Fatalf("step executions %v; want tick-3 and tick-2 once, tick-1 twice (killed, then taken over), tick-0 once", starts)
			}
		})
	}
}
