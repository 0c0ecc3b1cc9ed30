package crash

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Crash-test worker settings: a short lease so the second process reclaims
// the run soon after the first one dies, and one slot so the first process
// cannot reclaim the run it is blocked in.
const (
	crashLease     = 2 * time.Second
	crashHeartbeat = 500 * time.Millisecond
	crashGrace     = 5 * time.Second
)

// crashScenario is a workflow whose run is killed while one step is in
// flight.
type crashScenario struct {
	name     string
	workflow *ow.Workflow[int, int]
	output   func(int) int
	steps    []string // every step key of the workflow
	block    string   // the step in flight at the crash
	before   []string // the steps completed before the crash
	after    []string // the steps that start only after the crash
}

var crashScenarios = []crashScenario{
	{
		name:     "in the third of four sequential steps",
		workflow: sequenceWorkflow, output: sequenceOutput, steps: sequenceSteps,
		block: blockingStep, before: []string{stepAddOne, stepDouble}, after: []string{stepMinus},
	},
	{
		name:     "in one branch of a parallel pair whose other branch completed",
		workflow: diamondWorkflow, output: diamondOutput, steps: diamondSteps,
		block: stepRight, before: []string{stepPrepare, stepLeft}, after: []string{stepCombine},
	},
}

func TestWorkerProcessKilledMidStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{
		{"on a SQLite file shared by the processes", sqliteTarget},
		{"on PostgreSQL", postgresTarget},
	} {
		for _, sc := range crashScenarios {
			t.Run(tc.name+" "+sc.name, func(t *testing.T) {
				t.Parallel()
				testCrashRecovery(t, tc.target(t), sc)
			})
		}
	}
}

// testCrashRecovery runs the scenario's workflow on a worker process in
// which sc.block never returns, kills the process with SIGKILL once the
// steps sc.before are completed and sc.block is in flight, and lets a second
// worker process finish the run.
func testCrashRecovery(t *testing.T, tg target, sc crashScenario) {
	client := tg.open(t)
	stepLog := filepath.Join(t.TempDir(), "steps.log")
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
		Concurrency: 1, LeaseDuration: crashLease, HeartbeatInterval: crashHeartbeat,
		MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: crashGrace,
	}
	blocking := cfg
	blocking.BlockStep = sc.block
	first := startWorkerProcess(t, blocking)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const input = 20
	h, err := sc.workflow.Start(ctx, client, input)
	if err != nil {
		t.Fatalf("start run: %v", err)
	}

	// Wait until the first process has committed the steps before and is
	// executing the blocking step, which never returns in that process.
	waitFor(t, time.Minute, fmt.Sprintf("the first worker to complete %v and block in %s", sc.before, sc.block), func() (bool, error) {
		if first.exited() {
			return false, fmt.Errorf("first worker process %d exited on its own", first.pid())
		}
		events, err := readStepLog(stepLog)
		if err != nil {
			return false, err
		}
		inFlight := false
		for _, ev := range events {
			if ev.Kind == eventStart && ev.RunID == h.ID && ev.Key == sc.block && ev.PID == first.pid() {
				inFlight = true
			}
		}
		if !inFlight {
			return false, nil
		}
		attempts, err := listSteps(ctx, client, h.ID)
		if err != nil {
			return false, err
		}
		byStep := attemptsByStep(attempts)
		for _, key := range sc.before {
			if !completedOnce(byStep[key]) {
				return false, nil
			}
		}
		return true, nil
	})
	state, err := first.signalAndWait(syscall.SIGKILL, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if state.ExitCode() != -1 || !strings.Contains(state.String(), "killed") {
		t.Fatalf("first worker process ended with %v, want killed by SIGKILL", state)
	}

	second := startWorkerProcess(t, cfg)
	waitFinished(ctx, client, h.ID)
	out, resultErr := h.Result(ctx)
	events, err := readStepLog(stepLog)
	if err != nil {
		t.Fatal(err)
	}
	execs := executions(events)

	t.Run("the run completes with the right output", func(t *testing.T) {
		if resultErr != nil {
			t.Fatalf("Result: %v", resultErr)
		}
		if want := sc.output(input); out != want {
			t.Errorf("output = %d, want %d", out, want)
		}
	})

	t.Run("the second worker reclaimed the run once the first one's lease expired", func(t *testing.T) {
		run, err := client.GetRun(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != backend.RunCompleted {
			t.Fatalf("run status = %s, want completed", run.Status)
		}
		if run.WorkerID == nil || !strings.HasPrefix(*run.WorkerID, workerIDPrefix(second.pid())) {
			t.Errorf("run completed by worker %v, want one of process %d", deref(run.WorkerID), second.pid())
		}
		if run.Attempts != 2 {
			t.Errorf("run claimed %d times, want 2 (one per process)", run.Attempts)
		}
	})

	t.Run("no step completed before the crash runs again", func(t *testing.T) {
		for _, key := range sc.before {
			got := execs[stepKey{h.ID, key}]
			if len(got) != 1 || got[0].PID != first.pid() {
				t.Errorf("step %s executed %d times (%v), want once, by the first process %d", key, len(got), got, first.pid())
			}
		}
	})

	t.Run("the step in flight at the crash runs at most once more, in the second process", func(t *testing.T) {
		got := execs[stepKey{h.ID, sc.block}]
		var byFirst, bySecond int
		for _, e := range got {
			switch e.PID {
			case first.pid():
				byFirst++
			case second.pid():
				bySecond++
			default:
				t.Errorf("step %s executed by unknown process %d", sc.block, e.PID)
			}
		}
		if byFirst != 1 || bySecond > 1 || len(got) > 2 {
			t.Errorf("step %s executed %d times by the first process and %d by the second (%v), want 1 and at most 1",
				sc.block, byFirst, bySecond, got)
		}
	})

	t.Run("the steps after the crash run once, in the second process", func(t *testing.T) {
		for _, key := range sc.after {
			got := execs[stepKey{h.ID, key}]
			if len(got) != 1 || got[0].PID != second.pid() {
				t.Errorf("step %s executed %v, want once by process %d", key, got, second.pid())
			}
		}
	})

	t.Run("the backend holds exactly one completed attempt per step", func(t *testing.T) {
		attempts, err := listSteps(ctx, client, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		byStep := attemptsByStep(attempts)
		for _, key := range sc.steps {
			if !completedOnce(byStep[key]) {
				t.Errorf("step %s does not have exactly one completed attempt (attempts: %v)", key, summarize(byStep[key]))
			}
		}
	})

	t.Run("the second worker exits cleanly on SIGTERM", func(t *testing.T) {
		state, err := second.signalAndWait(syscall.SIGTERM, crashGrace+10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if state.ExitCode() != 0 {
			t.Errorf("second worker process ended with %v, want exit status 0", state)
		}
	})
}

// completedOnce reports whether exactly one of a step's attempts is
// completed.
func completedOnce(attempts []backend.StepAttempt) bool {
	n := 0
	for _, a := range attempts {
		if a.Status.Normalize() == backend.StepCompleted {
			n++
		}
	}
	return n == 1
}

func summarize(attempts []backend.StepAttempt) []string {
	var s []string
	for _, a := range attempts {
		s = append(s, fmt.Sprintf("%s:%s", a.ID, a.Status))
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
