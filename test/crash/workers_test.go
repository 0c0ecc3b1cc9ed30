package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Settings of the shared-database test: a lease long enough that no
// heartbeat delay on a loaded machine loses one (so every step runs exactly
// once), and a little simulated work per step so the workers' executions
// interleave.
const (
	sharedWorkers     = 3
	sharedRuns        = 200
	sharedConcurrency = 8
	sharedLease       = 20 * time.Second
	sharedHeartbeat   = time.Second
	sharedGrace       = 5 * time.Second
	sharedStepWork    = 2 * time.Millisecond
)

func TestWorkerProcessesShareOnePostgresNamespace(t *testing.T) {
	t.Parallel()
	tg := postgresTarget(t)
	client := tg.open(t)
	stepLog := filepath.Join(t.TempDir(), "steps.log")
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog, StepWork: sharedStepWork,
		Concurrency: sharedConcurrency, LeaseDuration: sharedLease, HeartbeatInterval: sharedHeartbeat,
		MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: sharedGrace,
	}
	workers := make([]*workerProcess, sharedWorkers)
	pids := map[int]bool{}
	for i := range workers {
		workers[i] = startWorkerProcess(t, cfg)
		pids[workers[i].pid()] = true
	}
	anyExited := func() error {
		for _, w := range workers {
			if w.exited() {
				return fmt.Errorf("worker process %d exited on its own: %v", w.pid(), w.cmd.ProcessState)
			}
		}
		return nil
	}
	waitFor(t, time.Minute, "the worker processes to be ready", func() (bool, error) {
		if err := anyExited(); err != nil {
			return false, err
		}
		events, err := readStepLog(stepLog)
		return len(readyPIDs(events)) == sharedWorkers, err
	})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	started := time.Now()
	handles := make([]*ow.Handle[int], sharedRuns)
	for i := range handles {
		h, err := diamondWorkflow.Start(ctx, client, i)
		if err != nil {
			t.Fatalf("start run %d: %v", i, err)
		}
		handles[i] = h
	}
	waitFor(t, 4*time.Minute, fmt.Sprintf("all %d runs to finish", sharedRuns), func() (bool, error) {
		if err := anyExited(); err != nil {
			return false, err
		}
		c, err := client.CountRuns(ctx)
		return c.Completed+c.Failed+c.Canceled == sharedRuns, err
	})
	t.Logf("%d runs finished on %d worker processes in %v", sharedRuns, sharedWorkers, time.Since(started).Round(time.Millisecond))

	events, err := readStepLog(stepLog)
	if err != nil {
		t.Fatal(err)
	}
	execs := executions(events)
	runIDs := map[string]int{} // run id → input
	for i, h := range handles {
		runIDs[h.ID] = i
	}

	t.Run("every run completes once, claimed once, with the right output", func(t *testing.T) {
		for i, h := range handles {
			run, err := client.GetRun(ctx, h.ID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status.Normalize() != backend.RunCompleted {
				t.Errorf("run %d (%s) is %s, want completed (error: %s)", i, h.ID, run.Status, run.Error)
				continue
			}
			var out int
			if err := json.Unmarshal(run.Output, &out); err != nil || out != diamondOutput(i) {
				t.Errorf("run %d (%s) output = %s, want %d", i, h.ID, run.Output, diamondOutput(i))
			}
			if run.Attempts != 1 {
				t.Errorf("run %d (%s) was claimed %d times, want once", i, h.ID, run.Attempts)
			}
		}
	})

	t.Run("no step of a run is ever executed by two workers at once", func(t *testing.T) {
		for key, es := range execs {
			for _, pair := range overlapping(es) {
				t.Errorf("step %s: executions overlap: %v and %v", key, pair[0], pair[1])
			}
		}
	})

	t.Run("every step is executed exactly once, to its end, by one of the workers", func(t *testing.T) {
		for id := range runIDs {
			for _, key := range diamondSteps {
				es := execs[stepKey{id, key}]
				if len(es) != 1 || es[0].End.IsZero() || !pids[es[0].PID] {
					t.Errorf("step %s/%s executions: %v, want exactly one, ended, by a worker process", id, key, es)
				}
			}
		}
		for key := range execs {
			if _, ok := runIDs[key.RunID]; !ok {
				t.Errorf("step %s executed for a run this test did not start", key)
			}
		}
	})

	t.Run("the backend records exactly one completed attempt per step", func(t *testing.T) {
		for id := range runIDs {
			attempts, err := listSteps(ctx, client, id)
			if err != nil {
				t.Fatal(err)
			}
			byStep := attemptsByStep(attempts)
			if len(attempts) != len(diamondSteps) {
				t.Errorf("run %s has %d step attempts, want %d", id, len(attempts), len(diamondSteps))
			}
			for _, key := range diamondSteps {
				if got := byStep[key]; len(got) != 1 || got[0].Status.Normalize() != backend.StepCompleted {
					t.Errorf("run %s step %s attempts: %v, want one completed", id, key, summarize(got))
				}
			}
		}
	})

	t.Run("the runs are shared between the worker processes", func(t *testing.T) {
		perPID := map[int]int{}
		for _, es := range execs {
			for _, e := range es {
				perPID[e.PID]++
			}
		}
		var dist []string
		for pid, n := range perPID {
			dist = append(dist, fmt.Sprintf("pid %d: %d", pid, n))
		}
		sort.Strings(dist)
		t.Logf("step executions per worker process: %v", dist)
		if len(perPID) < 2 {
			t.Errorf("only %d worker process executed steps, want the work shared", len(perPID))
		}
	})

	t.Run("the workers exit with status 0 within their grace period on SIGTERM", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Go(func() {
				state, err := w.signalAndWait(syscall.SIGTERM, sharedGrace+5*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if state.ExitCode() != 0 {
					t.Errorf("worker process %d ended with %v, want exit status 0", w.pid(), state)
				}
			})
		}
		wg.Wait()
	})
}
