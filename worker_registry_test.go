package openworkflow_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// TestAnIdleWorkerIsListedWithItsWorkflowsAndFreeSlots: a started worker
// holding no run is in the registry of workers (it was invisible when
// workers were derived from runs), with what it registered and all its
// slots free, and its workflows are served; Stop marks it stopped and its
// workflows no longer served.
func TestAnIdleWorkerIsListedWithItsWorkflowsAndFreeSlots(t *testing.T) {
	b := openTestBackend(t, nil)
	c := ow.NewClient(b)
	order := ow.Define(ow.Spec{Name: "order", InputExample: `{"orderId":"o-1"}`}, func(ctx ow.Context, in map[string]any) (int, error) { return 1, nil })
	ship := ow.Define(ow.Spec{Name: "ship", Version: "v2"}, func(ctx ow.Context, in string) (int, error) { return 2, nil })
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 3, ID: "idle-worker"})
	if err := w.Register(order, ship); err != nil {
		t.Fatalf("register: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = w.Stop(context.Background())
		}
	}()
	// A run of a workflow nobody registered, to be listed as unserved.
	if _, err := c.StartByName(ctx, "nobody-serves", "", nil); err != nil {
		t.Fatalf("start run: %v", err)
	}

	ws, err := c.ListWorkers(ctx)
	if err != nil {
		t.Fatalf("ListWorkers: %v", err)
	}
	if len(ws) != 1 {
		t.Fatalf("ListWorkers = %+v, want the one idle worker", ws)
	}
	got := ws[0]
	wantWorkflows := []backend.RegisteredWorkflow{{Name: "order", InputExample: `{"orderId":"o-1"}`}, {Name: "ship", Version: "v2"}}
	if got.ID != "idle-worker" || got.State != backend.WorkerRunning || got.Concurrency != 3 || got.InUse != 0 ||
		got.SDK != ow.SDKName || got.SDKVersion == "" || got.PID == 0 || got.HeartbeatInterval != 10*time.Second ||
		!slices.Equal(got.Workflows, wantWorkflows) {
		t.Fatalf("the idle worker is listed as %+v; want running, 0 of 3 slots in use, workflows %+v", got, wantWorkflows)
	}

	sums, err := c.ListWorkflows(ctx)
	if err != nil {
		t.Fatalf("ListWorkflows: %v", err)
	}
	byName := map[string]ow.WorkflowSummary{}
	for _, s := range sums {
		byName[s.Name] = s
	}
	if s := byName["order"]; !s.Registered || !s.Served() || s.InputExample != `{"orderId":"o-1"}` || !slices.Equal(s.LiveWorkers, []string{"idle-worker"}) {
		t.Fatalf("order: %+v, want registered and served by idle-worker with its example", s)
	}
	if s := byName["nobody-serves"]; s.Registered || s.Served() || s.Active.Pending != 1 {
		t.Fatalf("nobody-serves: %+v, want unregistered, unserved, 1 pending run", s)
	}

	if err := w.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped = true
	ws, err = c.ListWorkers(ctx)
	if err != nil || len(ws) != 1 || ws[0].State != backend.WorkerStopped {
		t.Fatalf("after Stop: ListWorkers = %+v, %v; want the worker stopped", ws, err)
	}
	sums, _ = c.ListWorkflows(ctx)
	for _, s := range sums {
		if s.Served() {
			t.Fatalf("after Stop, %s is still served by %v", s.Name, s.LiveWorkers)
		}
	}
}

// TestAWorkerWithNegativeRegistryIntervalWritesNoRecord: the registry is
// optional for a worker.
func TestAWorkerWithNegativeRegistryIntervalWritesNoRecord(t *testing.T) {
	b := openTestBackend(t, nil)
	ctx := startWorker(t, b, ow.WorkerOptions{ID: "unlisted", RegistryInterval: -1})
	ws, err := ow.NewClient(b).ListWorkers(ctx)
	if err != nil || len(ws) != 0 {
		t.Fatalf("ListWorkers = %+v, %v; want none", ws, err)
	}
}

// TestRegisterRefusesAnInputExampleThatIsNotJSON names the workflow.
func TestRegisterRefusesAnInputExampleThatIsNotJSON(t *testing.T) {
	w := ow.NewWorker(openTestBackend(t, nil), ow.WorkerOptions{})
	bad := ow.Define(ow.Spec{Name: "bad", InputExample: "{orderId: 1}"}, func(ctx ow.Context, in int) (int, error) { return in, nil })
	err := w.Register(bad)
	if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "InputExample") {
		t.Fatalf("Register = %v, want an error naming workflow \"bad\" and its InputExample", err)
	}
	if errors.Is(err, ow.ErrAlreadyRegistered) {
		t.Fatalf("Register = %v, not a duplicate", err)
	}
}
