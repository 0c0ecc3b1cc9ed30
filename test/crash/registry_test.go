package crash

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// registryInterval is the crash test workers' registry heartbeat: short,
// so that a killed worker is gone (3 missed heartbeats) within a second.
const registryInterval = 200 * time.Millisecond

// TestKilledWorkerProcessIsShownGone: a worker process killed with
// SIGKILL writes nothing more; the registry shows it running until 3 of
// its heartbeats are missed, then gone. A worker process stopped with
// SIGTERM says so itself: stopped.
func TestKilledWorkerProcessIsShownGone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(*testing.T) target
	}{
		{"on a SQLite file", sqliteTarget},
		{"on PostgreSQL", postgresTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testKilledWorkerGone(t, tc.target(t))
		})
	}
}

func testKilledWorkerGone(t *testing.T, tg target) {
	client := tg.open(t)
	cfg := workerConfig{
		Backend: tg.kind, DSN: tg.dsn, Schema: tg.schema, Namespace: tg.namespace, StepLog: filepath.Join(t.TempDir(), "steps.log"),
		Concurrency: 2, LeaseDuration: 10 * time.Second, HeartbeatInterval: time.Second,
		MaxPollInterval: 250 * time.Millisecond, ShutdownGrace: 2 * time.Second, RegistryInterval: registryInterval,
	}
	killed, stopped := startWorkerProcess(t, cfg), startWorkerProcess(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	state := func(p *workerProcess) (backend.WorkerState, error) {
		ws, err := client.ListWorkers(ctx)
		if err != nil {
			return "", err
		}
		id := fmt.Sprintf("crashtest-%d", p.pid())
		for _, w := range ws {
			if w.ID == id {
				if w.SDK != ow.SDKName || w.PID != p.pid() || w.Concurrency != 2 || len(w.Workflows) == 0 {
					return "", fmt.Errorf("worker %s recorded as %+v", id, w)
				}
				return w.State, nil
			}
		}
		return "", nil
	}
	is := func(p *workerProcess, want backend.WorkerState) func() (bool, error) {
		return func() (bool, error) {
			st, err := state(p)
			return st == want, err
		}
	}
	waitFor(t, time.Minute, "both worker processes to be listed running", func() (bool, error) {
		a, err := is(killed, backend.WorkerRunning)()
		if err != nil || !a {
			return false, err
		}
		return is(stopped, backend.WorkerRunning)()
	})

	if _, err := killed.signalAndWait(syscall.SIGKILL, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the killed worker to be shown gone", is(killed, backend.WorkerGone))

	st, err := stopped.signalAndWait(syscall.SIGTERM, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Success() {
		t.Fatalf("the worker process stopped with SIGTERM exited with %v:\n%s", st, stopped.tail(2000))
	}
	if got, err := state(stopped); err != nil || got != backend.WorkerStopped {
		t.Fatalf("the worker stopped with SIGTERM is %q (%v), want stopped", got, err)
	}
}
