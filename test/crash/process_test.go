package crash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/internal/testhooks"
)

// workerEnv is the environment variable that turns the test binary into a
// worker process; its value is the JSON of a workerConfig.
const workerEnv = "OW_CRASHTEST_WORKER"

// workerConfig is what a worker process is told by the test that starts it.
type workerConfig struct {
	// Backend is "sqlite" (DSN is the database file) or "postgres" (DSN is
	// the URL).
	Backend string `json:"backend"`
	DSN     string `json:"dsn"`
	// Schema is the PostgreSQL schema of the test; empty on SQLite.
	Schema    string `json:"schema,omitempty"`
	Namespace string `json:"namespace"`
	// StepLog is the file step executions are appended to.
	StepLog string `json:"stepLog"`
	// BlockStep is the key of a step that blocks until its context ends;
	// empty for none.
	BlockStep string `json:"blockStep,omitempty"`
	// StepWork is the simulated work of every other step.
	StepWork time.Duration `json:"stepWork,omitempty"`
	// HoldCommit, if set, holds back the group commit of one step's result
	// (see commitHold).
	HoldCommit *commitHold `json:"holdCommit,omitempty"`

	// Clock, when set, is the clock of the worker and its backend (see
	// fastClock); nil: the real one.
	Clock *fastClock `json:"clock,omitempty"`
	// Limited, if set, registers the limited workflow too (limits_test.go).
	Limited *limitedConfig `json:"limited,omitempty"`
	// Events, if set, registers the event-triggered workflows too
	// (events_test.go).
	Events bool `json:"events,omitempty"`

	// BulkLease, BulkPage and BulkPoll are the worker's bulk action
	// options (0: the defaults); bulk_test.go shortens them.
	BulkLease time.Duration `json:"bulkLease,omitempty"`
	BulkPage  int           `json:"bulkPage,omitempty"`
	BulkPoll  time.Duration `json:"bulkPoll,omitempty"`

	Concurrency       int           `json:"concurrency"`
	LeaseDuration     time.Duration `json:"leaseDuration"`
	HeartbeatInterval time.Duration `json:"heartbeatInterval"`
	MaxPollInterval   time.Duration `json:"maxPollInterval"`
	ShutdownGrace     time.Duration `json:"shutdownGrace"`
	// RegistryInterval is the worker's WorkerOptions.RegistryInterval
	// (0: the default).
	RegistryInterval time.Duration `json:"registryInterval,omitempty"`
	// StartL3, if set, is the input of one L3 run the process starts
	// itself once its worker is ready, through a client on the worker's
	// backend: the start claims its own run (latency_test.go).
	StartL3 *int `json:"startL3,omitempty"`
}

// workerIDPrefix is the prefix of the worker ids a worker process writes
// to runs: the pid says which process holds or completed a run.
func workerIDPrefix(pid int) string { return fmt.Sprintf("crashtest-%d/", pid) }

// TestWorkerProcess is not a test: it is the body of the worker processes
// the other tests start by re-executing this test binary with workerEnv
// set. It runs a worker until SIGTERM (or until its parent process goes
// away), then stops it gracefully; the process exits 0 after a clean stop.
func TestWorkerProcess(t *testing.T) {
	raw := os.Getenv(workerEnv)
	if raw == "" {
		t.Skip("runs only as a worker process started by the other tests of this package")
	}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("decode %s: %v", workerEnv, err)
	}
	if err := runWorkerProcess(cfg); err != nil {
		t.Fatalf("worker process %d: %v", os.Getpid(), err)
	}
}

func runWorkerProcess(cfg workerConfig) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, orphaned := context.WithCancelCause(ctx)
	defer orphaned(nil)
	go stopWhenOrphaned(ctx, orphaned)

	var now func() time.Time
	if cfg.Clock != nil {
		now = cfg.Clock.Now
	}
	b, err := openBackendOn(ctx, cfg.Backend, cfg.DSN, cfg.Schema, cfg.Namespace, now)
	if err != nil {
		return err
	}
	defer b.Close()
	steps, err := openStepLog(cfg.StepLog)
	if err != nil {
		return err
	}
	defer steps.Close()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if cfg.HoldCommit != nil {
		b = &holdingBackend{Backend: b, hold: *cfg.HoldCommit, log: logger}
	}
	w := ow.NewWorker(b, ow.WorkerOptions{
		Concurrency:         cfg.Concurrency,
		LeaseDuration:       cfg.LeaseDuration,
		HeartbeatInterval:   cfg.HeartbeatInterval,
		MaxPollInterval:     cfg.MaxPollInterval,
		ShutdownGracePeriod: cfg.ShutdownGrace,
		BulkActionLease:     cfg.BulkLease,
		BulkActionPage:      cfg.BulkPage,
		BulkActionPoll:      cfg.BulkPoll,
		Logger:              logger,
		ID:                  fmt.Sprintf("crashtest-%d", os.Getpid()),
		Now:                 now,
		RegistryInterval:    cfg.RegistryInterval,
	})
	rec := &stepRecorder{log: steps, block: cfg.BlockStep, work: cfg.StepWork}
	if err := w.Register(newDefinitions(rec)...); err != nil {
		return err
	}
	if cfg.Limited != nil {
		def, closeCounter, err := newLimitedDefinition(ctx, rec, *cfg.Limited)
		if err != nil {
			return err
		}
		defer closeCounter()
		if err := w.Register(def); err != nil {
			return err
		}
	}
	if cfg.Events {
		if err := w.Register(newEventDefinitions(rec)...); err != nil {
			return err
		}
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	if err := steps.ready(); err != nil {
		return errors.Join(err, w.Stop(context.Background()))
	}
	if cfg.StartL3 != nil {
		// The worker takes its process's starts once its first claim
		// found nothing waiting.
		for deadline := time.Now().Add(time.Minute); !testhooks.Idle(w); {
			if time.Now().After(deadline) {
				return errors.Join(errors.New("the worker did not become idle within a minute"), w.Stop(context.Background()))
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := l3Workflow.Start(ctx, ow.NewClient(b), *cfg.StartL3); err != nil {
			return errors.Join(fmt.Errorf("start the L3 run: %w", err), w.Stop(context.Background()))
		}
	}
	logger.Info("crashtest worker ready", "pid", os.Getpid(), "backend", cfg.Backend, "namespace", cfg.Namespace)
	<-ctx.Done()
	logger.Info("crashtest worker stopping", "cause", context.Cause(ctx))
	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace+10*time.Second)
	defer cancel()
	return w.Stop(stopCtx)
}

// stopWhenOrphaned ends ctx when the process that started this one is gone
// (this process was reparented), so a test binary that died without its
// cleanups (a -timeout panic) leaves no worker behind.
func stopWhenOrphaned(ctx context.Context, stop context.CancelCauseFunc) {
	parent := os.Getppid()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != parent {
				stop(errors.New("parent process exited"))
				return
			}
		}
	}
}

// openBackend opens the backend a worker process or a test uses.
func openBackend(ctx context.Context, kind, dsn, schema, namespace string) (backend.Backend, error) {
	return openBackendOn(ctx, kind, dsn, schema, namespace, nil)
}

// openBackendOn is openBackend on the clock now (nil: the real one).
func openBackendOn(ctx context.Context, kind, dsn, schema, namespace string, now func() time.Time) (backend.Backend, error) {
	switch kind {
	case "sqlite":
		return sqlite.Open(ctx, dsn, sqlite.Options{NamespaceID: namespace, Now: now})
	case "postgres":
		return postgres.Open(ctx, dsn, postgres.Options{Schema: schema, NamespaceID: namespace, Now: now})
	}
	return nil, fmt.Errorf("unknown backend %q", kind)
}

// fastClock is a clock that several processes share without talking to
// each other: it reads Base at the wall-clock instant Start and runs
// Speed times faster than the wall clock from there, so every process
// computes the same time from its own wall clock (one host). It is how
// tests inject one clock into the test process and its worker processes
// to run many seconds of schedule ticks in a fraction of the time.
type fastClock struct {
	Base  time.Time `json:"base"`
	Start time.Time `json:"start"`
	Speed int       `json:"speed"`
}

// Now is the clock's present.
func (c *fastClock) Now() time.Time {
	return c.Base.Add(time.Since(c.Start) * time.Duration(c.Speed))
}

// workerProcess is a worker process started by a test.
type workerProcess struct {
	cmd    *exec.Cmd
	output string        // file holding the process's stdout and stderr
	done   chan struct{} // closed when the process has exited and been reaped
}

var workerSeq atomic.Int64

// startWorkerProcess re-executes the test binary as a worker process with
// cfg. The process is killed, if still running, when the test ends, and its
// output is logged if the test failed.
func startWorkerProcess(t *testing.T, cfg workerConfig) *workerProcess {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	output := filepath.Join(t.TempDir(), fmt.Sprintf("worker-%d.out", workerSeq.Add(1)))
	out, err := os.Create(output)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// -test.timeout backstops a worker whose test forgot it: it panics
	// and exits after that long.
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1", "-test.v", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker process: %v", err)
	}
	p := &workerProcess{cmd: cmd, output: output, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				t.Errorf("worker process %d did not exit 30 s after SIGKILL", p.pid())
			}
		}
		if t.Failed() {
			t.Logf("output of worker process %d:\n%s", p.pid(), p.tail(8000))
		}
	})
	return p
}

func (p *workerProcess) pid() int { return p.cmd.Process.Pid }

func (p *workerProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalAndWait sends sig and waits up to timeout for the process to exit.
// It returns the process state, or an error if it is still running.
func (p *workerProcess) signalAndWait(sig os.Signal, timeout time.Duration) (*os.ProcessState, error) {
	if err := p.cmd.Process.Signal(sig); err != nil && !p.exited() {
		return nil, fmt.Errorf("signal worker process %d: %w", p.pid(), err)
	}
	select {
	case <-p.done:
		return p.cmd.ProcessState, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("worker process %d still running %v after %v", p.pid(), timeout, sig)
	}
}

// tail returns the last n bytes of the process's output.
func (p *workerProcess) tail(n int) string {
	data, err := os.ReadFile(p.output)
	if err != nil {
		return err.Error()
	}
	if len(data) > n {
		data = data[len(data)-n:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}

// waitFor polls cond until it reports true, failing the test if it has not
// within timeout (or if it returns an error). what names the condition in
// the failure.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, timeout)
		}
		<-tick.C
	}
}
