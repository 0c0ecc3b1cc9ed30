package crash

// Crash tests of the latency paths (issue 24) on ow bench's L3 shape,
// three sequential steps: a worker process is stopped right after each
// step's write committed — the moment the next step would start — and
// killed with SIGKILL, or paused until its lease is lost. Whatever the
// point, no committed step is lost, no step runs twice, and a worker that
// lost its lease commits nothing further.

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

func TestWorkerProcessKilledAfterEachStepWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{
		{"on a SQLite file shared by the processes", sqliteTarget},
		{"on PostgreSQL", postgresTarget},
	} {
		for k := range l3Steps {
			t.Run(tc.name+" after the write of "+l3Steps[k], func(t *testing.T) {
				t.Parallel()
				testKilledAfterStepWrite(t, tc.target(t), k, false)
			})
			t.Run(tc.name+" after the write of "+l3Steps[k]+" of a run its own process started and claimed in the start", func(t *testing.T) {
				t.Parallel()
				testKilledAfterStepWrite(t, tc.target(t), k, true)
			})
		}
	}
}

// testKilledAfterStepWrite runs the L3 workflow on a worker process that
// holds, once the batch finishing step k applied, before the pass goes
// on; kills it with SIGKILL there; and lets a second worker process finish
// the run. With startHere the first worker process starts the run itself,
// and the start claims it for that process's worker (no claim, no
// wake-up: worker_startclaim.go); otherwise the test's client starts it.
func testKilledAfterStepWrite(t *testing.T, tg target, k int, startHere bool) {
	client := tg.open(t)
	dir := t.TempDir()
	stepLog, commitLog := filepath.Join(dir, "steps.log"), filepath.Join(dir, "commits.log")
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
		Concurrency: 1, LeaseDuration: crashLease, HeartbeatInterval: crashHeartbeat,
		MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: crashGrace,
	}
	holding := cfg
	holding.HoldCommit = &commitHold{Step: l3Steps[k], Log: commitLog, After: true}
	session := "ow-" + randomNamespace()
	if tg.kind == "postgres" {
		holding.DSN = withApplicationName(t, tg.dsn, session)
	}
	const input = 7
	if startHere {
		in := input
		holding.StartL3 = &in
	}
	first := startWorkerProcess(t, holding)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var h *ow.Handle[int]
	if !startHere {
		var err error
		if h, err = l3Workflow.Start(ctx, client, input); err != nil {
			t.Fatalf("start run: %v", err)
		}
	}
	applied := waitCommitEvent(t, commitLog, commitApplied, first, "the first worker to commit "+l3Steps[k])
	if startHere {
		h = runOfStartClaimedStep(t, client, applied, l3Steps[k])
	}
	state, err := first.signalAndWait(syscall.SIGKILL, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if state.ExitCode() != -1 || !strings.Contains(state.String(), "killed") {
		t.Fatalf("first worker process ended with %v, want killed by SIGKILL", state)
	}
	if tg.kind == "postgres" {
		waitSessionsGone(ctx, t, client, session)
	}
	atCrash, err := listSteps(ctx, client, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	runAtCrash, err := client.GetRun(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}

	second := startWorkerProcess(t, cfg)
	waitFinished(ctx, client, h.ID)
	out, resultErr := h.Result(ctx)
	events, err := readStepLog(stepLog)
	if err != nil {
		t.Fatal(err)
	}
	execs := executions(events)
	final, err := listSteps(ctx, client, h.ID)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the held batch applied and carries the step's result", func(t *testing.T) {
		var found bool
		for i, w := range applied.Writes {
			found = found || (w.RunID == h.ID && w.Step == l3Steps[k] && w.Kind == backend.WriteInsertStep.String())
			if applied.Errors[i] != "" {
				t.Errorf("write %v of the batch failed: %s", w, applied.Errors[i])
			}
		}
		if !found {
			t.Errorf("batch %v has no finished insert of %s", applied.Writes, l3Steps[k])
		}
	})

	t.Run("every step up to the killed point was durable at the kill, and none after it", func(t *testing.T) {
		done := map[string]bool{}
		for _, a := range atCrash {
			if a.Status.Normalize() == backend.StepCompleted {
				done[a.StepName] = true
			}
		}
		for i, key := range l3Steps {
			if want := i <= k; done[key] != want {
				t.Errorf("step %s completed at the kill: %v, want %v (attempts then: %v)", key, done[key], want, summarize(atCrash))
			}
		}
		last := k == len(l3Steps)-1 // the last step's write is the run's completion too
		if got := runAtCrash.Status.Normalize() == backend.RunCompleted; got != last {
			t.Errorf("run %s at the kill, completed %v, want %v", runAtCrash.Status, got, last)
		}
	})

	t.Run("the run completes with the right output", func(t *testing.T) {
		if resultErr != nil {
			t.Fatalf("Result: %v", resultErr)
		}
		if want := l3Output(input); out != want {
			t.Errorf("output = %d, want %d", out, want)
		}
	})

	t.Run("each step ran exactly once: up to the kill in the first process, after it in the second", func(t *testing.T) {
		for i, key := range l3Steps {
			want := first.pid()
			if i > k {
				want = second.pid()
			}
			got := execs[stepKey{h.ID, key}]
			if len(got) != 1 || got[0].PID != want {
				t.Errorf("step %s executed %v, want once by process %d", key, got, want)
			}
		}
	})

	t.Run("the backend holds exactly one completed attempt per step", func(t *testing.T) {
		byStep := attemptsByStep(final)
		for _, key := range l3Steps {
			if !completedOnce(byStep[key]) {
				t.Errorf("step %s attempts: %v, want exactly one completed", key, summarize(byStep[key]))
			}
		}
		if len(final) != len(l3Steps) {
			t.Errorf("run has %d step attempts (%v), want %d", len(final), summarize(final), len(l3Steps))
		}
	})
}

func TestWorkerProcessLosingItsLeaseMidRunCommitsNothingFurther(t *testing.T) {
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
			testLeaseLostMidRun(t, tc.target(t), false)
		})
		t.Run(tc.name+", a run its own process started and claimed in the start", func(t *testing.T) {
			t.Parallel()
			testLeaseLostMidRun(t, tc.target(t), true)
		})
	}
}

// testLeaseLostMidRun pauses (SIGSTOP, heartbeats included) a worker
// process right after its write of the L3 workflow's first step committed,
// until its lease expired and a second worker process finished the run;
// then resumes it. Nothing it sends afterwards may change the run.
func testLeaseLostMidRun(t *testing.T, tg target, startHere bool) {
	client := tg.open(t)
	dir := t.TempDir()
	stepLog, commitLog, releaseFirst := filepath.Join(dir, "steps.log"), filepath.Join(dir, "commits.log"), filepath.Join(dir, "release-first")
	base := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
		Concurrency: 1, MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: crashGrace,
	}
	stale := base
	stale.LeaseDuration, stale.HeartbeatInterval = staleLease, staleHeartbeat
	stale.HoldCommit = &commitHold{Step: l3Steps[0], Log: commitLog, Release: releaseFirst, After: true}
	const input = 3
	if startHere {
		in := input
		stale.StartL3 = &in
	}
	first := startWorkerProcess(t, stale)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var h *ow.Handle[int]
	if !startHere {
		var err error
		if h, err = l3Workflow.Start(ctx, client, input); err != nil {
			t.Fatalf("start run: %v", err)
		}
	}
	applied := waitCommitEvent(t, commitLog, commitApplied, first, "the first worker to commit "+l3Steps[0])
	if startHere {
		h = runOfStartClaimedStep(t, client, applied, l3Steps[0])
	}
	if err := first.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("pause the first worker: %v", err)
	}
	paused := true
	resume := func() {
		if paused {
			paused = false
			if err := first.cmd.Process.Signal(syscall.SIGCONT); err != nil && !first.exited() {
				t.Errorf("resume the first worker: %v", err)
			}
		}
	}
	defer resume()

	owner := base
	owner.LeaseDuration, owner.HeartbeatInterval = crashLease, crashHeartbeat
	second := startWorkerProcess(t, owner)
	waitFinished(ctx, client, h.ID)
	out, resultErr := h.Result(ctx)
	before := snapshotRun(ctx, t, client, h.ID)
	if run, err := client.GetRun(ctx, h.ID); err != nil || run.WorkerID == nil || !strings.HasPrefix(*run.WorkerID, workerIDPrefix(second.pid())) {
		t.Fatalf("run finished by %v (%v), want a slot of the second process %d", run, err, second.pid())
	}

	// The first worker goes on from where it stood, believing its step
	// committed (it did, under its lease). Its pass then ends one way or
	// another — its next write refused by the fence, its heartbeat
	// refused, or (PostgreSQL) the run's finished event — and its graceful
	// stop waits for that; nothing it sent may change the run.
	resume()
	release(t, releaseFirst)
	waitCommitEvent(t, commitLog, commitReleased, first, "the first worker to go on after its held commit")
	state, err := first.signalAndWait(syscall.SIGTERM, crashGrace+10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if state.ExitCode() != 0 {
		t.Errorf("first worker process ended with %v, want exit status 0", state)
	}
	events, err := readCommitLog(commitLog)
	if err != nil {
		t.Fatal(err)
	}
	var later []commitEvent
	for _, ev := range events {
		if ev.Event == commitLater && ev.PID == first.pid() {
			later = append(later, ev)
		}
	}
	after := snapshotRun(ctx, t, client, h.ID)

	t.Run("the second worker completes the run with the right output", func(t *testing.T) {
		if resultErr != nil {
			t.Fatalf("Result: %v", resultErr)
		}
		if want := l3Output(input); out != want {
			t.Errorf("output = %d, want %d", out, want)
		}
	})

	t.Run("every write the first worker sent after losing its lease was refused by the fence", func(t *testing.T) {
		for _, ev := range later {
			for i, refused := range ev.NotOwner {
				if !refused {
					t.Errorf("write %v after the lease was lost: error %q, want one wrapping backend.ErrNotOwner", ev.Writes[i], ev.Errors[i])
				}
			}
		}
	})

	t.Run("the run and its steps are unchanged by the first worker", func(t *testing.T) {
		if d := before.diff(after); d != "" {
			t.Errorf("run changed after the first worker resumed: %s", d)
		}
		byStep := attemptsByStep(after.steps)
		for _, key := range l3Steps {
			if !completedOnce(byStep[key]) {
				t.Errorf("step %s attempts: %v, want exactly one completed", key, summarize(byStep[key]))
			}
		}
		if len(after.steps) != len(l3Steps) {
			t.Errorf("run has %d step attempts (%v), want %d", len(after.steps), summarize(after.steps), len(l3Steps))
		}
	})

	t.Run("the first step ran once, in the first worker", func(t *testing.T) {
		events, err := readStepLog(stepLog)
		if err != nil {
			t.Fatal(err)
		}
		got := executions(events)[stepKey{h.ID, l3Steps[0]}]
		if len(got) != 1 || got[0].PID != first.pid() {
			t.Errorf("step %s executed %v, want once by process %d", l3Steps[0], got, first.pid())
		}
	})
}

// runOfStep is the handle of the L3 run whose write of step the applied
// batch carries.
func runOfStep(t *testing.T, client *ow.Client, applied commitEvent, step string) *ow.Handle[int] {
	t.Helper()
	for _, w := range applied.Writes {
		if w.Step == step && w.Kind == backend.WriteInsertStep.String() {
			return &ow.Handle[int]{RunHandle: client.Handle(w.RunID)}
		}
	}
	t.Fatalf("batch %v has no insert of step %s", applied.Writes, step)
	return nil
}

// runOfStartClaimedStep is runOfStep for a run the worker process started
// itself, checked to have been claimed by its start: started when it was
// created, in one attempt (a claim is a later statement).
func runOfStartClaimedStep(t *testing.T, client *ow.Client, applied commitEvent, step string) *ow.Handle[int] {
	t.Helper()
	h := runOfStep(t, client, applied, step)
	run, err := client.GetRun(context.Background(), h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.StartedAt == nil || !run.StartedAt.Equal(run.CreatedAt) || run.Attempts != 1 {
		t.Fatalf("run %s created %v, started %v, attempts %d: want started at its creation (claimed by its start), attempt 1",
			run.ID, run.CreatedAt, run.StartedAt, run.Attempts)
	}
	return h
}
