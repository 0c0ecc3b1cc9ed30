package sqlite

import (
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// BenchmarkRegistryHeartbeat compares a worker's registry heartbeat
// (PutWorker, every 10 s per worker) with a run's lease renewal
// (ExtendWorkflowRunLease, every 15 s per executing run): what the
// registry adds, per write.
func BenchmarkRegistryHeartbeat(b *testing.B) {
	b.Run("PutWorker", func(b *testing.B) {
		be := openBench(b)
		w := benchWorkerRecord()
		start := cpuTime()
		for b.Loop() {
			if err := be.PutWorker(b.Context(), w); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpuTime()-start)
	})
	b.Run("ExtendWorkflowRunLease", func(b *testing.B) {
		be := openBench(b)
		run := claimOwned(b, be, 1)[0]
		start := cpuTime()
		for b.Loop() {
			err := be.ExtendWorkflowRunLease(b.Context(), backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: run.ID, WorkerID: *run.WorkerID, LeaseDuration: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpuTime()-start)
	})
}

// benchWorkerRecord is a worker with ten registered workflows.
func benchWorkerRecord() backend.WorkerRecord {
	w := backend.WorkerRecord{ID: "bench-worker", Host: "host", PID: 1, SDK: "openworkflow-go", SDKVersion: "devel",
		State: backend.WorkerRunning, Concurrency: 10, HeartbeatInterval: 10 * time.Second}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		w.Workflows = append(w.Workflows, backend.RegisteredWorkflow{Name: "workflow-" + n, InputExample: `{"id":1}`})
	}
	return w
}
