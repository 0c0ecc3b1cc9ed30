package crash

// Crash tests of the worker's batched write path. A fast step's finished
// attempt is not written when the step returns: it is buffered and
// committed with the pass's next write (the next step's barrier, a wait,
// the run's transition), in a group commit shared with the other runs of
// the worker. These tests hold that group commit back inside a worker
// process, with a backend wrapper, and check that the guarantees of
// unbatched writes still hold:
//
//   - a worker killed between a step's execution and its commit loses
//     nothing that was committed, and the step whose result was not
//     committed runs again;
//   - a worker whose lease expired while its batch was held cannot commit
//     that batch when it is finally applied: the fence refuses every
//     write, and the run is the new owner's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// commitHold makes a worker process hold back one group commit: the first
// batch of writes that finishes step Step (a fast step's finished insert or
// a slow step's finish, of any run) is announced in the commit log Log and
// then applied only once the file Release exists — never, when Release is
// empty (the test kills the process). The held batch's outcome is appended
// to Log when it is applied.
//
// With After, the batch is applied first and its outcome logged
// ("applied"), and then ApplyWrites holds before returning: the step's
// result is durable, and the pass waits at the barrier of the next step.
// Every later batch's outcome is then logged too ("later").
type commitHold struct {
	Step    string `json:"step"`
	Log     string `json:"log"`
	Release string `json:"release,omitempty"`
	After   bool   `json:"after,omitempty"`
}

// Kinds of commit-log events.
const (
	commitHeld    = "held"
	commitApplied = "applied"
	commitLater   = "later"
	// commitReleased: a batch held with After was released; its pass goes
	// on.
	commitReleased = "released"
)

// commitEvent is one line (JSON) of the commit log. A worker process
// appends each line in a single O_APPEND write, as in the step log.
type commitEvent struct {
	Event  string      `json:"event"`
	PID    int         `json:"pid"`
	Writes []heldWrite `json:"writes"`
	// Errors and NotOwner are the outcome of each write, for "applied":
	// the error ("" when the write applied) and whether it wraps
	// backend.ErrNotOwner (the fence refused it).
	Errors   []string `json:"errors,omitempty"`
	NotOwner []bool   `json:"notOwner,omitempty"`
}

// heldWrite describes one write of a held batch.
type heldWrite struct {
	Kind      string `json:"kind"`
	RunID     string `json:"runId"`
	Step      string `json:"step,omitempty"`
	AttemptID string `json:"attemptId,omitempty"`
	Status    string `json:"status,omitempty"`
}

func (w heldWrite) String() string {
	if w.Step == "" {
		return w.Kind + " " + w.RunID
	}
	return fmt.Sprintf("%s %s/%s (%s, %s)", w.Kind, w.RunID, w.Step, w.AttemptID, w.Status)
}

// holdingBackend is a worker process's backend with one group commit held
// back, as its commitHold says. Everything else goes straight through.
type holdingBackend struct {
	backend.Backend
	hold commitHold
	log  *slog.Logger
	held atomic.Bool // one batch is (or was) held
}

// ApplyWrites holds the first batch that finishes the configured step;
// other batches, and that one once released, are applied by the backend.
func (h *holdingBackend) ApplyWrites(ctx context.Context, groups [][]backend.Write) []error {
	var writes []backend.Write
	for _, g := range groups {
		writes = append(writes, g...)
	}
	if h.hold.After {
		return h.applyThenHold(ctx, groups, writes)
	}
	if !finishesStep(writes, h.hold.Step) || !h.held.CompareAndSwap(false, true) {
		return h.Backend.ApplyWrites(ctx, groups)
	}
	ev := commitEvent{Event: commitHeld, PID: os.Getpid(), Writes: describeWrites(writes)}
	h.log.Info("crashtest: about to commit step; holding its batch", "step", h.hold.Step, "writes", ev.Writes)
	h.record(ev)
	h.awaitRelease()
	errs := h.Backend.ApplyWrites(ctx, groups)
	ev.Event = commitApplied
	for g, err := range errs {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		for range groups[g] { // each write of a group shares its outcome
			ev.Errors = append(ev.Errors, msg)
			ev.NotOwner = append(ev.NotOwner, errors.Is(err, backend.ErrNotOwner))
		}
	}
	h.log.Info("crashtest: held batch applied", "step", h.hold.Step, "errors", ev.Errors)
	h.record(ev)
	return errs
}

// applyThenHold is ApplyWrites of a commitHold with After: the batch that
// finishes the step is applied, logged, and held before its outcome is
// returned; the batches after it are applied and logged.
func (h *holdingBackend) applyThenHold(ctx context.Context, groups [][]backend.Write, writes []backend.Write) []error {
	hold := finishesStep(writes, h.hold.Step) && h.held.CompareAndSwap(false, true)
	later := !hold && h.held.Load()
	errs := h.Backend.ApplyWrites(ctx, groups)
	if !hold && !later {
		return errs
	}
	ev := commitEvent{Event: commitApplied, PID: os.Getpid(), Writes: describeWrites(writes)}
	if later {
		ev.Event = commitLater
	}
	for g, err := range errs {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		for range groups[g] {
			ev.Errors = append(ev.Errors, msg)
			ev.NotOwner = append(ev.NotOwner, errors.Is(err, backend.ErrNotOwner))
		}
	}
	h.record(ev)
	if hold {
		h.log.Info("crashtest: step committed; holding before the pass goes on", "step", h.hold.Step, "errors", ev.Errors)
		h.awaitRelease()
		h.record(commitEvent{Event: commitReleased, PID: os.Getpid()})
	}
	return errs
}

// awaitRelease returns once the release file exists, or never.
func (h *holdingBackend) awaitRelease() {
	if h.hold.Release == "" {
		select {} // never applied: the test kills this process
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if _, err := os.Stat(h.hold.Release); err == nil {
			return
		}
	}
}

// record appends ev to the commit log. A failure is only logged: the test
// then times out waiting for the event, with this process's output.
func (h *holdingBackend) record(ev commitEvent) {
	line, err := json.Marshal(ev)
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(h.hold.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, err = f.Write(append(line, '\n'))
			err = errors.Join(err, f.Close())
		}
	}
	if err != nil {
		h.log.Error("crashtest: append to commit log", "error", err)
	}
}

// finishesStep reports whether writes record the end (completed or failed)
// of an attempt of step key.
func finishesStep(writes []backend.Write, key string) bool {
	for _, w := range writes {
		if (w.Kind == backend.WriteInsertStep || w.Kind == backend.WriteFinishStep) && w.Step != nil && w.Step.StepName == key {
			if s := w.Step.Status.Normalize(); s == backend.StepCompleted || s == backend.StepFailed {
				return true
			}
		}
	}
	return false
}

func describeWrites(writes []backend.Write) []heldWrite {
	out := make([]heldWrite, len(writes))
	for i, w := range writes {
		out[i] = heldWrite{Kind: w.Kind.String(), RunID: w.WorkflowRunID}
		if w.Step != nil {
			out[i].Step, out[i].AttemptID, out[i].Status = w.Step.StepName, w.Step.ID, string(w.Step.Status)
		}
	}
	return out
}

// readCommitLog parses the commit log; a last line without its newline is
// left for the next read.
func readCommitLog(path string) ([]commitEvent, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read commit log: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	var events []commitEvent
	for n, line := range lines[:len(lines)-1] {
		var ev commitEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return nil, fmt.Errorf("commit log line %d: %w", n+1, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// commitEventOf returns the event of kind by process pid, if logged.
func commitEventOf(path, kind string, pid int) (commitEvent, bool, error) {
	events, err := readCommitLog(path)
	for _, ev := range events {
		if ev.Event == kind && ev.PID == pid {
			return ev, true, err
		}
	}
	return commitEvent{}, false, err
}

// waitCommitEvent waits for the event of kind by process p, failing the
// test if p exits first.
func waitCommitEvent(t *testing.T, path, kind string, p *workerProcess, what string) commitEvent {
	t.Helper()
	var ev commitEvent
	waitFor(t, time.Minute, what, func() (bool, error) {
		got, ok, err := commitEventOf(path, kind, p.pid())
		if err != nil || ok {
			ev = got
			return ok, err
		}
		if p.exited() {
			return false, fmt.Errorf("worker process %d exited on its own: %v", p.pid(), p.cmd.ProcessState)
		}
		return false, nil
	})
	return ev
}

// heldCommitScenario is a workflow whose worker process is killed while
// the group commit of one step's result is held back.
type heldCommitScenario struct {
	name     string
	workflow *ow.Workflow[int, int]
	output   func(int) int
	steps    []string // every step key of the workflow
	held     string   // the step whose result's commit is held
	before   []string // steps committed before the held step started (the barrier)
	after    []string // steps that depend on the held step: none starts before its result is committed
	// alone says the held batch carries the held step's result and
	// nothing else (its predecessors were committed by the barrier before
	// it ran).
	alone bool
}

var heldCommitScenarios = []heldCommitScenario{
	{
		name:     "after the second of four sequential steps",
		workflow: sequenceWorkflow, output: sequenceOutput, steps: sequenceSteps,
		held: stepDouble, before: []string{stepAddOne}, after: []string{stepAddTen, stepMinus}, alone: true,
	},
	{
		name:     "after the step that precedes a parallel pair",
		workflow: diamondWorkflow, output: diamondOutput, steps: diamondSteps,
		held: stepPrepare, after: []string{stepLeft, stepRight, stepCombine}, alone: true,
	},
	{
		name:     "after one branch of a parallel pair",
		workflow: diamondWorkflow, output: diamondOutput, steps: diamondSteps,
		held: stepLeft, before: []string{stepPrepare}, after: []string{stepCombine},
	},
}

func TestWorkerProcessKilledBeforeGroupCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{
		{"on a SQLite file shared by the processes", sqliteTarget},
		{"on PostgreSQL", postgresTarget},
	} {
		for _, sc := range heldCommitScenarios {
			t.Run(tc.name+" "+sc.name, func(t *testing.T) {
				t.Parallel()
				testKilledBeforeGroupCommit(t, tc.target(t), sc)
			})
		}
	}
}

// testKilledBeforeGroupCommit runs the scenario's workflow on a worker
// process that executes sc.held and then never commits its result, kills
// that process with SIGKILL once the batch is held, and lets a second
// worker process finish the run.
func testKilledBeforeGroupCommit(t *testing.T, tg target, sc heldCommitScenario) {
	client := tg.open(t)
	dir := t.TempDir()
	stepLog, commitLog := filepath.Join(dir, "steps.log"), filepath.Join(dir, "commits.log")
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
		Concurrency: 1, LeaseDuration: crashLease, HeartbeatInterval: crashHeartbeat,
		MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: crashGrace,
	}
	holding := cfg
	holding.HoldCommit = &commitHold{Step: sc.held, Log: commitLog}
	session := "ow-" + randomNamespace()
	if tg.kind == "postgres" {
		holding.DSN = withApplicationName(t, tg.dsn, session)
	}
	first := startWorkerProcess(t, holding)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const input = 20
	h, err := sc.workflow.Start(ctx, client, input)
	if err != nil {
		t.Fatalf("start run: %v", err)
	}
	held := waitCommitEvent(t, commitLog, commitHeld, first, "the first worker to hold the commit of "+sc.held)
	state, err := first.signalAndWait(syscall.SIGKILL, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if state.ExitCode() != -1 || !strings.Contains(state.String(), "killed") {
		t.Fatalf("first worker process ended with %v, want killed by SIGKILL", state)
	}
	// What the first process committed: nothing can change it any more
	// once its database sessions are gone (a PostgreSQL server may still
	// finish a COMMIT it received before the kill).
	if tg.kind == "postgres" {
		waitSessionsGone(ctx, t, client, session)
	}
	atCrash, err := listSteps(ctx, client, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	for _, a := range atCrash {
		if a.Status.Normalize() == backend.StepCompleted {
			committed[a.StepName] = true
		}
	}

	second := startWorkerProcess(t, cfg)
	waitFinished(ctx, client, h.ID)
	out, resultErr := h.Result(ctx)
	events, err := readStepLog(stepLog)
	if err != nil {
		t.Fatal(err)
	}
	execs := executions(events)
	// runsBy counts the executions of a step by the first and the second
	// process, failing on any other.
	runsBy := func(t *testing.T, key string) (byFirst, bySecond int) {
		t.Helper()
		for _, e := range execs[stepKey{h.ID, key}] {
			switch e.PID {
			case first.pid():
				byFirst++
			case second.pid():
				bySecond++
			default:
				t.Errorf("step %s executed by unknown process %d", key, e.PID)
			}
		}
		return byFirst, bySecond
	}
	final, err := listSteps(ctx, client, h.ID)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the run completes with the right output", func(t *testing.T) {
		if resultErr != nil {
			t.Fatalf("Result: %v", resultErr)
		}
		if want := sc.output(input); out != want {
			t.Errorf("output = %d, want %d", out, want)
		}
	})

	t.Run("the held batch carries the held step's finished attempt", func(t *testing.T) {
		var found bool
		for _, w := range held.Writes {
			found = found || (w.RunID == h.ID && w.Step == sc.held && w.Kind == backend.WriteInsertStep.String())
		}
		if !found {
			t.Errorf("held batch %v has no finished insert of %s", held.Writes, sc.held)
		}
		if sc.alone && len(held.Writes) != 1 {
			t.Errorf("held batch %v, want only the finished insert of %s (its predecessors committed at the barrier before it ran)", held.Writes, sc.held)
		}
	})

	t.Run("the steps committed before the held step started ran once, in the first process", func(t *testing.T) {
		for _, key := range sc.before {
			if !committed[key] {
				t.Errorf("step %s was not committed when the first process died (attempts then: %v)", key, summarize(atCrash))
			}
			if byFirst, bySecond := runsBy(t, key); byFirst != 1 || bySecond != 0 {
				t.Errorf("step %s executed %d times by the first process and %d by the second, want once by the first", key, byFirst, bySecond)
			}
		}
	})

	t.Run("the held step, executed but never committed, ran exactly twice: once per process", func(t *testing.T) {
		if committed[sc.held] {
			t.Fatalf("step %s was committed although its batch was held (attempts: %v)", sc.held, summarize(atCrash))
		}
		if byFirst, bySecond := runsBy(t, sc.held); byFirst != 1 || bySecond != 1 {
			t.Errorf("step %s executed %d times by the first process and %d by the second, want once each (%v)",
				sc.held, byFirst, bySecond, execs[stepKey{h.ID, sc.held}])
		}
	})

	t.Run("the steps that depend on the held step never started in the first process", func(t *testing.T) {
		for _, key := range sc.after {
			if committed[key] {
				t.Errorf("step %s was committed at the crash although %s, whose result it depends on, was not (attempts then: %v)", key, sc.held, summarize(atCrash))
			}
			if byFirst, bySecond := runsBy(t, key); byFirst != 0 || bySecond != 1 {
				t.Errorf("step %s executed %d times by the first process and %d by the second, want once by the second (%v)",
					key, byFirst, bySecond, execs[stepKey{h.ID, key}])
			}
		}
	})

	t.Run("every other step ran once more only if its result was not committed at the crash", func(t *testing.T) {
		for _, key := range sc.steps {
			byFirst, bySecond := runsBy(t, key)
			switch {
			case committed[key] && (byFirst != 1 || bySecond != 0):
				t.Errorf("step %s, committed at the crash, executed %d times by the first process and %d by the second, want once by the first", key, byFirst, bySecond)
			case !committed[key] && (byFirst > 1 || bySecond != 1):
				t.Errorf("step %s, not committed at the crash, executed %d times by the first process and %d by the second, want at most once by the first and once by the second", key, byFirst, bySecond)
			}
		}
	})

	t.Run("nothing of the held batch reached the backend", func(t *testing.T) {
		ids := map[string]bool{}
		for _, a := range final {
			ids[a.ID] = true
		}
		for _, w := range held.Writes {
			if w.AttemptID != "" && ids[w.AttemptID] {
				t.Errorf("held write %v is in the backend", w)
			}
		}
	})

	t.Run("the backend holds exactly one completed attempt per step", func(t *testing.T) {
		byStep := attemptsByStep(final)
		for _, key := range sc.steps {
			if !completedOnce(byStep[key]) {
				t.Errorf("step %s attempts: %v, want exactly one completed", key, summarize(byStep[key]))
			}
		}
		if len(final) != len(sc.steps) {
			t.Errorf("run has %d step attempts (%v), want %d", len(final), summarize(final), len(sc.steps))
		}
	})
}

// Settings of the stale-worker test: the first worker's lease is short, and
// the worker is paused (SIGSTOP, heartbeats included) while it holds its
// batch, so the lease expires meanwhile.
const (
	staleLease     = time.Second
	staleHeartbeat = staleLease / 2
)

func TestStaleWorkerProcessHeldBatchIsFenced(t *testing.T) {
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
			testStaleBatchFenced(t, tc.target(t))
		})
	}
}

// testStaleBatchFenced holds the first worker's batch carrying the result
// of stepDouble until its lease has expired and a second worker has
// claimed the run, executed stepDouble again and committed it, and holds
// the run (its own batch carrying stepAddTen is held in turn). Then the
// first worker's batch is applied: its fence must refuse it. Then the
// second worker completes the run.
func testStaleBatchFenced(t *testing.T, tg target) {
	client := tg.open(t)
	dir := t.TempDir()
	stepLog, commitLog := filepath.Join(dir, "steps.log"), filepath.Join(dir, "commits.log")
	releaseFirst, releaseSecond := filepath.Join(dir, "release-first"), filepath.Join(dir, "release-second")
	base := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
		Concurrency: 1, MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: crashGrace,
	}
	stale := base
	stale.LeaseDuration, stale.HeartbeatInterval = staleLease, staleHeartbeat
	stale.HoldCommit = &commitHold{Step: stepDouble, Log: commitLog, Release: releaseFirst}
	first := startWorkerProcess(t, stale)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const input = 5
	h, err := sequenceWorkflow.Start(ctx, client, input)
	if err != nil {
		t.Fatalf("start run: %v", err)
	}
	staleBatch := waitCommitEvent(t, commitLog, commitHeld, first, "the first worker to hold the commit of "+stepDouble)
	// The first worker is paused (SIGSTOP), its heartbeats with it, so its
	// lease expires while it holds its batch; it resumes (SIGCONT) before
	// the batch is released.
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
	owner.HoldCommit = &commitHold{Step: stepAddTen, Log: commitLog, Release: releaseSecond}
	second := startWorkerProcess(t, owner)
	waitCommitEvent(t, commitLog, commitHeld, second, "the second worker to claim the run after the lease expired and hold the commit of "+stepAddTen)
	before := snapshotRun(ctx, t, client, h.ID)
	if before.workerID == nil || !strings.HasPrefix(*before.workerID, workerIDPrefix(second.pid())) {
		t.Fatalf("run held by %v when the stale batch is released, want the second process %d", deref(before.workerID), second.pid())
	}

	resume()
	release(t, releaseFirst)
	applied := waitCommitEvent(t, commitLog, commitApplied, first, "the first worker's stale batch to be applied")
	after := snapshotRun(ctx, t, client, h.ID)

	t.Run("the stale batch is refused by the fence, write by write", func(t *testing.T) {
		if len(applied.NotOwner) != len(staleBatch.Writes) || len(staleBatch.Writes) == 0 {
			t.Fatalf("stale batch %v has outcomes %v", staleBatch.Writes, applied.Errors)
		}
		for i, refused := range applied.NotOwner {
			if !refused {
				t.Errorf("write %v of the stale batch: error %q, want one wrapping backend.ErrNotOwner", staleBatch.Writes[i], applied.Errors[i])
			}
		}
	})

	t.Run("the stale batch changes nothing in the backend", func(t *testing.T) {
		if d := before.diff(after); d != "" {
			t.Errorf("run changed when the stale batch was applied: %s", d)
		}
		ids := map[string]bool{}
		for _, a := range after.steps {
			ids[a.ID] = true
		}
		for _, w := range staleBatch.Writes {
			if w.AttemptID != "" && ids[w.AttemptID] {
				t.Errorf("stale write %v is in the backend", w)
			}
		}
	})

	release(t, releaseSecond)
	waitFinished(ctx, client, h.ID)
	out, resultErr := h.Result(ctx)
	events, err := readStepLog(stepLog)
	if err != nil {
		t.Fatal(err)
	}
	execs := executions(events)

	t.Run("the second worker completes the run with the right output", func(t *testing.T) {
		if resultErr != nil {
			t.Fatalf("Result: %v", resultErr)
		}
		if want := sequenceOutput(input); out != want {
			t.Errorf("output = %d, want %d", out, want)
		}
		run, err := client.GetRun(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if run.WorkerID == nil || !strings.HasPrefix(*run.WorkerID, workerIDPrefix(second.pid())) {
			t.Errorf("run completed by worker %v, want one of process %d", deref(run.WorkerID), second.pid())
		}
	})

	t.Run("the first worker executes no step after its batch is refused", func(t *testing.T) {
		want := map[string][]int{
			stepAddOne: {first.pid()},
			stepDouble: {first.pid(), second.pid()},
			stepAddTen: {second.pid()},
			stepMinus:  {second.pid()},
		}
		for key, pids := range want {
			got := execs[stepKey{h.ID, key}]
			ok := len(got) == len(pids)
			for i := 0; ok && i < len(got); i++ {
				ok = got[i].PID == pids[i]
			}
			if !ok {
				t.Errorf("step %s executed %v, want by processes %v in that order", key, got, pids)
			}
		}
	})

	t.Run("the backend holds exactly one completed attempt per step", func(t *testing.T) {
		final, err := listSteps(ctx, client, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		byStep := attemptsByStep(final)
		for _, key := range sequenceSteps {
			if !completedOnce(byStep[key]) {
				t.Errorf("step %s attempts: %v, want exactly one completed", key, summarize(byStep[key]))
			}
		}
		if len(final) != len(sequenceSteps) {
			t.Errorf("run has %d step attempts (%v), want %d", len(final), summarize(final), len(sequenceSteps))
		}
	})

	t.Run("both workers exit cleanly on SIGTERM", func(t *testing.T) {
		for _, p := range []*workerProcess{first, second} {
			state, err := p.signalAndWait(syscall.SIGTERM, crashGrace+10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if state.ExitCode() != 0 {
				t.Errorf("worker process %d ended with %v, want exit status 0", p.pid(), state)
			}
		}
	})
}

// release creates a commitHold's release file.
func release(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runSnapshot is what a fenced write could change of a run: its state and
// its step attempts (not its lease, which the owner's heartbeat extends).
type runSnapshot struct {
	status   backend.RunStatus
	workerID *string
	attempts int
	output   string
	steps    []backend.StepAttempt
}

func snapshotRun(ctx context.Context, t *testing.T, c *ow.Client, runID string) runSnapshot {
	t.Helper()
	run, err := c.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := listSteps(ctx, c, runID)
	if err != nil {
		t.Fatal(err)
	}
	return runSnapshot{status: run.Status, workerID: run.WorkerID, attempts: run.Attempts, output: string(run.Output), steps: steps}
}

// diff describes how s and o differ, or is "" when they do not.
func (s runSnapshot) diff(o runSnapshot) string {
	var d []string
	if s.status != o.status || deref(s.workerID) != deref(o.workerID) || s.attempts != o.attempts || s.output != o.output {
		d = append(d, fmt.Sprintf("run %s/%s/%d/%s became %s/%s/%d/%s (status/worker/attempts/output)",
			s.status, deref(s.workerID), s.attempts, s.output, o.status, deref(o.workerID), o.attempts, o.output))
	}
	step := func(a backend.StepAttempt) string {
		return fmt.Sprintf("%s %s %s %s %s", a.ID, a.StepName, a.Status, a.Output, a.UpdatedAt.Format(time.RFC3339Nano))
	}
	if len(s.steps) != len(o.steps) {
		d = append(d, fmt.Sprintf("step attempts %v became %v", summarize(s.steps), summarize(o.steps)))
	} else {
		for i := range s.steps {
			if a, b := step(s.steps[i]), step(o.steps[i]); a != b {
				d = append(d, fmt.Sprintf("step attempt %q became %q", a, b))
			}
		}
	}
	return strings.Join(d, "; ")
}

// withApplicationName returns the PostgreSQL connection string dsn (a URL
// or keyword/value pairs) with application_name set to name, so the test
// can find the sessions of the process using it.
func withApplicationName(t *testing.T, dsn, name string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " application_name=" + name
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse PostgreSQL URL: %v", err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// waitSessionsGone waits until no PostgreSQL session has application_name
// name: the server has finished (or rolled back) whatever the killed
// process had sent.
func waitSessionsGone(ctx context.Context, t *testing.T, c *ow.Client, name string) {
	t.Helper()
	pg, ok := c.Backend().(*postgres.Backend)
	if !ok {
		t.Fatalf("client backend is %T, want *postgres.Backend", c.Backend())
	}
	waitFor(t, 30*time.Second, "the killed worker's PostgreSQL sessions to end", func() (bool, error) {
		var n int
		err := pg.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n)
		return n == 0, err
	})
}
