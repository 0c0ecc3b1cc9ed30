package crash

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Graceful-shutdown settings: a lease far longer than the test takes, so a
// run finished by the second worker must have been released by the first,
// not reclaimed after expiry.
const (
	releaseLease = 60 * time.Second
	releaseGrace = time.Second
)

func TestWorkerProcessStoppedMidStep(t *testing.T) {
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
			testShutdownRelease(t, tc.target(t))
		})
	}
}

// testShutdownRelease stops with SIGTERM a worker process whose step
// outlives the grace period, and checks the run is handed to another
// worker process at once rather than after its lease.
func testShutdownRelease(t *testing.T, tg target) {
	client := tg.open(t)
	stepLog := filepath.Join(t.TempDir(), "steps.log")
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: stepLog,
		Concurrency: 1, LeaseDuration: releaseLease, HeartbeatInterval: time.Second,
		MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: releaseGrace,
	}
	blocking := cfg
	blocking.BlockStep = blockingStep
	first := startWorkerProcess(t, blocking)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const input = 7
	h, err := sequenceWorkflow.Start(ctx, client, input)
	if err != nil {
		t.Fatalf("start run: %v", err)
	}
	waitFor(t, time.Minute, "the first worker to block in "+blockingStep, func() (bool, error) {
		if first.exited() {
			return false, fmt.Errorf("first worker process %d exited on its own", first.pid())
		}
		events, err := readStepLog(stepLog)
		for _, ev := range events {
			if ev.Kind == eventStart && ev.RunID == h.ID && ev.Key == blockingStep {
				return true, err
			}
		}
		return false, err
	})

	stoppedAt := time.Now()
	state, stopErr := first.signalAndWait(syscall.SIGTERM, releaseGrace+10*time.Second)

	t.Run("the stopped worker exits with status 0 after its grace period", func(t *testing.T) {
		if stopErr != nil {
			t.Fatal(stopErr)
		}
		if state.ExitCode() != 0 {
			t.Errorf("first worker process ended with %v, want exit status 0", state)
		}
	})

	t.Run("the stopped worker releases the run it could not finish", func(t *testing.T) {
		run, err := client.GetRun(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if run.WorkerID != nil {
			t.Errorf("run still held by worker %s after the stop", *run.WorkerID)
		}
		if run.AvailableAt == nil || run.AvailableAt.After(time.Now().Add(time.Second)) {
			t.Errorf("run available at %v, want now (lease %v not kept)", run.AvailableAt, releaseLease)
		}
	})

	second := startWorkerProcess(t, cfg)
	resultCtx, cancelResult := context.WithTimeout(ctx, releaseLease/2)
	defer cancelResult()
	waitFinished(resultCtx, client, h.ID)
	out, resultErr := h.Result(resultCtx)

	t.Run("another worker completes the run before the old lease would have expired", func(t *testing.T) {
		if resultErr != nil {
			t.Fatalf("Result within %v of the stop: %v", releaseLease/2, resultErr)
		}
		if want := sequenceOutput(input); out != want {
			t.Errorf("output = %d, want %d", out, want)
		}
		t.Logf("completed %v after SIGTERM", time.Since(stoppedAt).Round(time.Millisecond))
	})

	t.Run("the interrupted step runs again once, after the first execution ended", func(t *testing.T) {
		events, err := readStepLog(stepLog)
		if err != nil {
			t.Fatal(err)
		}
		execs := executions(events)
		for _, key := range []string{stepAddOne, stepDouble} {
			if got := execs[stepKey{h.ID, key}]; len(got) != 1 {
				t.Errorf("step %s executed %v, want once", key, got)
			}
		}
		got := execs[stepKey{h.ID, blockingStep}]
		if len(got) != 2 || got[0].PID != first.pid() || got[1].PID != second.pid() {
			t.Fatalf("step %s executed %v, want once by process %d then once by process %d", blockingStep, got, first.pid(), second.pid())
		}
		if got[0].End.IsZero() || !got[0].End.Before(got[1].Start) {
			t.Errorf("step %s: executions overlap: %v and %v", blockingStep, got[0], got[1])
		}
	})

	t.Run("the second worker exits cleanly on SIGTERM", func(t *testing.T) {
		state, err := second.signalAndWait(syscall.SIGTERM, releaseGrace+10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if state.ExitCode() != 0 {
			t.Errorf("second worker process ended with %v, want exit status 0", state)
		}
	})
}
