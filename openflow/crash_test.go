package openflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// crashWorkerEnv turns the test binary into a worker process; its value
// is the JSON of a crashWorker.
const crashWorkerEnv = "OPENFLOW_CRASHTEST_WORKER"

// crashWorker is what a worker process is told by the test starting it.
type crashWorker struct {
	Backend string `json:"backend"` // sqlite or postgres
	DSN     string `json:"dsn"`     // the SQLite file or the PostgreSQL URL
	Schema  string `json:"schema"`  // PostgreSQL schema
	WorkDir string `json:"workDir"`
}

// TestWorkerProcess is not a test: it is the body of the worker processes
// TestCrash starts by re-executing this test binary with crashWorkerEnv
// set. It runs a worker with the engine registered until SIGTERM or until
// its parent process is gone.
func TestWorkerProcess(t *testing.T) {
	raw := os.Getenv(crashWorkerEnv)
	if raw == "" {
		t.Skip("runs only as a worker process started by TestCrash")
	}
	var cfg crashWorker
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, orphaned := context.WithCancel(ctx)
	defer orphaned()
	go func() { // stop when the test process that started us is gone
		parent := os.Getppid()
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			if os.Getppid() != parent {
				orphaned()
			}
		}
	}()
	var b backend.Backend
	var err error
	if cfg.Backend == "sqlite" {
		b, err = sqlite.Open(ctx, cfg.DSN, sqlite.Options{})
	} else {
		b, err = postgres.Open(ctx, cfg.DSN, postgres.Options{Schema: cfg.Schema, SkipMigrations: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 2, LeaseDuration: 2 * time.Second, HeartbeatInterval: 500 * time.Millisecond,
		MaxPollInterval: 200 * time.Millisecond, ShutdownGracePeriod: time.Second, ID: fmt.Sprintf("crash-%d", os.Getpid()), Logger: quietLogger()})
	if err := openflow.New(openflow.Options{WorkDir: cfg.WorkDir, Logger: quietLogger()}).Register(w, false); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	_ = w.Stop(context.Background())
}

// crashFlow has four bash modules; each appends its id to the file
// flow_input.log when it runs. c blocks (exec sleep) the first time it
// runs, so the test can kill the worker while c executes.
const crashFlow = `{
  "summary": "four modules, the worker killed while the third runs",
  "value": {"modules": [
    {"id": "a", "value": {"type": "rawscript", "language": "bash",
      "content": "log=\"$1\"\necho a >> \"$log\"\necho 1",
      "input_transforms": {"log": {"type": "javascript", "expr": "flow_input.log"}}}},
    {"id": "b", "value": {"type": "rawscript", "language": "bash",
      "content": "log=\"$1\"\nprev=\"$2\"\necho b >> \"$log\"\necho $((prev+1))",
      "input_transforms": {"log": {"type": "javascript", "expr": "flow_input.log"}, "prev": {"type": "javascript", "expr": "results.a"}}}},
    {"id": "c", "value": {"type": "rawscript", "language": "bash",
      "content": "log=\"$1\"\nprev=\"$2\"\necho c >> \"$log\"\nif [ \"$(grep -c '^c$' \"$log\")\" = 1 ]; then exec sleep 120; fi\necho $((prev+1))",
      "input_transforms": {"log": {"type": "javascript", "expr": "flow_input.log"}, "prev": {"type": "javascript", "expr": "results.b"}}}},
    {"id": "d", "value": {"type": "rawscript", "language": "bash",
      "content": "log=\"$1\"\nprev=\"$2\"\necho d >> \"$log\"\necho $((prev+1))",
      "input_transforms": {"log": {"type": "javascript", "expr": "flow_input.log"}, "prev": {"type": "javascript", "expr": "results.c"}}}}
  ]},
  "schema": {"type": "object", "properties": {"log": {"type": "string"}}, "required": ["log"]}
}`

// TestCrash kills a worker process (kill -9) while the third of four
// modules runs; another worker process finishes the run without running
// the completed modules again: a and b ran once, c twice (it was
// executing), d once.
func TestCrash(t *testing.T) {
	if os.Getenv(crashWorkerEnv) != "" {
		t.Skip("inside a worker process")
	}
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			cfg, b := crashBackend(t, kind)
			cfg.WorkDir = t.TempDir()
			client := ow.NewClient(b)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			log := filepath.Join(t.TempDir(), "executions.log")
			f, err := openflow.Parse([]byte(crashFlow))
			if err != nil {
				t.Fatal(err)
			}
			first := startWorkerProcess(t, cfg)
			h, err := openflow.New(openflow.Options{}).Start(ctx, client, f, mustMarshal(map[string]string{"log": log}), "crash")
			if err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, "module c to start", func() bool { return strings.Contains(readFile(log), "c\n") })
			if err := first.Process.Kill(); err != nil { // SIGKILL: kill -9
				t.Fatal(err)
			}
			_ = first.Wait()

			second := startWorkerProcess(t, cfg)
			res, err := openflow.Wait(ctx, client, h.ID)
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
			if !res.Success || string(res.Result) != `"4"` {
				t.Fatalf("result %+v, want success with \"4\"", res)
			}
			if got, want := readFile(log), "a\nb\nc\nc\nd\n"; got != want {
				t.Errorf("executions:\n%swant:\n%s", got, want)
			}
			run, err := client.GetRun(ctx, h.ID)
			if err != nil {
				t.Fatal(err)
			}
			if run.WorkerID == nil || !strings.HasPrefix(*run.WorkerID, fmt.Sprintf("crash-%d/", second.Process.Pid)) {
				t.Errorf("the run was finished by worker %v, not by the second process (%d)", run.WorkerID, second.Process.Pid)
			}
		})
	}
}

// crashBackend prepares the database the worker processes share.
func crashBackend(t *testing.T, kind string) (crashWorker, backend.Backend) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if kind == "sqlite" {
		path := filepath.Join(t.TempDir(), "ow.db")
		b, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return crashWorker{Backend: kind, DSN: path}, b
	}
	schema := fmt.Sprintf("openflow_crash_%d_%d", os.Getpid(), schemaSeq.next())
	b, err := postgres.Open(ctx, testURL(), postgres.Options{Schema: schema})
	if err != nil {
		if os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
			t.Skipf("postgres unreachable: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = b.Pool().Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		_ = b.Close()
	})
	return crashWorker{Backend: kind, DSN: testURL(), Schema: schema}, b
}

// startWorkerProcess re-executes the test binary as a worker process; it
// is stopped (SIGTERM, then killed) when the test ends.
func startWorkerProcess(t *testing.T, cfg crashWorker) *exec.Cmd {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashWorkerEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return cmd
}

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err.Error()
	}
	return string(b)
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
