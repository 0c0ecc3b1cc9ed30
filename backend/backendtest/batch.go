package backendtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Group commit: every write of a batch has exactly the effect it has in a
// batch of its own (see singles.go), a refused or failed group does not
// prevent the others, and batch creates behave like creates.

// applyWrites applies ws in one batch, each write a group of its own, and
// checks that there is one result per write.
func applyWrites(t testing.TB, b backend.Backend, ws ...backend.Write) []error {
	t.Helper()
	return applyGroups(t, b, singletons(ws)...)
}

// singletons makes each write a group of its own.
func singletons(ws []backend.Write) [][]backend.Write {
	groups := make([][]backend.Write, len(ws))
	for i := range ws {
		groups[i] = ws[i : i+1]
	}
	return groups
}

// applyGroups applies groups in one batch and checks that there is one
// result per group.
func applyGroups(t testing.TB, b backend.Backend, groups ...[]backend.Write) []error {
	t.Helper()
	errs := b.ApplyWrites(t.Context(), groups)
	if len(errs) != len(groups) {
		t.Fatalf("ApplyWrites of %d groups returned %d errors, want one per group", len(groups), len(errs))
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

// requireRunAs compares a run with one that went through the same
// changes in another namespace on the same fake clock: equal but for its
// namespace and id.
func requireRunAs(t testing.TB, what string, got, like *backend.WorkflowRun) {
	t.Helper()
	want := *like
	want.NamespaceID, want.ID = got.NamespaceID, got.ID
	requireRun(t, what, got, &want)
}

// requireStepsAs compares attempt lists the same way: equal but for each
// attempt's namespace, id and run id.
func requireStepsAs(t testing.TB, what string, got, like []backend.StepAttempt) {
	t.Helper()
	if len(got) != len(like) {
		t.Fatalf("%s: %d attempts, want %d", what, len(got), len(like))
	}
	for i := range got {
		g, want := got[i], like[i]
		want.NamespaceID, want.ID, want.WorkflowRunID = g.NamespaceID, g.ID, g.WorkflowRunID
		requireStep(t, fmt.Sprintf("%s: attempt %d", what, i), &g, &want)
	}
}

// writeKindCase is one write kind, to be applied in a batch among other
// runs' groups, and the same change made alone: the write in a batch of
// its own (see [Singles]), or the writes it stands for one after the
// other.
type writeKindCase struct {
	name string
	// setup prepares the owned run (in both namespaces) and returns a step
	// id the write refers to, or "".
	setup func(t *testing.T, b backend.Backend, runID, worker string) string
	// alone makes the change alone.
	alone func(t *testing.T, b backend.Backend, runID, worker, stepID string) error
	// write is the write applied in a batch.
	write func(runID, worker, stepID string) backend.Write
}

func noSetup(*testing.T, backend.Backend, string, string) string { return "" }

func runningStep(t *testing.T, b backend.Backend, runID, worker string) string {
	return createStep(t, b, runID, worker, "slow", backend.StepFunction, "").ID
}

// parkAt is the wake-up time of the park and reschedule cases.
var parkAt = fakeEpoch.Add(farFuture)

func writeKindCases() []writeKindCase {
	create := func(t *testing.T, b backend.Backend, runID, worker string) (*backend.StepAttempt, error) {
		return Single(b).CreateStepAttempt(t.Context(), CreateStepAttemptParams{WorkflowRunID: runID, WorkerID: worker, StepName: "fast", Kind: backend.StepFunction})
	}
	return []writeKindCase{
		{"WriteInsertStep of a running attempt", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := create(t, b, runID, worker)
				return err
			},
			func(runID, worker, _ string) backend.Write {
				return insertStep(runID, worker, "fast", backend.StepRunning, "", "")
			}},
		{"WriteInsertStep of a completed attempt is the insert of a running attempt and its completion", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				s, err := create(t, b, runID, worker)
				if err != nil {
					return err
				}
				_, err = Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: s.ID, WorkerID: worker, Output: json.RawMessage(`{"i":1}`)})
				return err
			},
			func(runID, worker, _ string) backend.Write {
				return insertStep(runID, worker, "fast", backend.StepCompleted, `{"i":1}`, "")
			}},
		{"WriteInsertStep of a failed attempt is the insert of a running attempt and its failure", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				s, err := create(t, b, runID, worker)
				if err != nil {
					return err
				}
				_, err = Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: runID, StepAttemptID: s.ID, WorkerID: worker, Error: json.RawMessage(`{"message":"boom"}`)})
				return err
			},
			func(runID, worker, _ string) backend.Write {
				return insertStep(runID, worker, "fast", backend.StepFailed, "", `{"message":"boom"}`)
			}},
		{"WriteFinishStep completing an attempt", runningStep,
			func(t *testing.T, b backend.Backend, runID, worker, stepID string) error {
				_, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: stepID, WorkerID: worker, Output: json.RawMessage(`[1,2]`)})
				return err
			},
			func(runID, worker, stepID string) backend.Write {
				return finishStep(runID, worker, stepID, backend.StepCompleted, `[1,2]`, "")
			}},
		{"WriteFinishStep completing an attempt with no output", runningStep,
			func(t *testing.T, b backend.Backend, runID, worker, stepID string) error {
				_, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: runID, StepAttemptID: stepID, WorkerID: worker})
				return err
			},
			func(runID, worker, stepID string) backend.Write {
				return finishStep(runID, worker, stepID, backend.StepCompleted, "", "")
			}},
		{"WriteFinishStep failing an attempt", runningStep,
			func(t *testing.T, b backend.Backend, runID, worker, stepID string) error {
				_, err := Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: runID, StepAttemptID: stepID, WorkerID: worker, Error: json.RawMessage(`{"message":"slow boom"}`)})
				return err
			},
			func(runID, worker, stepID string) backend.Write {
				return finishStep(runID, worker, stepID, backend.StepFailed, "", `{"message":"slow boom"}`)
			}},
		{"WriteCompleteRun", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := Single(b).CompleteWorkflowRun(t.Context(), CompleteWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, Output: json.RawMessage(`{"total":42}`)})
				return err
			},
			func(runID, worker, _ string) backend.Write { return completeWrite(runID, worker, `{"total":42}`) }},
		{"WriteCompleteRun with no output", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := Single(b).CompleteWorkflowRun(t.Context(), CompleteWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker})
				return err
			},
			func(runID, worker, _ string) backend.Write { return completeWrite(runID, worker, "") }},
		{"WriteParkRun", runningStep,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				return Single(b).SleepWorkflowRun(t.Context(), SleepWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, AvailableAt: parkAt})
			},
			func(runID, worker, _ string) backend.Write { return parkWrite(runID, worker, parkAt) }},
		{"WriteRescheduleRun", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := Single(b).RescheduleWorkflowRunAfterFailedStepAttempt(t.Context(), RescheduleWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, Error: json.RawMessage(`{"message":"retry me"}`), AvailableAt: parkAt})
				return err
			},
			func(runID, worker, _ string) backend.Write {
				return rescheduleWrite(runID, worker, `{"message":"retry me"}`, parkAt)
			}},
		{"WriteFailRun", noSetup,
			func(t *testing.T, b backend.Backend, runID, worker, _ string) error {
				_, err := Single(b).FailWorkflowRun(t.Context(), FailWorkflowRunParams{WorkflowRunID: runID, WorkerID: worker, Error: json.RawMessage(`{"message":"fatal"}`)})
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
	for _, c := range writeKindCases() {
		t.Run(c.name+": the same in a batch among other runs' groups as alone", func(t *testing.T) {
			t.Parallel()
			clk := newClock() // one clock: both namespaces write the same times
			alone, batched := s.newBackendOn(t, clk), s.newBackendOn(t, clk)
			w := newWorkerID() // the same worker id on both sides: namespaces differ
			aloneRun := startRun(t, alone, w, backend.CreateWorkflowRunParams{Input: json.RawMessage(`{"n":1}`)})
			run := startRun(t, batched, w, backend.CreateWorkflowRunParams{Input: json.RawMessage(`{"n":1}`)})
			before := startRun(t, batched, w, backend.CreateWorkflowRunParams{WorkflowName: "before"})
			after := startRun(t, batched, w, backend.CreateWorkflowRunParams{WorkflowName: "after"})
			aloneStep := c.setup(t, alone, aloneRun.ID, w)
			step := c.setup(t, batched, run.ID, w)
			clk.Advance(time.Second)

			if err := c.alone(t, alone, aloneRun.ID, w, aloneStep); err != nil {
				t.Fatalf("the change alone: %v", err)
			}
			requireApplied(t, "batch", applyGroups(t, batched,
				[]backend.Write{insertStep(before.ID, w, "s", backend.StepCompleted, `1`, ""), completeWrite(before.ID, w, `"before"`)},
				[]backend.Write{c.write(run.ID, w, step)},
				[]backend.Write{insertStep(after.ID, w, "s", backend.StepRunning, "", "")},
			))

			requireRunAs(t, "run written in the batch", getRun(t, batched, run.ID), getRun(t, alone, aloneRun.ID))
			requireStepsAs(t, "attempts written in the batch", stepsOf(t, batched, run.ID), stepsOf(t, alone, aloneRun.ID))
			if got := getRun(t, batched, before.ID); got.Status != backend.RunCompleted {
				t.Fatalf("the run of the group before is %s, want completed", got.Status)
			}
			requireStepCount(t, batched, after.ID, 1)
		})
	}

	t.Run("returns no errors for an empty batch", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		if errs := b.ApplyWrites(t.Context(), nil); len(errs) != 0 {
			t.Fatalf("ApplyWrites(nil) = %v, want no errors", errs)
		}
	})

	t.Run("stamps the times it writes from the backend's clock", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		clk.Advance(time.Minute)
		ins := insertStep(run.ID, w, "s", backend.StepCompleted, `{"a":1}`, "")
		requireApplied(t, "insert and complete", applyGroups(t, b, []backend.Write{ins, completeWrite(run.ID, w, "")}))
		got := getStep(t, b, ins.Step.ID)
		for name, ts := range map[string]*time.Time{"started_at": got.StartedAt, "finished_at": got.FinishedAt, "created_at": &got.CreatedAt, "updated_at": &got.UpdatedAt} {
			requireTimeAt(t, "step "+name, ts, clk.Now())
		}
		r := getRun(t, b, run.ID)
		if r.Status != backend.RunCompleted || !jsonEqual(r.Output, json.RawMessage(`null`)) {
			t.Fatalf("run = {%s, %s}, want completed with null", r.Status, showJSON(r.Output))
		}
		requireTimeAt(t, "run finished_at", r.FinishedAt, clk.Now())
		requireTimeAt(t, "run updated_at", &r.UpdatedAt, clk.Now())
	})

	t.Run("applies batches sent at once from many goroutines through two backends", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		backends := []backend.Backend{s.backendIn(t, ns), s.backendIn(t, ns)}
		const goroutines, runsEach, stepsEach = 6, 5, 4
		type owned struct{ id, worker string }
		all := make([][]owned, goroutines)
		for g := range all {
			for range runsEach {
				w := newWorkerID()
				all[g] = append(all[g], owned{startRun(t, backends[0], w, backend.CreateWorkflowRunParams{}).ID, w})
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, goroutines*stepsEach*runsEach)
		for g, mine := range all {
			wg.Go(func() {
				for i := range stepsEach {
					var groups [][]backend.Write
					for _, o := range mine {
						group := []backend.Write{insertStep(o.id, o.worker, fmt.Sprint("s", i), backend.StepCompleted, fmt.Sprint(i), "")}
						if i == stepsEach-1 {
							group = append(group, completeWrite(o.id, o.worker, `"done"`))
						}
						groups = append(groups, group)
					}
					for j, err := range backends[g%2].ApplyWrites(t.Context(), groups) {
						if err != nil {
							errs <- fmt.Errorf("goroutine %d, batch %d, group %d: %w", g, i, j, err)
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, mine := range all {
			for _, o := range mine {
				requireStepCount(t, backends[1], o.id, stepsEach)
				if r := getRun(t, backends[1], o.id); r.Status != backend.RunCompleted {
					t.Fatalf("run %s is %s, want completed", o.id, r.Status)
				}
			}
		}
	})

	t.Run("keeps the caller's step attempt id, and a given finish time", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		write := insertStep(run.ID, w, "timed", backend.StepCompleted, `1`, "")
		started, finished := ms(time.Now().Add(-time.Minute)), ms(time.Now().Add(-30*time.Second))
		write.Step.StartedAt, write.Step.FinishedAt = &started, &finished
		requireApplied(t, "insert of a timed attempt", applyWrites(t, b, write))
		got := getStep(t, b, write.Step.ID)
		var d differ
		d.time("started_at", got.StartedAt, &started)
		d.time("finished_at", got.FinishedAt, &finished)
		d.str("status", string(got.Status), string(backend.StepCompleted))
		d.fail(t, "attempt inserted with its times")
	})

	t.Run("applies the writes of good owners and refuses stale ones with ErrNotOwner, changing nothing for them", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		wa, wb, wc := newWorkerID(), newWorkerID(), newWorkerID()
		r1 := startRun(t, b, wa, backend.CreateWorkflowRunParams{WorkflowName: "one"})
		r2 := startRun(t, b, wb, backend.CreateWorkflowRunParams{WorkflowName: "two"})
		r3 := startRun(t, b, wa, backend.CreateWorkflowRunParams{WorkflowName: "three"})
		slow := createStep(t, b, r3.ID, wa, "slow", backend.StepFunction, "")
		expireLease(t, clk, b, r3.ID, wa)
		moved := claimRun(t, b, wc, longLease, r3.ID) // r3's lease moved from wa to wc
		canceled := cancelRun(t, b, startRun(t, b, wb, backend.CreateWorkflowRunParams{WorkflowName: "four"}).ID)

		good := insertStep(r1.ID, wa, "a", backend.StepCompleted, `{"i":1}`, "")
		errs := applyWrites(t, b,
			good,
			insertStep(r3.ID, wa, "stale", backend.StepCompleted, `{"i":2}`, ""),
			finishStep(r3.ID, wa, slow.ID, backend.StepCompleted, `"stale"`, ""),
			completeWrite(r2.ID, wb, `"two done"`),
			completeWrite(r3.ID, wa, `"stale done"`),
			parkWrite(r3.ID, wa, clk.Now()),
			rescheduleWrite(r3.ID, wa, `{"message":"stale"}`, clk.Now()),
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
		requireStepsAs(t, "attempts of the run whose lease moved", stepsOf(t, b, r3.ID), []backend.StepAttempt{*slow})
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
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		ins := insertStep(run.ID, w, "s", backend.StepRunning, "", "")
		start := time.Now()
		requireApplied(t, "insert, finish, complete", applyWrites(t, b,
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
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		errs := applyWrites(t, b, completeWrite(run.ID, w, `1`), insertStep(run.ID, w, "late", backend.StepCompleted, `2`, ""))
		if errs[0] != nil {
			t.Fatalf("complete: %v", errs[0])
		}
		requireWriteRefused(t, "step inserted after the completion", errs[1], run.ID)
		requireStepCount(t, b, run.ID, 0)
	})

	t.Run("refuses inserts after their run's completion while inserts of other runs and earlier ones apply", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		x := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "x"})
		y := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "y"})
		errs := applyWrites(t, b,
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
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w, thief := newWorkerID(), newWorkerID()
		var runs []*backend.WorkflowRun
		for i := range 6 {
			runs = append(runs, startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: fmt.Sprintf("r%d", i)}))
		}
		// Runs 1 (to complete) and 4 (to park) moved to another worker.
		for _, i := range []int{1, 4} {
			expireLease(t, clk, b, runs[i].ID, w)
			claimRun(t, b, thief, longLease, runs[i].ID)
		}
		wake := clk.Now().Add(time.Hour)
		errs := applyWrites(t, b,
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
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w, thief := newWorkerID(), newWorkerID()
		var runs []*backend.WorkflowRun
		var steps []*backend.StepAttempt
		for i := range 4 {
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: fmt.Sprintf("r%d", i)})
			runs = append(runs, r)
			steps = append(steps, createStep(t, b, r.ID, w, "wait", backend.StepSleep, ""))
		}
		// Run 1 moved to another worker; run 2's attempt already completed.
		expireLease(t, clk, b, runs[1].ID, w)
		claimRun(t, b, thief, longLease, runs[1].ID)
		if _, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{
			WorkflowRunID: runs[2].ID, StepAttemptID: steps[2].ID, WorkerID: w, Output: json.RawMessage(`"first"`),
		}); err != nil {
			t.Fatalf("complete attempt of run 2: %v", err)
		}
		fresh := insertStep(runs[3].ID, w, "fresh", backend.StepRunning, "", "")
		errs := applyWrites(t, b,
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

	t.Run("fences each of many runs' wake-ups in one batch on its own: the sleep's completion, the next step, the run's completion", func(t *testing.T) {
		// A wave of runs woken from their sleeps: each group completes its
		// sleep, records its next step and completes its run, the shape
		// PostgreSQL sends as one write_steps statement. The run whose
		// lease moved to another worker keeps its sleep running, gets no
		// step and stays the thief's.
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w, thief := newWorkerID(), newWorkerID()
		var runs []*backend.WorkflowRun
		var sleeps []*backend.StepAttempt
		for i := range 4 {
			r := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: fmt.Sprintf("r%d", i)})
			runs = append(runs, r)
			sleeps = append(sleeps, createStep(t, b, r.ID, w, "nap", backend.StepSleep, ""))
		}
		expireLease(t, clk, b, runs[1].ID, w)
		claimRun(t, b, thief, longLease, runs[1].ID)
		var groups [][]backend.Write
		var next []backend.Write
		for i, r := range runs {
			step := insertStep(r.ID, w, "after", backend.StepCompleted, fmt.Sprint(i), "")
			next = append(next, step)
			groups = append(groups, []backend.Write{
				finishStep(r.ID, w, sleeps[i].ID, backend.StepCompleted, "null", ""),
				step,
				completeWrite(r.ID, w, fmt.Sprint(i)),
			})
		}
		errs := applyGroups(t, b, groups...)
		requireWriteRefused(t, "wake-up by the worker that lost the lease", errs[1], runs[1].ID)
		for i, r := range runs {
			if i == 1 {
				continue
			}
			if errs[i] != nil {
				t.Fatalf("wake-up of run %d: %v, want it applied", i, errs[i])
			}
			if got := getStep(t, b, sleeps[i].ID); got.Status != backend.StepCompleted {
				t.Fatalf("sleep of run %d is %s, want completed", i, got.Status)
			}
			if got := getStep(t, b, next[i].Step.ID); got.Status != backend.StepCompleted || !jsonEqual(got.Output, json.RawMessage(fmt.Sprint(i))) {
				t.Fatalf("next step of run %d = {%s, %s}, want completed with %d", i, got.Status, showJSON(got.Output), i)
			}
			if got := getRun(t, b, r.ID); got.Status != backend.RunCompleted {
				t.Fatalf("run %d is %s, want completed", i, got.Status)
			}
		}
		if got := getStep(t, b, sleeps[1].ID); got.Status != backend.StepRunning {
			t.Fatalf("sleep of the run whose lease moved is %s, want still running", got.Status)
		}
		requireStepCount(t, b, runs[1].ID, 1)
		if got := getRun(t, b, runs[1].ID); got.Status != backend.RunRunning || got.WorkerID == nil || *got.WorkerID != thief {
			t.Fatalf("the run whose lease moved is %s under %v, want running under the thief", got.Status, got.WorkerID)
		}
	})

	t.Run("fails a write with invalid JSON alone, with ErrInvalidArgument, while the others apply", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r1 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "one"})
		r2 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "two"})
		r3 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "three"})
		bad := insertStep(r1.ID, w, "bad", backend.StepCompleted, `{"unterminated":`, "")
		good := insertStep(r1.ID, w, "good", backend.StepCompleted, `true`, "")
		errs := applyWrites(t, b, good, bad, completeWrite(r2.ID, w, `{nope`), completeWrite(r3.ID, w, `"three"`))
		requireErrorIs(t, "insert of a step with invalid output", errs[1], backend.ErrInvalidArgument)
		requireErrorIs(t, "complete with invalid output", errs[2], backend.ErrInvalidArgument)
		if errs[0] != nil || errs[3] != nil {
			t.Fatalf("good writes: %v, %v; want both applied", errs[0], errs[3])
		}
		requireStepsAs(t, "attempts of run one", stepsOf(t, b, r1.ID), []backend.StepAttempt{*getStep(t, b, good.Step.ID)})
		requireRun(t, "run whose completion was invalid", getRun(t, b, r2.ID), r2)
		if got := getRun(t, b, r3.ID); got.Status != backend.RunCompleted {
			t.Fatalf("run three is %s, want completed", got.Status)
		}
	})

	t.Run("fails a write the database rejects (a duplicate step id) alone, while the others apply", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		r1 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "one"})
		r2 := startRun(t, b, w, backend.CreateWorkflowRunParams{WorkflowName: "two"})
		first := insertStep(r1.ID, w, "first", backend.StepCompleted, `1`, "")
		requireApplied(t, "first insert", applyWrites(t, b, first))
		dup := insertStep(r1.ID, w, "again", backend.StepCompleted, `2`, "")
		dup.Step.ID = first.Step.ID
		before := insertStep(r2.ID, w, "before", backend.StepCompleted, `3`, "")
		errs := applyWrites(t, b, before, dup, completeWrite(r2.ID, w, `"two"`))
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
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ws := []backend.Write{insertStep(run.ID, w, "s", backend.StepCompleted, `1`, ""), completeWrite(run.ID, w, `1`)}
		errs := b.ApplyWrites(ctx, singletons(ws))
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
