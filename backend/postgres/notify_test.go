package postgres_test

// The PostgreSQL side of Subscribe: what the notifications carry (the run
// each event names) and the LISTEN connection they come through. When
// events are published, and to whom, is specified for every backend in
// backend/backendtest (subscribe.go).

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

func TestNotifications(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("name the run created, completed or canceled", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		events, err := b.Subscribe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		run := createRun(t, b, backend.CreateWorkflowRunParams{})
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable, WorkflowRunID: run.ID})
		claim(t, b, time.Hour, "w")
		if _, err := backendtest.Single(b).CompleteWorkflowRun(ctx, backendtest.CompleteWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, events, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: run.ID})
		later := time.Now().Add(time.Hour)
		canceled := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &later})
		if _, err := b.CancelWorkflowRun(ctx, canceled.ID); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, events, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: canceled.ID})
	})

	t.Run("name the parked parent a child's end wakes", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		events, err := b.Subscribe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		parent := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "parent"})
		claim(t, b, time.Hour, "pw")
		step, err := backendtest.Single(b).CreateStepAttempt(ctx, backendtest.CreateStepAttemptParams{WorkflowRunID: parent.ID, WorkerID: "pw", StepName: "child", Kind: backend.StepWorkflow, Context: json.RawMessage(`{"kind":"workflow","timeoutAt":null}`)})
		if err != nil {
			t.Fatal(err)
		}
		ns := b.NamespaceID()
		later := time.Now().Add(time.Hour)
		child := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child", ParentStepAttemptNamespaceID: &ns, ParentStepAttemptID: &step.ID, AvailableAt: &later})
		if _, err := backendtest.Single(b).SetStepAttemptChildWorkflowRun(ctx, backendtest.SetStepAttemptChildWorkflowRunParams{WorkflowRunID: parent.ID, StepAttemptID: step.ID, WorkerID: "pw", ChildWorkflowRunNamespaceID: ns, ChildWorkflowRunID: child.ID}); err != nil {
			t.Fatal(err)
		}
		if err := backendtest.Single(b).SleepWorkflowRun(ctx, backendtest.SleepWorkflowRunParams{WorkflowRunID: parent.ID, WorkerID: "pw", AvailableAt: later}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.CancelWorkflowRun(ctx, child.ID); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable, WorkflowRunID: parent.ID})
	})

	t.Run("resume after the listener's connection is killed, saying work may have been missed", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		events, err := b.Subscribe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		pid := postgres.ListenerPID(b)
		if pid == 0 {
			t.Fatal("listener not connected")
		}
		if _, err := requirePool(t).Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable})
		expectEvent(t, events, backend.Event{Kind: backend.EventResync})
		run := createRun(t, b, backend.CreateWorkflowRunParams{})
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable, WorkflowRunID: run.ID})
	})

	t.Run("cannot be subscribed to after Close", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		if _, err := b.Subscribe(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Subscribe(t.Context()); err == nil {
			t.Error("Subscribe on a closed backend succeeded")
		}
	})
}

// expectEvent waits for an event equal to want, ignoring others.
func expectEvent(t *testing.T, events <-chan backend.Event, want backend.Event) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("events closed while waiting for %+v", want)
			}
			if e == want {
				return
			}
		case <-timeout:
			t.Fatalf("no event %+v within 10s", want)
		}
	}
}
