package backendtest

import (
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/clock"
)

// takeOver lets worker's lease on run run out, moving clk past it, and
// has a new worker claim the run, as after a crash; it returns the new
// claim and its worker.
func takeOver(t testing.TB, clk *clock.Fake, b backend.Backend, run *backend.WorkflowRun, worker string) (*backend.WorkflowRun, string) {
	t.Helper()
	expireLease(t, clk, b, run.ID, worker)
	next := newWorkerID()
	return claimRun(t, b, next, longLease, run.ID), next
}

// testStreamVisibility: which chunks a stream shows once the attempts
// that wrote them lost their run (backend.StreamStore).
func testStreamVisibility(t *testing.T, s *suite) {
	t.Run("after a takeover, hides the chunks of the lost claim's unfinished attempts and keeps the finished ones'", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		w1 := newWorkerID()
		run := startRun(t, b, w1, backend.CreateWorkflowRunParams{})
		done := step(t, b, run, w1, "fetch")
		done.append(t, b, "out", "fetch 1")
		done.append(t, b, "out", "fetch 2")
		done.finish(t, b, false)
		failed := step(t, b, run, w1, "flaky")
		failed.append(t, b, "out", "flaky 1")
		failed.finish(t, b, true)
		slow := step(t, b, run, w1, "slow") // a running row
		slow.append(t, b, "out", "slow 1")
		fast := newWriter(run, w1) // no row yet: a step under 50 ms
		fast.append(t, b, "out", "fast 1")
		fast.close(t, b, "out")
		// A live reader sees every chunk as it comes, and the close.
		requireShown(t, b, run.ID, "out", true, 1, 2, 3, 4, 5, 6)

		again, w2 := takeOver(t, clk, b, run, w1)
		requireShown(t, b, run.ID, "out", false, 1, 2, 3)
		_, err := streamStore(t, b).AppendChunk(t.Context(), slow.params("out", []byte("slow 2"), false))
		requireErrorIs(t, "AppendChunk by the worker that lost the run", err, backend.ErrNotOwner)

		// The re-executions write on: the lost close does not block them.
		retry := step(t, b, again, w2, "slow")
		if seq := retry.append(t, b, "out", "slow 1, again"); seq != 7 {
			t.Fatalf("the re-execution's chunk got seq %d, want 7", seq)
		}
		retry.close(t, b, "out")
		chunks := requireShown(t, b, run.ID, "out", true, 1, 2, 3, 7, 8)
		if string(chunks[3].Data) != "slow 1, again" || chunks[3].StepAttemptID != retry.attempt {
			t.Fatalf("chunk 7 = %q by %s, want the re-execution's", chunks[3].Data, chunks[3].StepAttemptID)
		}
		// Counted: the chunks shown, the close's empty chunk aside.
		requireStreams(t, b, run.ID, backend.StreamInfo{Stream: "out", Chunks: 4, Closed: true})
	})

	t.Run("hides an unfinished attempt's chunks when the same worker claims the run again", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		first := step(t, b, run, w, "work")
		first.append(t, b, "out", "first claim")
		if n, err := b.ReleaseWorkflowRuns(t.Context(), []string{w}); err != nil || n != 1 {
			t.Fatalf("ReleaseWorkflowRuns = %d, %v; want 1", n, err)
		}
		requireShown(t, b, run.ID, "out", false)
		again := claimRun(t, b, w, longLease, run.ID)
		if again.Attempts != run.Attempts+1 {
			t.Fatalf("the second claim has attempts %d, want %d", again.Attempts, run.Attempts+1)
		}
		requireShown(t, b, run.ID, "out", false)
		second := step(t, b, again, w, "work")
		if seq := second.append(t, b, "out", "second claim"); seq != 2 {
			t.Fatalf("the second claim's chunk got seq %d, want 2", seq)
		}
		requireShown(t, b, run.ID, "out", false, 2)
	})

	t.Run("keeps an attempt's chunks when it is recorded finished with the park that follows", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		wr := newWriter(run, w)
		wr.append(t, b, "out", "a")
		wr.append(t, b, "out", "b")
		finished := &backend.StepAttempt{ID: wr.attempt, StepName: "fast", Kind: backend.StepFunction, Status: backend.StepCompleted}
		errs := b.ApplyWrites(t.Context(), [][]backend.Write{{
			{Kind: backend.WriteInsertStep, WorkflowRunID: run.ID, WorkerID: w, Step: finished},
			{Kind: backend.WriteParkRun, WorkflowRunID: run.ID, WorkerID: w, AvailableAt: time.Now().Add(farFuture)},
		}})
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		if got := getRun(t, b, run.ID); got.WorkerID != nil {
			t.Fatalf("the parked run has worker %s", *got.WorkerID)
		}
		// Parked, the run is under no claim: the chunks are shown because
		// their attempt is recorded finished.
		requireShown(t, b, run.ID, "out", false, 1, 2)
	})

	t.Run("hides an unfinished attempt's chunks once the run is canceled, and keeps a finished one's", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		w := newWorkerID()
		run := startRun(t, b, w, backend.CreateWorkflowRunParams{})
		done := step(t, b, run, w, "done")
		done.append(t, b, "out", "kept")
		done.finish(t, b, false)
		cut := step(t, b, run, w, "cut")
		cut.append(t, b, "out", "cut off")
		requireShown(t, b, run.ID, "out", false, 1, 2)
		cancelRun(t, b, run.ID)
		requireShown(t, b, run.ID, "out", false, 1)
	})
}
