package backendtest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// workerRegistry returns b's WorkerRegistry, skipping the test when b
// does not implement the capability.
func workerRegistry(t *testing.T, b backend.Backend) backend.WorkerRegistry {
	t.Helper()
	wr, ok := b.(backend.WorkerRegistry)
	if !ok {
		t.Skip("the backend does not implement backend.WorkerRegistry")
	}
	return wr
}

// workerRecord is a valid record of a running worker id with two slots.
func workerRecord(id string) backend.WorkerRecord {
	return backend.WorkerRecord{
		ID: id, Host: "host-a", PID: 4242, SDK: "openworkflow-go", SDKVersion: "v1.2.3",
		State: backend.WorkerRunning, Concurrency: 2, InUse: 0, HeartbeatInterval: 10 * time.Second,
		Workflows: []backend.RegisteredWorkflow{
			{Name: "ship", Version: "v2"},
			{Name: "order", InputExample: `{"id": 1}`},
		},
	}
}

func putWorker(t *testing.T, wr backend.WorkerRegistry, w backend.WorkerRecord) {
	t.Helper()
	if err := wr.PutWorker(t.Context(), w); err != nil {
		t.Fatalf("PutWorker(%s): %v", w.ID, err)
	}
}

// listWorkers returns the listed workers by id.
func listWorkers(t *testing.T, wr backend.WorkerRegistry) map[string]backend.WorkerRecord {
	t.Helper()
	ws, err := wr.ListWorkers(t.Context())
	if err != nil {
		t.Fatalf("ListWorkers: %v", err)
	}
	out := map[string]backend.WorkerRecord{}
	for i, w := range ws {
		if i > 0 && ws[i-1].ID >= w.ID {
			t.Fatalf("ListWorkers not ordered by id: %q then %q", ws[i-1].ID, w.ID)
		}
		out[w.ID] = w
	}
	return out
}

func testWorkerRegistry(t *testing.T, s *suite) {
	t.Run("a put worker is listed with everything it wrote, its workflows by name", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		wr := workerRegistry(t, b)
		putWorker(t, wr, workerRecord("w1"))
		got, ok := listWorkers(t, wr)["w1"]
		if !ok {
			t.Fatal("the worker put is not listed")
		}
		want := workerRecord("w1")
		want.NamespaceID = b.NamespaceID()
		want.StartedAt, want.LastHeartbeatAt = clk.Now(), clk.Now()
		want.Workflows = []backend.RegisteredWorkflow{{Name: "order", InputExample: `{"id": 1}`}, {Name: "ship", Version: "v2"}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("listed %+v\nwant   %+v", got, want)
		}
	})

	t.Run("a heartbeat replaces the record, moves last_heartbeat_at and keeps started_at", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		wr := workerRegistry(t, s.newBackendOn(t, clk))
		start := clk.Now()
		putWorker(t, wr, workerRecord("w1"))
		clk.Advance(10 * time.Second)
		beat := workerRecord("w1")
		beat.InUse = 2
		beat.Workflows = beat.Workflows[:1]
		putWorker(t, wr, beat)
		got := listWorkers(t, wr)["w1"]
		if !got.StartedAt.Equal(start) || !got.LastHeartbeatAt.Equal(clk.Now()) {
			t.Fatalf("started %v, last heartbeat %v; want %v and %v", got.StartedAt, got.LastHeartbeatAt, start, clk.Now())
		}
		if got.InUse != 2 || len(got.Workflows) != 1 || got.Workflows[0].Name != "ship" {
			t.Fatalf("after the heartbeat: %d in use, workflows %+v; want 2 and [ship]", got.InUse, got.Workflows)
		}
	})

	t.Run("a given started_at is stored, replacing the first one (a restart under the same id)", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		wr := workerRegistry(t, s.newBackendOn(t, clk))
		putWorker(t, wr, workerRecord("w1"))
		clk.Advance(time.Hour)
		again := workerRecord("w1")
		again.StartedAt = clk.Now().Add(-time.Second)
		putWorker(t, wr, again)
		if got := listWorkers(t, wr)["w1"].StartedAt; !got.Equal(again.StartedAt) {
			t.Fatalf("started_at %v, want %v", got, again.StartedAt)
		}
	})

	t.Run("a worker silent for 3 heartbeat intervals is gone, and a stopped one stays stopped", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		wr := workerRegistry(t, s.newBackendOn(t, clk))
		putWorker(t, wr, workerRecord("running"))
		draining := workerRecord("draining")
		draining.State = backend.WorkerDraining
		putWorker(t, wr, draining)
		stopped := workerRecord("stopped")
		stopped.State = backend.WorkerStopped
		putWorker(t, wr, stopped)
		clk.Advance(backend.WorkerMissedHeartbeats * 10 * time.Second)
		ws := listWorkers(t, wr)
		if ws["running"].State != backend.WorkerRunning || ws["draining"].State != backend.WorkerDraining || ws["stopped"].State != backend.WorkerStopped {
			t.Fatalf("at exactly 3 intervals: states %s, %s, %s; want running, draining, stopped",
				ws["running"].State, ws["draining"].State, ws["stopped"].State)
		}
		clk.Advance(time.Second)
		ws = listWorkers(t, wr)
		if ws["running"].State != backend.WorkerGone || ws["draining"].State != backend.WorkerGone || ws["stopped"].State != backend.WorkerStopped {
			t.Fatalf("past 3 intervals: states %s, %s, %s; want gone, gone, stopped",
				ws["running"].State, ws["draining"].State, ws["stopped"].State)
		}
		putWorker(t, wr, workerRecord("running"))
		if st := listWorkers(t, wr)["running"].State; st != backend.WorkerRunning {
			t.Fatalf("a gone worker that heartbeats again is %s, want running", st)
		}
	})

	t.Run("Stop's put marks the worker stopped", func(t *testing.T) {
		t.Parallel()
		wr := workerRegistry(t, s.newBackendOn(t, newClock()))
		putWorker(t, wr, workerRecord("w1"))
		stop := workerRecord("w1")
		stop.State = backend.WorkerStopped
		putWorker(t, wr, stop)
		if st := listWorkers(t, wr)["w1"].State; st != backend.WorkerStopped {
			t.Fatalf("state %s, want stopped", st)
		}
	})

	t.Run("a worker silent for WorkerForgetAfter is no longer listed, and the next put deletes it", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		wr := workerRegistry(t, b)
		putWorker(t, wr, workerRecord("old"))
		clk.Advance(backend.WorkerForgetAfter)
		if _, ok := listWorkers(t, wr)["old"]; !ok {
			t.Fatal("a worker silent for exactly WorkerForgetAfter is forgotten already")
		}
		clk.Advance(time.Millisecond)
		if _, ok := listWorkers(t, wr)["old"]; ok {
			t.Fatal("a worker silent for longer than WorkerForgetAfter is still listed")
		}
		putWorker(t, wr, workerRecord("new"))
		// The row is gone, not merely hidden: a backend whose clock is
		// back at the first put would list it if it were still stored.
		back := s.backendInOn(t, b.NamespaceID(), newClock())
		ws := listWorkers(t, workerRegistry(t, back))
		if _, ok := ws["old"]; ok {
			t.Fatal("the forgotten worker's row was not deleted by the next put")
		}
	})

	t.Run("workers of other namespaces are neither listed nor forgotten", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		a := workerRegistry(t, s.newBackendOn(t, clk))
		other := workerRegistry(t, s.newBackendOn(t, clk))
		putWorker(t, other, workerRecord("theirs"))
		clk.Advance(backend.WorkerForgetAfter + time.Hour)
		putWorker(t, a, workerRecord("mine"))
		if ws := listWorkers(t, a); len(ws) != 1 {
			t.Fatalf("namespace a lists %d workers, want only its own", len(ws))
		}
		clk.Set(fakeEpoch)
		if _, ok := listWorkers(t, other)["theirs"]; !ok {
			t.Fatal("a put in namespace a deleted a worker of another namespace")
		}
	})

	t.Run("an invalid record is refused, naming what is wrong, and nothing is written", func(t *testing.T) {
		t.Parallel()
		wr := workerRegistry(t, s.newBackendOn(t, newClock()))
		cases := []struct {
			name   string
			change func(*backend.WorkerRecord)
			says   string
		}{
			{"empty id", func(w *backend.WorkerRecord) { w.ID = "" }, "empty worker id"},
			{"gone stored", func(w *backend.WorkerRecord) { w.State = backend.WorkerGone }, "not running, draining or stopped"},
			{"no interval", func(w *backend.WorkerRecord) { w.HeartbeatInterval = 0 }, "heartbeat interval"},
			{"more in use than slots", func(w *backend.WorkerRecord) { w.InUse = 3 }, "3 slots in use of 2"},
			{"example not JSON", func(w *backend.WorkerRecord) { w.Workflows[0].InputExample = "{nope" }, "input example"},
			{"unnamed workflow", func(w *backend.WorkerRecord) { w.Workflows[0].Name = "" }, "registered workflow"},
			{"U+0000 in host", func(w *backend.WorkerRecord) { w.Host = "a\x00b" }, "worker host"},
		}
		for _, c := range cases {
			w := workerRecord("bad")
			c.change(&w)
			err := wr.PutWorker(t.Context(), w)
			if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: PutWorker = %v, want ErrInvalidArgument saying %q", c.name, err, c.says)
			}
		}
		if ws := listWorkers(t, wr); len(ws) != 0 {
			t.Fatalf("refused records were written: %+v", ws)
		}
	})

	t.Run("active runs are counted per workflow name and version; terminal runs are not", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		wr := workerRegistry(t, b)
		startRun(t, b, "w/0", backend.CreateWorkflowRunParams{WorkflowName: "ship", Version: ptr("v2")})
		done := startRun(t, b, "w/1", backend.CreateWorkflowRunParams{WorkflowName: "finished"})
		completeRun(t, b, done.ID, "w/1", `1`)
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order"})
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order"})
		createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "ship", Version: ptr("v2")})
		got, err := wr.CountActiveRunsByWorkflow(t.Context())
		if err != nil {
			t.Fatalf("CountActiveRunsByWorkflow: %v", err)
		}
		want := []backend.WorkflowRunCount{
			{Name: "order", Counts: backend.RunCounts{Pending: 2}},
			{Name: "ship", Version: "v2", Counts: backend.RunCounts{Pending: 1, Running: 1}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("counts %+v, want %+v", got, want)
		}
	})
}
