package crash

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

var (
	waitEventSpec = ow.Spec{Name: "crashtest-waitevent"}
	// waitEventWorkflow waits for the "crash.paid" event of its order,
	// then runs the step "after-event" and returns the event's id.
	waitEventWorkflow = ow.Declare[string, string](waitEventSpec)
)

// newWaitEventDefinition is waitEventWorkflow's body, registered by the
// worker processes.
func newWaitEventDefinition(r *stepRecorder) ow.Definition {
	return ow.Define(waitEventSpec, func(ctx ow.Context, order string) (string, error) {
		ev, ok, err := ow.WaitForEvent[map[string]any](ctx, "crash.paid", `event.data.order == input`, time.Hour)
		if err != nil || !ok {
			return "", fmt.Errorf("wait: received %v, %w", ok, err)
		}
		if _, err := run(ctx, r, "after-event", func() int { return 1 }); err != nil {
			return "", err
		}
		return ev.ID, nil
	})
}

// TestWorkerProcessKilledWhileRunsWaitForEvents: three runs wait for their
// order's event in a worker process. One event is published while the
// worker lives: its run wakes and the worker is killed with SIGKILL in the
// step after the wait. The other two events are published while no worker
// lives (the runs are parked). A second process finishes all three: each
// returns the one event published for it (the killed run's replay returns
// the memoised event, not a later one), each wait took exactly one event,
// and each event woke exactly one run.
func TestWorkerProcessKilledWhileRunsWaitForEvents(t *testing.T) {
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
				Concurrency: 4, LeaseDuration: crashLease, HeartbeatInterval: crashHeartbeat,
				MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: crashGrace,
			}
			blocking := cfg
			blocking.BlockStep = "after-event"
			first := startWorkerProcess(t, blocking)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			orders := []string{"o-0", "o-1", "o-2"}
			var hs []*ow.Handle[string]
			for _, o := range orders {
				h, err := waitEventWorkflow.Start(ctx, client, o)
				if err != nil {
					t.Fatal(err)
				}
				hs = append(hs, h)
			}
			for _, h := range hs {
				waitFor(t, time.Minute, "run "+h.ID+" to park in its event wait", func() (bool, error) {
					r, err := client.GetRun(ctx, h.ID)
					if err != nil || r.WorkerID != nil {
						return false, err
					}
					steps, err := listSteps(ctx, client, h.ID)
					for _, s := range steps {
						if s.Kind == backend.StepEventWait && s.Status == backend.StepRunning {
							return true, err
						}
					}
					return false, err
				})
			}
			published := map[string]string{} // order → its first event's id
			var all []string
			pub := func(order string) {
				p, err := client.PublishEvent(ctx, "crash.paid", map[string]string{"order": order}, ow.PublishOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := published[order]; !ok {
					published[order] = p.ID
				}
				all = append(all, p.ID)
			}
			pub("o-0")
			waitFor(t, time.Minute, "the first worker to block in o-0's step after its wait", func() (bool, error) {
				events, err := readStepLog(stepLog)
				for _, ev := range events {
					if ev.Kind == eventStart && ev.Key == "after-event" && ev.PID == first.pid() {
						return true, err
					}
				}
				return false, err
			})
			if _, err := first.signalAndWait(syscall.SIGKILL, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			pub("o-1")
			pub("o-2")
			pub("o-0") // a second event for o-0: its wait took the first one
			startWorkerProcess(t, cfg)

			for i, h := range hs {
				out, err := h.Result(ctx)
				if err != nil || out != published[orders[i]] {
					t.Fatalf("run of %s returned %q, %v; want the event %s published for it", orders[i], out, err, published[orders[i]])
				}
			}
			woken := map[string]int{}
			for _, id := range all {
				ev, err := client.GetEvent(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range ev.Effects {
					if f.Kind == backend.EffectWoke {
						woken[*f.WorkflowRunID]++
					}
				}
			}
			for _, h := range hs {
				if woken[h.ID] != 1 {
					t.Errorf("run %s was woken %d times, want once", h.ID, woken[h.ID])
				}
			}
			events, err := readStepLog(stepLog)
			if err != nil {
				t.Fatal(err)
			}
			starts := map[string]int{}
			for _, ev := range events {
				if ev.Kind == eventStart && ev.Key == "after-event" {
					starts[ev.RunID]++
				}
			}
			if starts[hs[0].ID] != 2 || starts[hs[1].ID] != 1 || starts[hs[2].ID] != 1 {
				t.Fatalf("after-event starts per run %v; want o-0's twice (killed, taken over), the others once", starts)
			}
		})
	}
}
