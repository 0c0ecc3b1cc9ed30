package dag_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/dag"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// The crash tests run DAG workers as separate processes — this test
// binary re-executed with workerEnv set — kill one with SIGKILL while a
// step or a compensation executes, and let another process finish the
// run. Every handler execution is appended to a shared log file (one line
// per start and end, with the pid), from which the tests count what ran
// where.

// workerEnv turns the test binary into a worker process of the crash
// tests; its value is the JSON of a workerConfig.
const workerEnv = "OW_DAG_CRASHTEST_WORKER"

// workerConfig is what a worker process is told by its test.
type workerConfig struct {
	Backend string `json:"backend"` // "sqlite" or "postgres"
	DSN     string `json:"dsn"`     // the SQLite file, or the PostgreSQL URL
	Schema  string `json:"schema"`  // the PostgreSQL schema
	Log     string `json:"log"`     // the execution log
	// Block is the execution ("step" or "compensate:step") that blocks
	// until the process dies; empty for none.
	Block string `json:"block"`
}

// Crash-test worker settings: a short lease, so the second process takes
// the run soon after the first dies.
const (
	crashLease     = 2 * time.Second
	crashHeartbeat = 500 * time.Millisecond
)

// crashDefinitions are the workflows of the crash tests:
//
//	crash-exec: a → (x ∥ b) → c; the first process dies in b, after a and x.
//	crash-comp: a → b → c → d, d fails; compensations c, b, a; the first
//	            process dies in b's compensation, after c's.
var crashDefinitions = []dag.Definition{
	def("crash-exec", "a", "x<-a", "b<-a", "c<-b,x"),
	{Name: "crash-comp", Steps: []dag.Step{
		{Name: "a", Handler: "a", Compensate: "undo"},
		{Name: "b", Handler: "b", Compensate: "undo", DependsOn: []string{"a"}},
		{Name: "c", Handler: "c", Compensate: "undo", DependsOn: []string{"b"}},
		{Name: "d", Handler: "fail", Retries: dag.Retries(0), DependsOn: []string{"c"}},
	}},
}

var crashHandlers = []string{"a", "b", "c", "x", "undo", "fail"}

// crashHandler is the handler name in the worker processes: it logs the
// execution, blocks if it is cfg.Block, and fails if it is "fail".
func crashHandler(name string, log *execLog, block string) dag.Handler {
	return func(ctx context.Context, sc dag.StepContext) (any, error) {
		what := sc.Step
		if sc.Compensation {
			what = "compensate:" + sc.Step
		}
		log.write("start", what)
		if what == block {
			<-ctx.Done() // until the process is killed
			return nil, ctx.Err()
		}
		log.write("end", what)
		if name == "fail" {
			return nil, errors.New("the last step fails")
		}
		return what, nil
	}
}

// TestDAGWorkerProcess is not a test: it is the body of the worker
// processes the crash tests start.
func TestDAGWorkerProcess(t *testing.T) {
	raw := os.Getenv(workerEnv)
	if raw == "" {
		t.Skip("runs only as a worker process started by the crash tests")
	}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := runWorkerProcess(cfg); err != nil {
		t.Fatalf("worker process %d: %v", os.Getpid(), err)
	}
}

func runWorkerProcess(cfg workerConfig) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, orphaned := context.WithCancel(ctx)
	defer orphaned()
	go func() { // a test binary that died without its cleanups leaves no worker
		parent := os.Getppid()
		for ctx.Err() == nil && os.Getppid() == parent {
			time.Sleep(200 * time.Millisecond)
		}
		orphaned()
	}()
	var b backend.Backend
	var err error
	if cfg.Backend == "sqlite" {
		b, err = sqlite.Open(ctx, cfg.DSN, sqlite.Options{})
	} else {
		b, err = postgres.Open(ctx, cfg.DSN, postgres.Options{Schema: cfg.Schema})
	}
	if err != nil {
		return err
	}
	defer b.Close()
	log, err := openExecLog(cfg.Log)
	if err != nil {
		return err
	}
	defer log.close()
	handlers := map[string]dag.Handler{}
	for _, h := range crashHandlers {
		handlers[h] = crashHandler(h, log, cfg.Block)
	}
	eng := dag.New(ow.NewClient(b), dag.Options{Handlers: handlers})
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: 2, LeaseDuration: crashLease, HeartbeatInterval: crashHeartbeat,
		MaxPollInterval: 200 * time.Millisecond, ShutdownGracePeriod: time.Second})
	for _, d := range crashDefinitions {
		if err := w.Register(eng.Workflow(d.Name)); err != nil {
			return err
		}
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	log.write("ready", "")
	<-ctx.Done()
	return w.Stop(context.Background())
}

// execLog is the shared log of handler executions: lines "pid event what".
type execLog struct {
	mu sync.Mutex
	f  *os.File
}

func openExecLog(path string) (*execLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	return &execLog{f: f}, err
}

// write appends one line in one write call (O_APPEND: lines of several
// processes do not interleave) and syncs it, so that a line written
// before a SIGKILL is there.
func (l *execLog) write(event, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = fmt.Fprintf(l.f, "%d %s %s\n", os.Getpid(), event, what)
	_ = l.f.Sync()
}

func (l *execLog) close() { _ = l.f.Close() }

// logLine is one parsed line of the execution log.
type logLine struct {
	pid         int
	event, what string
}

func readExecLog(t *testing.T, path string) []logLine {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text()+" ", " ", 3)
		pid, err := strconv.Atoi(parts[0])
		if err != nil || len(parts) < 3 {
			continue // a line cut by the kill
		}
		out = append(out, logLine{pid: pid, event: parts[1], what: strings.TrimSpace(parts[2])})
	}
	return out
}

// started counts the executions of what that started (in any process).
func started(lines []logLine, what string) int {
	n := 0
	for _, l := range lines {
		if l.event == "start" && l.what == what {
			n++
		}
	}
	return n
}

// workerProcess is a worker process started by a test.
type workerProcess struct {
	cmd  *exec.Cmd
	out  string
	done chan struct{}
}

func startWorkerProcess(t *testing.T, cfg workerConfig) *workerProcess {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	out := filepath.Join(t.TempDir(), fmt.Sprintf("worker-%d.out", time.Now().UnixNano()))
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDAGWorkerProcess$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &workerProcess{cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			b, _ := os.ReadFile(out)
			t.Logf("output of worker process %d:\n%s", p.cmd.Process.Pid, b)
		}
	})
	return p
}

func (p *workerProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("worker process %d still running 30 s after SIGKILL", p.cmd.Process.Pid)
	}
}

// crashFixture is a backend shared by the test process and its workers,
// with the crash workflows defined.
type crashFixture struct {
	*fixture
	cfg workerConfig
}

func newCrashFixture(t *testing.T, tg target) *crashFixture {
	t.Helper()
	b, dsn := tg.open(t, nil)
	cfg := workerConfig{Backend: tg.name, DSN: dsn, Log: filepath.Join(t.TempDir(), "executions.log")}
	if tg.name == "postgres" {
		cfg.DSN, cfg.Schema = pgtest.URL(), dsn
	}
	fx := newFixture(t, b, dag.Options{})
	for _, h := range crashHandlers {
		fx.handle(h, nil)
	}
	for _, d := range crashDefinitions {
		fx.define(d)
	}
	return &crashFixture{fixture: fx, cfg: cfg}
}

// runUntilBlocked starts a worker process blocking in block, starts a run
// of workflow, and returns once block executes in that process and the
// executions before are recorded (their results committed: only those
// are promised not to run again; a result not yet committed at the kill
// is lost, and its step runs again, at least once).
func (cf *crashFixture) runUntilBlocked(workflow, block string, before []string) (*workerProcess, string) {
	t := cf.t
	cfg := cf.cfg
	cfg.Block = block
	first := startWorkerProcess(t, cfg)
	runID := cf.start(workflow, nil)
	waitFor(t, time.Minute, fmt.Sprintf("%s to block in %s with %v recorded", workflow, block, before), func() (bool, error) {
		select {
		case <-first.done:
			return false, errors.New("the first worker process exited on its own")
		default:
		}
		if started(readExecLog(t, cfg.Log), block) != 1 {
			return false, nil
		}
		st, err := cf.eng.Status(cf.ctx, runID)
		if err != nil {
			return false, err
		}
		for _, w := range before {
			if !recorded(st, w) {
				return false, nil
			}
		}
		return true, nil
	})
	return first, runID
}

// recorded reports whether the execution what ("step" or
// "compensate:step") has its final result recorded.
func recorded(st *dag.RunStatus, what string) bool {
	step, comp := strings.CutPrefix(what, "compensate:")
	s := st.Steps[step]
	if comp {
		return s.Compensation != nil && s.Compensation.Status == dag.StatusCompleted
	}
	return s.Status == dag.StatusCompleted || s.Status == dag.StatusFailed ||
		s.Compensation != nil // compensation starts once the step's outcome is recorded
}

func TestWorkerKilledDuringAStepResumesInAnotherProcess(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			cf := newCrashFixture(t, tg)
			first, runID := cf.runUntilBlocked("crash-exec", "b", []string{"a", "x"})
			first.kill(t)
			startWorkerProcess(t, cf.cfg)
			st := cf.finish(runID)
			if st.Status != dag.StatusCompleted {
				t.Fatalf("run %s (%v)", st.Status, st.Error)
			}
			lines := readExecLog(t, cf.cfg.Log)
			for what, want := range map[string]int{"a": 1, "x": 1, "b": 2, "c": 1} {
				if got := started(lines, what); got != want {
					t.Errorf("%s started %d times, want %d (b: once killed, once finished)", what, got, want)
				}
			}
			for _, step := range []string{"a", "x", "b", "c"} {
				if s := st.Steps[step]; s.Status != dag.StatusCompleted || s.Attempts != 1 {
					t.Errorf("step %s: %+v; want completed at attempt 1 (a crash does not use up a retry)", step, s)
				}
			}
		})
	}
}

func TestWorkerKilledDuringCompensationResumesInAnotherProcess(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			cf := newCrashFixture(t, tg)
			first, runID := cf.runUntilBlocked("crash-comp", "compensate:b", []string{"a", "b", "c", "d", "compensate:c"})
			st, err := cf.eng.Status(cf.ctx, runID)
			if err != nil || st.Status != dag.StatusCompensating {
				t.Fatalf("before the kill: status %+v, %v; want compensating", st, err)
			}
			first.kill(t)
			startWorkerProcess(t, cf.cfg)
			st = cf.finish(runID)
			if st.Status != dag.StatusCompensated {
				t.Fatalf("run %s (%v)", st.Status, st.Error)
			}
			lines := readExecLog(t, cf.cfg.Log)
			for what, want := range map[string]int{
				"a": 1, "b": 1, "c": 1, "d": 1,
				"compensate:c": 1, "compensate:b": 2, "compensate:a": 1,
			} {
				if got := started(lines, what); got != want {
					t.Errorf("%s started %d times, want %d", what, got, want)
				}
			}
			var order []string
			for _, l := range lines {
				if l.event == "end" && strings.HasPrefix(l.what, "compensate:") {
					order = append(order, l.what)
				}
			}
			if strings.Join(order, " ") != "compensate:c compensate:b compensate:a" {
				t.Errorf("compensations ended in the order %v", order)
			}
			for _, step := range []string{"a", "b", "c"} {
				if s := st.Steps[step]; s.Status != dag.StatusCompensated || s.Compensation.Attempts != 1 {
					t.Errorf("step %s: %+v; want compensated at attempt 1", step, s)
				}
			}
			if s := st.Steps["d"]; s.Status != dag.StatusFailed {
				t.Errorf("step d is %s, want failed (it has no compensate handler)", s.Status)
			}
		})
	}
}
