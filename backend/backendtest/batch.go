package backendtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// The group-commit extension (backend.Batcher): every write of a batch has
// exactly the effect of its single-write twin, a refused or failed write
// does not prevent the others, and batch creates behave like creates.

// batcher returns b as a backend.Batcher, skipping the test when it is not
// one.
func batcher(t *testing.T, b backend.Backend) backend.Batcher {
	t.Helper()
	bb, ok := b.(backend.Batcher)
	if !ok {
		t.Skipf("%T does not implement backend.Batcher: the group-commit specifications do not apply", b)
	}
	return bb
}

// applyWrites applies ws and checks that there is one result per write.
func applyWrites(t testing.TB, bb backend.Batcher, ws ...backend.Write) []error {
	t.Helper()
	errs := bb.ApplyWrites(t.Context(), ws)
	if len(errs) != len(ws) {
		t.Fatalf("ApplyWrites of %d writes returned %d errors, want one per write", len(ws), len(errs))
	}
	return errs
}

// requireApplied fails unless every write of the batch applied.
func requireApplied(t testing.TB, what string, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: write %d: %v, want it applied", what, i, err)
		}
	}
}

// requireWriteRefused fails unless err wraps ErrNotOwner and names the run.
func requireWriteRefused(t testing.TB, what string, err error, runID string) {
	t.Helper()
	requireErrorIs(t, what, err, backend.ErrNotOwner)
	if !strings.Contains(err.Error(), runID) {
		t.Fatalf("%s: error %q does not name workflow run %s", what, err, runID)
	}
}

// newStepID returns a caller-chosen step attempt id.
func newStepID() string { return "step_batch_" + randomHex(8) }

// insertStep is a WriteInsertStep of a new attempt named name.
func insertStep(runID, worker, name string, status backend.StepStatus, output, errJSON string) backend.Write {
	return backend.Write{
		Kind: backend.WriteInsertStep, WorkflowRunID: runID, WorkerID: worker,
		Step: &backend.StepAttempt{
			ID: newStepID(), StepName: name, Kind: backend.StepFunction, Status: status,
			Output: rawOrNil(output), Error: rawOrNil(errJSON),
		},
	}
}

func finishStep(runID, worker, stepID string, status backend.StepStatus, output, errJSON string) backend.Write {
	return backend.Write{
		Kind: backend.WriteFinishStep, WorkflowRunID: runID, WorkerID: worker,
		Step: &backend.StepAttempt{ID: stepID, Status: status, Output: rawOrNil(output), Error: rawOrNil(errJSON)},
	}
}

func completeWrite(runID, worker, output string) backend.Write {
	return backend.Write{Kind: backend.WriteCompleteRun, WorkflowRunID: runID, WorkerID: worker, Output: rawOrNil(output)}
}

func parkWrite(runID, worker string, at time.Time) backend.Write {
	return backend.Write{Kind: backend.WriteParkRun, WorkflowRunID: runID, WorkerID: worker, AvailableAt: at}
}

func rescheduleWrite(runID, worker, errJSON string, at time.Time) backend.Write {
	return backend.Write{Kind: backend.WriteRescheduleRun, WorkflowRunID: runID, WorkerID: worker, Error: rawOrNil(errJSON), AvailableAt: at}
}

func failWrite(runID, worker, errJSON string) backend.Write {
	return backend.Write{Kind: backend.WriteFailRun, WorkflowRunID: runID, WorkerID: worker, Error: rawOrNil(errJSON)}
}

// stepsOf lists every attempt of a run, oldest first.
func stepsOf(t testing.TB, b backend.Backend, runID string) []backend.StepAttempt {
	t.Helper()
	return listSteps(t, b, backend.ListStepAttemptsParams{WorkflowRunID: runID, Limit: 1000}).Data
}

// nearTwin returns got when it and twin are both set and within the clock
// slack of each other (both written "now"), and twin otherwise, so that a
// record comparison fails on a missing, extra or distant time.
func nearTwin(got, twin *time.Time) *time.Time {
	if got == nil || twin == nil {
		return twin
	}
	d := got.Sub(*twin)
	if d < 0 {
		d = -d
	}
	if d <= clockSlack {
		return got
	}
	return twin
}

// requireRunLikeTwin compares a run written by a batch with the run its
// single-write twin wrote in another namespace: equal but for identity and
// the times both wrote from their clocks.
func requireRunLikeTwin(t testing.TB, what string, got, twin *backend.WorkflowRun) {
	t.Helper()
	want := *twin
	want.NamespaceID, want.ID, want.CreatedAt = got.NamespaceID, got.ID, got.CreatedAt
	want.AvailableAt = nearTwin(got.AvailableAt, twin.AvailableAt)
	want.StartedAt = nearTwin(got.StartedAt, twin.StartedAt)
	want.FinishedAt = nearTwin(got.FinishedAt, twin.FinishedAt)
	requireRun(t, what, got, &want)
}

// requireStepsLikeTwin compares attempt lists the same way.
func requireStepsLikeTwin(t testing.TB, what string, got, twin []backend.StepAttempt) {
	t.Helper()
	if len(got) != len(twin) {
		t.Fatalf("%s: %d attempts, want %d as written by the single-write methods", what, len(got), len(twin))
	}
	for i := range got {
		g, want := got[i], twin[i]
		want.NamespaceID, want.ID, want.WorkflowRunID, want.CreatedAt = g.NamespaceID, g.ID, g.WorkflowRunID, g.CreatedAt
		want.StartedAt = nearTwin(g.StartedAt, twin[i].StartedAt)
		want.FinishedAt = nearTwin(g.FinishedAt, twin[i].FinishedAt)
		requireStep(t, fmt.Sprintf("%s: attempt %d", what, i), &g, &want)
	}
}

// twinCase is one write kind and the single-write calls it mirrors.
type twinCase struct {
	name string
	// setup prepares the owned run (both sides) and returns a step id the
	// write refers to, or "".
	setup func(t *testing.T, b backend.Backend, runID, worker string) string
	// single applies the twin through the single-write methods.
	single func(t *testing.T, b backend.Backend, runID, worker, stepID string) error
	// write is the batch write.
	write func(runID, worker, stepID string) backend.Write
}

func noSetup(*testing.T, backend.Backend, string, string) string { return "" }

func runningStep(t *testing.T, b backend.Backend, runID, worker string) string {
	return createStep(t, b, runID, worker, "slow", backend.StepFunction, "").ID
}

// parkAt is the wake-up time of the park and reschedule twins.
var parkAt = ms(time.Now().Add(farFuture))

func twinCases() []twinCase {
	create := func(t *testing.T, b backend.Backend, runID, worker string) (*backend.StepAttempt, error) {
		return b.CreateStepAttempt(t.Context(), backend.CreateStepAttemptParams{WorkflowRunID: runID, WorkerID: worker, StepName: "fast", Kind: backend.StepFunction})
	}
	return []twinCase{
		{"WriteInsertStep of a running attempt is CreateStepAttempt", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := create(t, b, runID, worker)
				return err
			},
			func(runID, worker, _ string) backend.Write {
				return insertStep(runID, worker, "fast", backend.StepRunning, "", "")
			}},
		{"WriteInsertStep of a completed attempt is CreateStepAttempt then CompleteStepAttempt", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				s, err := create(t, b, runID, worker)
				if err != nil {
					return err
				}
				_, err = b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: s.ID, WorkerID: worker, Output: json.RawMessage(`{"i":1}`)})
				return err
			},
			func(runID, worker, _ string) backend.Write {
				return insertStep(runID, worker, "fast", backend.StepCompleted, `{"i":1}`, "")
			}},
		{"WriteInsertStep of a failed attempt is CreateStepAttempt then FailStepAttempt", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				s, err := create(t, b, runID, worker)
				if err != nil {
					return err
				}
				_, err = b.FailStepAttempt(t.Context(), backend.FailStepAttemptParams{WorkflowRunID: runID, StepAttemptID: s.ID, WorkerID: worker, Error: json.RawMessage(`{"message":"boom"}`)})
				return err
			},
			func(runID, worker, _ string) backend.Write {
				return insertStep(runID, worker, "fast", backend.StepFailed, "", `{"message":"boom"}`)
			}},
		{"WriteFinishStep completing is CompleteStepAttempt", runningStep,
			func(t *testing.T, b backend.Backend, runID, worker, stepID string) error {
				_, err := b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: stepID, WorkerID: worker, Output: json.RawMessage(`[1,2]`)})
				return err
			},
			func(runID, worker, stepID string) backend.Write {
				return finishStep(runID, worker, stepID, backend.StepCompleted, `[1,2]`, "")
			}},
		{"WriteFinishStep completing with no output stores JSON null, as CompleteStepAttempt", runningStep,
			func(t *testing.T, b backend.Backend, runID, worker, stepID string) error {
				_, err := b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: stepID, WorkerID: worker})
				return err
			},
			func(runID, worker, stepID string) backend.Write {
				return finishStep(runID, worker, stepID, backend.StepCompleted, "", "")
			}},
		{"WriteFinishStep failing is FailStepAttempt", runningStep,
			func(t *testing.T, b backend.Backend, runID, worker, stepID string) error {
				_, err := b.FailStepAttempt(t.Context(), backend.FailStepAttemptParams{WorkflowRunID: runID, StepAttemptID: stepID, WorkerID: worker, Error: json.RawMessage(`{"message":"slow boom"}`)})
				return err
			},
			func(runID, worker, stepID string) backend.Write {
				return finishStep(runID, worker, stepID, backend.StepFailed, "", `{"message":"slow boom"}`)
			}},
		{"WriteCompleteRun is CompleteWorkflowRun", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, Output: json.RawMessage(`{"total":42}`)})
				return err
			},
			func(runID, worker, _ string) backend.Write { return completeWrite(runID, worker, `{"total":42}`) }},
		{"WriteCompleteRun with no output stores JSON null, as CompleteWorkflowRun", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := b.CompleteWorkflowRun(t.Context(), backend.CompleteWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker})
				return err
			},
			func(runID, worker, _ string) backend.Write { return completeWrite(runID, worker, "") }},
		{"WriteParkRun is SleepWorkflowRun", runningStep,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				return b.SleepWorkflowRun(t.Context(), backend.SleepWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, AvailableAt: parkAt})
			},
			func(runID, worker, _ string) backend.Write { return parkWrite(runID, worker, parkAt) }},
		{"WriteRescheduleRun is RescheduleWorkflowRunAfterFailedStepAttempt", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := b.RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), backend.RescheduleWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, Error: json.RawMessage(`{"message":"retry me"}`), AvailableAt: parkAt})
				return err
			},
			func(runID, worker, _ string) backend.Write {
				return rescheduleWrite(runID, worker, `{"message":"retry me"}`, parkAt)
			}},
		{"WriteFailRun is a terminal FailWorkflowRun", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := b.FailWorkflowRun(t.Context(), backend.FailWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, Error: json.RawMessage(`{"message":"fatal"}`), RetryPolicy: backend.NoRetryPolicy})
				return err
			},
			func(runID, worker, _ string) backend.Write { return failWrite(runID, worker, `{"message":"fatal"}`) }},
	}
}

// awaitEvents waits until every wanted event has been seen, in any order.
func awaitEvents(t testing.TB, ch <-chan backend.Event, wants map[string]func(backend.Event) bool) {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for len(wants) > 0 {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("subscription closed while waiting for %d events", len(wants))
			}
			for what, want := range wants {
				if want(e) {
					delete(wants, what)
				}
			}
		case <-timeout.C:
			missing := make([]string, 0, len(wants))
			for what := range wants {
				missing = append(missing, what)
			}
			t.Fatalf("no %s within %v", strings.Join(missing, ", "), waitTimeout)
		}
	}
}

func testApplyWrites(t *testing.T, s *suite) {
	for _, c := range twinCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			single, batched := s.newBackend(t), s.newBackend(t)
			bb := batcher(t, batched)
			w := newWorkerID() // the same worker id on both sides: namespaces differ
			twinRun := startRun(t, single, w, backend.CreateWorkflowRunParams{Input: json.RawMessage(`{"n":1}`)})
			run := startRun(t, batched, w, backend.CreateWorkflowRunParams{Input: json.RawMessage(`{"n":1}`)})
			twinStep := c.setup(t, single, twinRun.ID, w)
			step := c.setup(t, batched, run.ID, w)

			if err := c.single(t, single, twinRun.ID, w, twinStep); err != nil {
				t.Fatalf("single-write twin: %v", err)
			}
			requireApplied(t, "batch", applyWrites(t, bb, c.write(run.ID, w, step)))

			requireRunLikeTwin(t, "run written by the batch", getRun(t, batched, run.ID), getRun(t, single, twinRun.ID))
			requireStepsLikeTwin(t, "attempts written by the batch", stepsOf(t, batched, run.ID), stepsOf(t, single, twinRun.ID))
		})
	}

	t.Run("returns no errors for an empty batch", func(t *testing.T) {
		t.Parallel()
		bb := batcher(t, s.newBackend(t))
		if errs := bb.ApplyWrites(t.Context(), nil); len(errs) != 0 {
			t.Fatalf("ApplyWrites(nil) = %v, want no errors", errs)
		}
	})

	t.Run("keeps the caller's step attempt id, and a given finish time", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		write := insertStep(run.ID, w, "timed", backend.StepCompleted, `1`, "")
		started, finished := ms(time.Now().Add(-time.Minute)), ms(time.Now().Add(-30*time.Second))
		write.Step.StartedAt, write.Step.FinishedAt = &started, &finished
		requireApplied(t, "insert of a timed attempt", applyWrites(t, bb, write))
		got := getStep(t, b, write.Step.ID)
		var d differ
		d.time("started_at", got.StartedAt, &started)
		d.time("finished_at", got.FinishedAt, &finished)
		d.str("status", string(got.Status), string(backend.StepCompleted))
		d.fail(t, "attempt inserted with its times")
	})

	t.Run("applies the writes of good owners and refuses stale ones with ErrNotOwner, changing nothing for them", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		wa, wb, wc := newWorkerID(), newWorkerID(), newWorkerID()
		r1 := startRun(t, b, wa, backend.CreateWorkflowRunParams{WorkflowName: "one"})
		r2 := startRun(t, b, wb, backend.CreateWorkflowRunParams{WorkflowName: "two"})
		r3 := startRun(t, b, wa, backend.CreateWorkflowRunParams{WorkflowName: "three"})
		slow := createStep(t, b, r3.ID, wa, "slow", backend.StepFunction, "")
		expireLease(t, b, r3.ID, wa)
		moved := claimEventually(t, b, wc, longLease, r3.ID) // r3's lease moved from wa to wc
		canceled := cancelRun(t, b, startRun(t, b, wb, backend.CreateWorkflowRunParams{WorkflowName: "four"}).ID)

		good := insertStep(r1.ID, wa, "a", backend.StepCompleted, `{"i":1}`, "")
		errs := applyWrites(t, bb,
			good,
			insertStep(r3.ID, wa, "stale", backend.StepCompleted, `{"i":2}`, ""),
			finishStep(r3.ID, wa, slow.ID, backend.StepCompleted, `"stale"`, ""),
			completeWrite(r2.ID, wb, `"two done"`),
			completeWrite(r3.ID, wa, `"stale done"`),
			parkWrite(r3.ID, wa, time.Now()),
			rescheduleWrite(r3.ID, wa, `{"message":"stale"}`, time.Now()),
			failWrite(r3.ID, wa, `{"message":"stale"}`),
			completeWrite(canceled.ID, wb, `"too late"`),
			completeWrite(r1.ID, wa, `"one done"`),
		)
		for i, want := range []error{nil, backend.ErrNotOwner, backend.ErrNotOwner, nil, backend.ErrNotOwner, backend.ErrNotOwner, backend.ErrNotOwner, backend.ErrNotOwner, backend.ErrNotOwner, nil} {
			what := fmt.Sprintf("write %d", i)
			switch {
			case want == nil && errs[i] != nil:
				t.Fatalf("%s: %v, want it applied", what, errs[i])
			case want != nil && i == 8:
				requireWriteRefused(t, what+" (complete of a canceled run)", errs[i], canceled.ID)
			case want != nil:
				requireWriteRefused(t, what+" (by the worker that lost the lease)", errs[i], r3.ID)
			}
		}
		requireRun(t, "run whose lease moved", getRun(t, b, r3.ID), moved)
		requireStepsLikeTwin(t, "attempts of the run whose lease moved", stepsOf(t, b, r3.ID), []backend.StepAttempt{*slow})
		requireRun(t, "canceled run", getRun(t, b, canceled.ID), canceled)
		if got := getRun(t, b, r1.ID); got.Status != backend.RunCompleted || !jsonEqual(got.Output, json.RawMessage(`"one done"`)) {
			t.Fatalf("run one = {%s, %s}, want completed with \"one done\"", got.Status, showJSON(got.Output))
		}
		if got := getRun(t, b, r2.ID); got.Status != backend.RunCompleted || !jsonEqual(got.Output, json.RawMessage(`"two done"`)) {
			t.Fatalf("run two = {%s, %s}, want completed with \"two done\"", got.Status, showJSON(got.Output))
		}
		if got := getStep(t, b, good.Step.ID); got.Status != backend.StepCompleted || !jsonEqual(got.Output, json.RawMessage(`{"i":1}`)) {
			t.Fatalf("good attempt = {%s, %s}, want completed with {\"i\":1}", got.Status, showJSON(got.Output))
		}
	})

	t.Run("applies writes in order: insert a step, finish it, complete the run, all in one batch", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		ins := insertStep(run.ID, w, "s", backend.StepRunning, "", "")
		start := time.Now()
		requireApplied(t, "insert, finish, complete", applyWrites(t, bb,
			ins,
			finishStep(run.ID, w, ins.Step.ID, backend.StepCompleted, `{"ok":true}`, ""),
			completeWrite(run.ID, w, `"done"`),
		))
		win := since(start)
		got := getStep(t, b, ins.Step.ID)
		want := &backend.StepAttempt{
			NamespaceID: b.NamespaceID(), ID: ins.Step.ID, WorkflowRunID: run.ID, StepName: "s",
			Kind: backend.StepFunction, Status: backend.StepCompleted, Config: json.RawMessage(`{}`),
			Output:     json.RawMessage(`{"ok":true}`),
			StartedAt:  requireTimeIn(t, "started_at", got.StartedAt, win),
			FinishedAt: requireTimeIn(t, "finished_at", got.FinishedAt, win),
			CreatedAt:  *requireTimeIn(t, "created_at", &got.CreatedAt, win),
		}
		requireStep(t, "attempt inserted and finished in one batch", got, want)
		r := getRun(t, b, run.ID)
		if r.Status != backend.RunCompleted || !jsonEqual(r.Output, json.RawMessage(`"done"`)) {
			t.Fatalf("run = {%s, %s}, want completed with \"done\"", r.Status, showJSON(r.Output))
		}
	})

	t.Run("refuses a step write after the run's completion in the same batch", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		errs := applyWrites(t, bb, completeWrite(run.ID, w, `1`), insertStep(run.ID, w, "late", backend.StepCompleted, `2`, ""))
		if errs[0] != nil {
			t.Fatalf("complete: %v", errs[0])
		}
		requireWriteRefused(t, "step inserted after the completion", errs[1], run.ID)
		requireStepCount(t, b, run.ID, 0)
	})

	t.Run("refuses inserts after their run's completion while inserts of other runs and earlier ones apply", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w := newWorkerID()
		x := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "x"})
		y := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "y"})
		errs := applyWrites(t, bb,
			insertStep(x.ID, w, "x1", backend.StepCompleted, `1`, ""),
			insertStep(y.ID, w, "y1", backend.StepCompleted, `1`, ""),
			completeWrite(x.ID, w, `"x done"`),
			insertStep(x.ID, w, "x2", backend.StepCompleted, `2`, ""),
			insertStep(y.ID, w, "y2", backend.StepCompleted, `2`, ""),
		)
		for i, ok := range []bool{true, true, true, false, true} {
			if ok && errs[i] != nil {
				t.Fatalf("write %d: %v, want it applied", i, errs[i])
			}
		}
		requireWriteRefused(t, "insert after its run's completion", errs[3], x.ID)
		requireStepCount(t, b, x.ID, 1)
		requireStepCount(t, b, y.ID, 2)
	})

	t.Run("fences each of many runs' completions and parks in one batch on its own", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w, thief := newWorkerID(), newWorkerID()
		var runs []*backend.WorkflowRun
		for i := range 6 {
			runs = append(runs, startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: fmt.Sprintf("r%d", i)}))
		}
		// Runs 1 (to complete) and 4 (to park) moved to another worker.
		for _, i := range []int{1, 4} {
			expireLease(t, b, runs[i].ID, w)
			claimEventually(t, b, thief, longLease, runs[i].ID)
		}
		wake := ms(time.Now().Add(time.Hour))
		errs := applyWrites(t, bb,
			insertStep(runs[0].ID, w, "a", backend.StepCompleted, `0`, ""),
			completeWrite(runs[0].ID, w, `"zero"`),
			parkWrite(runs[3].ID, w, wake),
			completeWrite(runs[1].ID, w, `"stale"`),
			insertStep(runs[2].ID, w, "a", backend.StepCompleted, `2`, ""),
			parkWrite(runs[4].ID, w, wake),
			completeWrite(runs[2].ID, w, `"two"`),
			parkWrite(runs[5].ID, w, wake.Add(time.Minute)),
		)
		for i, ok := range []bool{true, true, true, false, true, false, true, true} {
			if ok && errs[i] != nil {
				t.Fatalf("write %d: %v, want it applied", i, errs[i])
			}
		}
		requireWriteRefused(t, "completion by the worker that lost the lease", errs[3], runs[1].ID)
		requireWriteRefused(t, "park by the worker that lost the lease", errs[5], runs[4].ID)
		for i, out := range map[int]string{0: `"zero"`, 2: `"two"`} {
			if got := getRun(t, b, runs[i].ID); got.Status != backend.RunCompleted || !jsonEqual(got.Output, json.RawMessage(out)) {
				t.Fatalf("run %d = {%s, %s}, want completed with %s", i, got.Status, showJSON(got.Output), out)
			}
			requireStepCount(t, b, runs[i].ID, 1)
		}
		for i, at := range map[int]time.Time{3: wake, 5: wake.Add(time.Minute)} {
			got := getRun(t, b, runs[i].ID)
			if got.Status.Normalize() != backend.RunRunning || got.WorkerID != nil || got.AvailableAt == nil || !got.AvailableAt.Equal(at) {
				t.Fatalf("run %d = {%s, worker %v, available %v}, want parked unowned until %s", i, got.Status, got.WorkerID, got.AvailableAt, at)
			}
		}
		for _, i := range []int{1, 4} {
			if got := getRun(t, b, runs[i].ID); got.Status != backend.RunRunning || got.WorkerID == nil || *got.WorkerID != thief {
				t.Fatalf("run %d = {%s, worker %v}, want still running under the worker that took it", i, got.Status, got.WorkerID)
			}
		}
	})

	t.Run("fences each of many runs' step completions in one batch on its own", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w, thief := newWorkerID(), newWorkerID()
		var runs []*backend.WorkflowRun
		var steps []*backend.StepAttempt
		for i := range 4 {
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: fmt.Sprintf("r%d", i)})
			runs = append(runs, r)
			steps = append(steps, createStep(t, b, r.ID, w, "wait", backend.StepSleep, ""))
		}
		// Run 1 moved to another worker; run 2's attempt already completed.
		expireLease(t, b, runs[1].ID, w)
		claimEventually(t, b, thief, longLease, runs[1].ID)
		if _, err := b.CompleteStepAttempt(t.Context(), backend.CompleteStepAttemptParams{
			WorkflowRunID: runs[2].ID, StepAttemptID: steps[2].ID, WorkerID: w, Output: json.RawMessage(`"first"`),
		}); err != nil {
			t.Fatalf("complete attempt of run 2: %v", err)
		}
		fresh := insertStep(runs[3].ID, w, "fresh", backend.StepRunning, "", "")
		errs := applyWrites(t, bb,
			finishStep(runs[0].ID, w, steps[0].ID, backend.StepCompleted, `"zero"`, ""),
			fresh,
			finishStep(runs[1].ID, w, steps[1].ID, backend.StepCompleted, `"stale"`, ""),
			finishStep(runs[2].ID, w, steps[2].ID, backend.StepCompleted, `"second"`, ""),
			finishStep(runs[3].ID, w, fresh.Step.ID, backend.StepCompleted, `"fresh"`, ""),
			finishStep(runs[3].ID, w, steps[3].ID, backend.StepCompleted, `"three"`, ""),
			completeWrite(runs[0].ID, w, `"done"`),
		)
		for i, ok := range []bool{true, true, false, true, true, true, true} {
			if ok && errs[i] != nil {
				t.Fatalf("write %d: %v, want it applied", i, errs[i])
			}
		}
		requireWriteRefused(t, "step completion by the worker that lost the lease", errs[2], runs[1].ID)
		for id, out := range map[string]string{steps[0].ID: `"zero"`, steps[2].ID: `"first"`, steps[3].ID: `"three"`, fresh.Step.ID: `"fresh"`} {
			if got := getStep(t, b, id); got.Status != backend.StepCompleted || !jsonEqual(got.Output, json.RawMessage(out)) {
				t.Fatalf("attempt %s = {%s, %s}, want completed with %s", id, got.Status, showJSON(got.Output), out)
			}
		}
		if got := getStep(t, b, steps[1].ID); got.Status != backend.StepRunning {
			t.Fatalf("attempt of the run whose lease moved = %s, want still running", got.Status)
		}
	})

	t.Run("fails a write with invalid JSON alone, with ErrInvalidArgument, while the others apply", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w := newWorkerID()
		r1 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "one"})
		r2 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "two"})
		r3 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "three"})
		bad := insertStep(r1.ID, w, "bad", backend.StepCompleted, `{"unterminated":`, "")
		good := insertStep(r1.ID, w, "good", backend.StepCompleted, `true`, "")
		errs := applyWrites(t, bb, good, bad, completeWrite(r2.ID, w, `{nope`), completeWrite(r3.ID, w, `"three"`))
		requireErrorIs(t, "insert of a step with invalid output", errs[1], backend.ErrInvalidArgument)
		requireErrorIs(t, "complete with invalid output", errs[2], backend.ErrInvalidArgument)
		if errs[0] != nil || errs[3] != nil {
			t.Fatalf("good writes: %v, %v; want both applied", errs[0], errs[3])
		}
		requireStepsLikeTwin(t, "attempts of run one", stepsOf(t, b, r1.ID), []backend.StepAttempt{*getStep(t, b, good.Step.ID)})
		requireRun(t, "run whose completion was invalid", getRun(t, b, r2.ID), r2)
		if got := getRun(t, b, r3.ID); got.Status != backend.RunCompleted {
			t.Fatalf("run three is %s, want completed", got.Status)
		}
	})

	t.Run("fails a write the database rejects (a duplicate step id) alone, while the others apply", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w := newWorkerID()
		r1 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "one"})
		r2 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "two"})
		first := insertStep(r1.ID, w, "first", backend.StepCompleted, `1`, "")
		requireApplied(t, "first insert", applyWrites(t, bb, first))
		dup := insertStep(r1.ID, w, "again", backend.StepCompleted, `2`, "")
		dup.Step.ID = first.Step.ID
		before := insertStep(r2.ID, w, "before", backend.StepCompleted, `3`, "")
		errs := applyWrites(t, bb, before, dup, completeWrite(r2.ID, w, `"two"`))
		if errs[1] == nil || errors.Is(errs[1], backend.ErrNotOwner) {
			t.Fatalf("insert of a duplicate step id: %v, want an error other than ErrNotOwner", errs[1])
		}
		if errs[0] != nil || errs[2] != nil {
			t.Fatalf("good writes: %v, %v; want both applied", errs[0], errs[2])
		}
		if got := getStep(t, b, first.Step.ID); got.StepName != "first" || !jsonEqual(got.Output, json.RawMessage(`1`)) {
			t.Fatalf("first attempt = {%s, %s}, want the first insert kept", got.StepName, showJSON(got.Output))
		}
		requireStepCount(t, b, r1.ID, 1)
		requireStepCount(t, b, r2.ID, 1)
		if got := getRun(t, b, r2.ID); got.Status != backend.RunCompleted {
			t.Fatalf("run two is %s, want completed", got.Status)
		}
	})

	t.Run("reports the context's error for every write and applies none when the context is done", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ws := []backend.Write{insertStep(run.ID, w, "s", backend.StepCompleted, `1`, ""), completeWrite(run.ID, w, `1`)}
		errs := bb.ApplyWrites(ctx, ws)
		if len(errs) != len(ws) {
			t.Fatalf("ApplyWrites returned %d errors for %d writes", len(errs), len(ws))
		}
		for i, err := range errs {
			requireErrorIs(t, fmt.Sprintf("write %d with a canceled context", i), err, context.Canceled)
		}
		requireRun(t, "run after a canceled batch", getRun(t, b, run.ID), run)
		requireStepCount(t, b, run.ID, 0)
	})

	testApplyWritesWakeUps(t, s)
	testApplyWritesEvents(t, s)
}

func testApplyWritesWakeUps(t *testing.T, s *suite) {
	wakes := []struct {
		name     string
		write    func(child, wc string) backend.Write
		wantWake bool
	}{
		{"wakes a parked parent at once when WriteCompleteRun completes its child", func(child, wc string) backend.Write {
			return completeWrite(child, wc, `"child done"`)
		}, true},
		{"wakes a parked parent at once when WriteFailRun fails its child", func(child, wc string) backend.Write {
			return failWrite(child, wc, `{"message":"child failed"}`)
		}, true},
		{"does not wake the parent when WriteRescheduleRun reschedules its child", func(child, wc string) backend.Write {
			return rescheduleWrite(child, wc, `{"message":"step failed"}`, time.Now().Add(farFuture))
		}, false},
	}
	for _, c := range wakes {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			bb := batcher(t, b)
			wp, wc := newWorkerID(), newWorkerID()
			f := startFamily(t, b, wp)
			claimRun(t, b, wc, longLease, f.child.ID)
			at := ms(time.Now().Add(farFuture))
			requireApplied(t, "park of the parent", applyWrites(t, bb, parkWrite(f.parent.ID, wp, at)))
			// an unrelated top-level run completed in the same batch
			other := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "other"})
			wo := newWorkerID()
			claimRun(t, b, wo, longLease, other.ID)
			start := time.Now()
			requireApplied(t, "child's write", applyWrites(t, bb, c.write(f.child.ID, wc), completeWrite(other.ID, wo, `1`)))
			if c.wantWake {
				requireWoken(t, b, f.parent, since(start))
			} else {
				requireParkedUntil(t, b, f.parent, at)
			}
		})
	}

	parks := []struct {
		name string
		// arrive makes the wake-up happen while the parent is owned.
		arrive   func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun
		wantWake bool
	}{
		{"WriteParkRun wakes the run at once when its child already completed", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
			f := startFamily(t, b, worker)
			wc := newWorkerID()
			claimRun(t, b, wc, longLease, f.child.ID)
			completeRun(t, b, f.child.ID, wc, `"child done"`)
			return f.parent
		}, true},
		{"WriteParkRun wakes the run at once when a signal was already delivered to its wait", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
			parent := startRun(t, b, worker, backend.CreateWorkflowRunParams{})
			createStep(t, b, parent.ID, worker, "approval", backend.StepSignalWait, signalWaitContext("approve"))
			sendSignal(t, b, "approve", `{"ok":true}`)
			return parent
		}, true},
		{"WriteParkRun keeps the park time while the child is still running", func(t *testing.T, b backend.Backend, worker string) *backend.WorkflowRun {
			f := startFamily(t, b, worker)
			claimRun(t, b, newWorkerID(), longLease, f.child.ID)
			return f.parent
		}, false},
	}
	for _, c := range parks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			bb := batcher(t, b)
			w := newWorkerID()
			parent := c.arrive(t, b, w)
			at := ms(time.Now().Add(farFuture))
			start := time.Now()
			requireApplied(t, "park", applyWrites(t, bb, parkWrite(parent.ID, w, at)))
			if c.wantWake {
				requireWoken(t, b, parent, since(start))
			} else {
				requireParkedUntil(t, b, parent, at)
			}
		})
	}
}

func testApplyWritesEvents(t *testing.T, s *suite) {
	t.Run("announces finished runs and work available as the single writes do", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		w := newWorkerID()
		var runs []*backend.WorkflowRun
		for range 4 {
			r := createRun(t, b, backend.CreateWorkflowRunParams{})
			runs = append(runs, claimRun(t, b, w+"-"+r.ID, longLease, r.ID))
		}
		owner := func(r *backend.WorkflowRun) string { return *r.WorkerID }
		ch := subscribe(t, b)
		now := time.Now().Add(-time.Second)
		requireApplied(t, "batch", applyWrites(t, bb,
			completeWrite(runs[0].ID, owner(runs[0]), `1`),
			failWrite(runs[1].ID, owner(runs[1]), `{"message":"x"}`),
			rescheduleWrite(runs[2].ID, owner(runs[2]), `{"message":"y"}`, now),
			parkWrite(runs[3].ID, owner(runs[3]), now),
		))
		workFor := map[string]bool{runs[2].ID: true, runs[3].ID: true}
		awaitEvents(t, ch, map[string]func(backend.Event) bool{
			"EventRunFinished for the completed run": isFinished(runs[0].ID),
			"EventRunFinished for the failed run":    isFinished(runs[1].ID),
			"EventWorkAvailable for the due runs": func(e backend.Event) bool {
				return e.Kind == backend.EventWorkAvailable && (e.WorkflowRunID == "" || workFor[e.WorkflowRunID])
			},
		})
	})
}

func testCreateWorkflowRuns(t *testing.T, s *suite) {
	t.Run("creates pending runs in one call and returns them in the order given", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		later := ms(time.Now().Add(farFuture))
		deadline := ms(time.Now().Add(2 * farFuture))
		ps := []backend.CreateWorkflowRunParams{
			{WorkflowName: "a", Input: json.RawMessage(`{"i":0}`)},
			{WorkflowName: "b", Version: ptr("v2"), Input: json.RawMessage(`[1,"two",null]`), Config: json.RawMessage(`{"c":1}`)},
			{WorkflowName: "a", AvailableAt: &later, DeadlineAt: &deadline},
			{WorkflowName: "c", Context: json.RawMessage(`{"trace":"x"}`), Input: json.RawMessage(`12345678901234567890`)},
		}
		start := time.Now()
		got, err := bb.CreateWorkflowRuns(t.Context(), ps)
		if err != nil {
			t.Fatalf("CreateWorkflowRuns: %v", err)
		}
		win := since(start)
		if len(got) != len(ps) {
			t.Fatalf("CreateWorkflowRuns returned %d runs for %d params", len(got), len(ps))
		}
		seen := map[string]bool{}
		for i, p := range ps {
			r := got[i]
			if r == nil || r.ID == "" || seen[r.ID] {
				t.Fatalf("run %d = %+v, want a new run with its own id", i, r)
			}
			seen[r.ID] = true
			want := &backend.WorkflowRun{
				NamespaceID: b.NamespaceID(), ID: r.ID, WorkflowName: p.WorkflowName, Version: p.Version,
				Status: backend.RunPending, Config: json.RawMessage(`{}`), Context: p.Context, Input: p.Input,
				DeadlineAt: p.DeadlineAt,
				CreatedAt:  *requireTimeIn(t, fmt.Sprintf("created_at of run %d", i), &r.CreatedAt, win),
			}
			if p.Config != nil {
				want.Config = p.Config
			}
			if p.AvailableAt != nil {
				want.AvailableAt = p.AvailableAt
			} else {
				want.AvailableAt = requireTimeIn(t, fmt.Sprintf("available_at of run %d", i), r.AvailableAt, win)
			}
			requireRun(t, fmt.Sprintf("run %d", i), r, want)
			requireRun(t, fmt.Sprintf("run %d read back", i), getRun(t, b, r.ID), want)
		}
		requireCounts(t, "after the batch create", b, backend.RunCounts{Pending: len(ps)})
		claimed := claim(t, b, longLease, newWorkerID(), newWorkerID(), newWorkerID(), newWorkerID())
		if len(claimed) != 3 {
			t.Fatalf("claimed %v, want the 3 runs available now", runIDs(claimed))
		}
	})

	t.Run("returns no runs for no params", func(t *testing.T) {
		t.Parallel()
		bb := batcher(t, s.newBackend(t))
		got, err := bb.CreateWorkflowRuns(t.Context(), nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("CreateWorkflowRuns(nil) = %v, %v; want no runs and no error", got, err)
		}
	})

	t.Run("dedupes keyed entries against existing runs and within the batch", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		existing := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "wf", IdempotencyKey: ptr("k1")})
		got, err := bb.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{
			{WorkflowName: "wf", IdempotencyKey: ptr("k1")},
			{WorkflowName: "wf"},
			{WorkflowName: "wf", IdempotencyKey: ptr("k2"), Input: json.RawMessage(`1`)},
			{WorkflowName: "wf", IdempotencyKey: ptr("k2"), Input: json.RawMessage(`2`)},
			{WorkflowName: "other", IdempotencyKey: ptr("k1")},
			{WorkflowName: "wf"},
		})
		if err != nil {
			t.Fatalf("CreateWorkflowRuns: %v", err)
		}
		if len(got) != 6 {
			t.Fatalf("CreateWorkflowRuns returned %d runs, want 6", len(got))
		}
		requireRun(t, "run 0 (key of an existing run)", got[0], existing)
		if got[2].ID != got[3].ID || !jsonEqual(got[3].Input, json.RawMessage(`1`)) {
			t.Fatalf("runs 2 and 3 (same key) = %s with input %s and %s, want one run with the first input", got[2].ID, showJSON(got[3].Input), got[3].ID)
		}
		ids := map[string]bool{}
		for _, r := range got {
			ids[r.ID] = true
		}
		if len(ids) != 5 {
			t.Fatalf("%d distinct runs, want 5 (two dedupes)", len(ids))
		}
		requireCounts(t, "after the keyed batch", b, backend.RunCounts{Pending: 5})
	})

	bad := []struct {
		name  string
		entry backend.CreateWorkflowRunParams
	}{
		{"an empty workflow name", backend.CreateWorkflowRunParams{}},
		{"invalid JSON input", backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: json.RawMessage(`{"a":`)}},
		{"invalid JSON config", backend.CreateWorkflowRunParams{WorkflowName: "wf", Config: json.RawMessage(`nope`)}},
	}
	for _, c := range bad {
		t.Run("rejects the whole batch, naming the index, when an entry has "+c.name, func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			bb := batcher(t, b)
			ps := make([]backend.CreateWorkflowRunParams, 9)
			for i := range ps {
				ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "wf", Input: json.RawMessage(fmt.Sprint(i))}
			}
			ps[1].IdempotencyKey = ptr("keyed")
			ps[7] = c.entry
			got, err := bb.CreateWorkflowRuns(t.Context(), ps)
			requireErrorIs(t, "CreateWorkflowRuns with a bad entry", err, backend.ErrInvalidArgument)
			if !strings.Contains(err.Error(), "7") {
				t.Fatalf("error %q does not name the bad entry's index 7", err)
			}
			if got != nil {
				t.Fatalf("CreateWorkflowRuns returned %d runs with its error, want none", len(got))
			}
			requireCounts(t, "after the rejected batch", b, backend.RunCounts{})
		})
	}

	t.Run("announces work available", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		bb := batcher(t, b)
		ch := subscribe(t, b)
		if _, err := bb.CreateWorkflowRuns(t.Context(), []backend.CreateWorkflowRunParams{{WorkflowName: "a"}, {WorkflowName: "b"}}); err != nil {
			t.Fatal(err)
		}
		awaitEvent(t, ch, "EventWorkAvailable after a batch create", isWork)
	})
}
