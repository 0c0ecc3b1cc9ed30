package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/backendtest"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/config"
	"github.com/openworkflow-go/openworkflow/internal/demo/goindex"
)

// result is the outcome of one in-process ow invocation.
type result struct {
	code           int
	stdout, stderr string
}

// env is one test's isolated working directory and database: an SQLite
// file (newEnv) or a PostgreSQL schema of its own (newPostgresEnv).
type env struct {
	t     *testing.T
	name  string // "sqlite" or "postgres"
	dir   string
	db    string   // the SQLite file; "" on PostgreSQL
	flags []string // the global flags selecting the database
	open  func(context.Context) (backend.Backend, error)
	// openAt opens the database on the clock now, as open does on the
	// real one (to write runs in the past).
	openAt func(ctx context.Context, now func() time.Time) (backend.Backend, error)
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir()
	db := filepath.Join(dir, "ow.db")
	// An empty --postgres-url keeps a PostgreSQL URL in the caller's
	// environment from being used.
	return &env{t: t, name: "sqlite", dir: dir, db: db, flags: []string{"--postgres-url=", "--sqlite-path", db},
		open: func(ctx context.Context) (backend.Backend, error) { return sqlite.Open(ctx, db, sqlite.Options{}) },
		openAt: func(ctx context.Context, now func() time.Time) (backend.Backend, error) {
			return sqlite.Open(ctx, db, sqlite.Options{Now: now})
		}}
}

// run executes ow with args against the env's database.
func (e *env) run(args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	full := append(append([]string{}, e.flags...), args...)
	code := execute(ctx, full, &out, &errOut, e.dir)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok runs ow and fails the test unless it exits 0.
func (e *env) ok(args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != 0 {
		e.t.Fatalf("ow %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// decode parses the single JSON document of a --json invocation.
func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", r.stdout)
	}
	return v
}

// client opens the env's database directly, as a program using the SDK
// would.
func (e *env) client() *ow.Client {
	e.t.Helper()
	b, err := e.open(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { b.Close() })
	return ow.NewClient(b)
}

func mustContain(t *testing.T, what, got string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(got, s) {
			t.Errorf("%s does not contain %q:\n%s", what, s, got)
		}
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("migrate")
	mustContain(t, "first migrate", r.stdout, "sqlite "+e.db, "applied migrations 0 to 5", "(no schema yet → schema version 5)")
	if strings.Contains(r.stdout, "-1") {
		t.Errorf("first migrate prints the JSON's -1 for an empty database: %s", r.stdout)
	}
	r = e.ok("migrate")
	mustContain(t, "second migrate", r.stdout, "schema is up to date (version 5)")
	m := decode[config.Migration](t, e.ok("migrate", "--json"))
	if m.Backend != config.BackendSQLite || m.Before != 5 || m.After != 5 || len(m.Applied) != 0 {
		t.Errorf("migrate --json = %+v", m)
	}
}

func TestRunsListGetCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	c := e.client()
	var ids []string
	for i := range 3 {
		h, err := c.StartByName(ctx, "greet", "v1", map[string]int{"n": i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.ID)
	}
	other, err := c.StartByName(ctx, "other", "", nil)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("list prints a table of every run, newest first", func(t *testing.T) {
		out := e.ok("runs", "list").stdout
		mustContain(t, "list", out, "ID", "WORKFLOW", "VERSION", "STATUS", "ATTEMPTS", "CREATED", "DURATION", "greet", "v1", "pending")
		if strings.Index(out, ids[2]) > strings.Index(out, ids[0]) {
			t.Errorf("newest run is not first:\n%s", out)
		}
	})

	t.Run("list filters by workflow and status", func(t *testing.T) {
		page := decode[backend.Page[backend.WorkflowRun]](t, e.ok("runs", "list", "--workflow", "other", "--status", "pending", "--json"))
		if len(page.Data) != 1 || page.Data[0].ID != other.ID {
			t.Errorf("filtered list = %+v", page.Data)
		}
		page = decode[backend.Page[backend.WorkflowRun]](t, e.ok("runs", "list", "--status", "completed", "--json"))
		if len(page.Data) != 0 {
			t.Errorf("no run is completed, got %d", len(page.Data))
		}
	})

	t.Run("list pages with the printed cursor", func(t *testing.T) {
		out := e.ok("runs", "list", "--workflow", "greet", "--limit", "2").stdout
		_, hint, _ := strings.Cut(out, "next page: ow runs list ")
		_, cursor, found := strings.Cut(hint, " --cursor ")
		if !found {
			t.Fatalf("no next cursor printed:\n%s", out)
		}
		rest := e.ok("runs", "list", "--workflow", "greet", "--limit", "2", "--cursor", strings.TrimSpace(cursor), "--json")
		page := decode[backend.Page[backend.WorkflowRun]](t, rest)
		if len(page.Data) != 1 || page.Data[0].ID != ids[0] || page.Next != nil {
			t.Errorf("second page = %+v, next %v; want only the oldest run", page.Data, page.Next)
		}
	})

	t.Run("get shows the run and its steps", func(t *testing.T) {
		out := e.ok("runs", "get", ids[1]).stdout
		mustContain(t, "get", out, "id:", ids[1], "workflow:", "greet", "status:", "pending", `{"n":1}`, "0 step attempts")
		d := decode[runDetail](t, e.ok("runs", "get", ids[1], "--json"))
		if d.Run == nil || d.Run.ID != ids[1] || d.Steps == nil || len(d.Steps) != 0 {
			t.Errorf("get --json = %+v", d)
		}
	})

	t.Run("cancel cancels once and is then a no-op", func(t *testing.T) {
		mustContain(t, "cancel", e.ok("runs", "cancel", ids[0]).stdout, "canceled run "+ids[0])
		run := decode[backend.WorkflowRun](t, e.ok("runs", "cancel", ids[0], "--json"))
		if run.Status != backend.RunCanceled {
			t.Errorf("status after cancel: %s", run.Status)
		}
	})

	t.Run("cancel of a finished run says it has finished", func(t *testing.T) {
		b := c.Backend().(backend.Backend)
		claimed, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"w"}, LeaseDuration: time.Minute})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v, %d runs", err, len(claimed))
		}
		if _, err := backendtest.Single(b).CompleteWorkflowRun(ctx, backendtest.CompleteWorkflowRunParams{WorkflowRunID: claimed[0].ID, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
		r := e.run("runs", "cancel", claimed[0].ID)
		if r.code != 1 || r.stdout != "" {
			t.Fatalf("exit %d, stdout %q", r.code, r.stdout)
		}
		mustContain(t, "stderr", r.stderr, claimed[0].ID, "already finished")
	})
}

func TestBadInputNamesTheFlag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("migrate") // the commands that read create no database
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"an unknown status", []string{"runs", "list", "--status", "done"}, []string{`--status "done"`, "pending, running"}},
		{"a bad cursor", []string{"runs", "list", "--cursor", "not-a-cursor"}, []string{`--cursor "not-a-cursor"`}},
		{"a zero limit", []string{"runs", "list", "--limit", "0"}, []string{"--limit 0"}},
		{"a non-numeric limit", []string{"runs", "list", "--limit", "ten"}, []string{`invalid --limit "ten": want a whole number`, "runs per page", "ow runs list --help"}},
		{"a non-numeric batch", []string{"demo", "--batch", "two"}, []string{`invalid --batch "two": want a whole number`}},
		{"an unparsable sleep", []string{"demo", "--sleep", "soon"}, []string{`invalid --sleep "soon": want a duration`}},
		{"bad JSON in --data", []string{"signal", "send", "go", "--data", "{oops"}, []string{`--data "{oops"`, "not JSON"}},
		{"a missing run id", []string{"runs", "get"}, []string{"<run-id>"}},
		{"an unknown run id", []string{"runs", "get", "wrun_nope"}, []string{`"wrun_nope"`, "ow runs list"}},
		{"an empty run id", []string{"runs", "get", ""}, []string{"<run-id> is empty", "give a run id"}},
		{"a blank run id to cancel", []string{"runs", "cancel", " "}, []string{"<run-id> is empty"}},
		{"an empty signal name", []string{"signal", "send", ""}, []string{"<signal> is empty"}},
		{"an unknown package", []string{"demo", "--packages", "no/such"}, []string{"--packages", `"no/such"`}},
		{"a negative sleep", []string{"demo", "--sleep", "-1s"}, []string{"--sleep"}},
		{"a zero concurrency", []string{"demo", "--concurrency", "0"}, []string{"--concurrency", "positive"}},
		{"an unknown command", []string{"runz"}, []string{`unknown command "runz"`}},
		{"an unknown runs subcommand", []string{"runs", "frob"}, []string{`unknown command "frob" for "ow runs"`, "cancel, fork, get, list, pause, prune, resume"}},
		{"an unknown signal subcommand", []string{"signal", "frob"}, []string{`unknown command "frob" for "ow signal"`, "send"}},
		{"a misspelt signal subcommand", []string{"signal", "sned"}, []string{`unknown command "sned"`, `did you mean "send"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is rejected with a message naming it", func(t *testing.T) {
			t.Parallel()
			r := e.run(tt.args...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty: %q", r.stdout)
			}
			mustContain(t, "stderr", r.stderr, tt.want...)
			if strings.Contains(r.stderr, "strconv") || strings.Contains(r.stderr, "time: ") {
				t.Errorf("stderr shows a Go parser's message instead of saying what is expected: %s", r.stderr)
			}
			if strings.Contains(r.stderr, "  ") {
				t.Errorf("stderr has a double space, where a value is missing: %q", r.stderr)
			}
		})
	}
}

func TestSignalSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := e.client()
	type approval struct {
		OK bool `json:"ok"`
	}
	wait := ow.Define(ow.Spec{Name: "await-approval"}, func(ctx ow.Context, _ struct{}) (approval, error) {
		a, _, err := ow.WaitForSignal[approval](ctx, "approve")
		return a, err
	})
	w := ow.NewWorker(c.Backend().(backend.Backend), ow.WorkerOptions{Concurrency: 2})
	if err := w.Register(wait); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	h, err := wait.Start(ctx, c, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	waitForSignalWait(t, ctx, c, h.ID)

	res := decode[signalResult](t, e.ok("signal", "send", "approve", "--data", `{"ok":true}`, "--idempotency-key", "k1", "--json"))
	if res.Signal != "approve" || len(res.WorkflowRunIDs) != 1 || res.WorkflowRunIDs[0] != h.ID {
		t.Fatalf("signal send --json = %+v; want delivery to %s", res, h.ID)
	}
	got, err := h.Result(ctx)
	if err != nil || !got.OK {
		t.Fatalf("result %+v, %v; want the signal's data", got, err)
	}
	again := e.ok("signal", "send", "approve", "--data", `{"ok":true}`, "--idempotency-key", "k1")
	mustContain(t, "repeated send", again.stdout, "delivered to 1 run(s): "+h.ID)
	mustContain(t, "send without waiters", e.ok("signal", "send", "nobody-waits").stdout, "no run was waiting")
}

// waitForSignalWait polls until the run has a running signal-wait step.
func waitForSignalWait(t *testing.T, ctx context.Context, c *ow.Client, runID string) {
	t.Helper()
	for {
		page, err := c.ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: runID})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Data {
			if s.Kind == backend.StepSignalWait && s.Status == backend.StepRunning {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s never waited for its signal", runID)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.ok("doctor").stdout
	mustContain(t, "doctor", out, "config file:    none", "sqlite_path", e.db, "flag --sqlite-path",
		"reachable:      yes", "schema version: 5", "0 pending", "notifications:  in-process")
	d := decode[config.Diagnosis](t, e.ok("doctor", "--json"))
	if !d.Reachable || d.SchemaVersion != 5 || d.Backend != config.BackendSQLite || len(d.Settings) == 0 {
		t.Errorf("doctor --json = %+v", d)
	}

	t.Run("an unreachable PostgreSQL exits 1 and says what to do", func(t *testing.T) {
		t.Parallel()
		var out, errOut bytes.Buffer
		code := execute(context.Background(), []string{"--postgres-url", "postgres://nobody:secret@127.0.0.1:1/x?connect_timeout=2", "doctor"}, &out, &errOut, e.dir)
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		mustContain(t, "stdout", out.String(), "opened:         no: cannot reach PostgreSQL", "flag --postgres-url")
		mustContain(t, "stderr", errOut.String(), "cannot reach PostgreSQL at postgres://nobody:xxxxx@127.0.0.1:1", "fix --postgres-url")
		if strings.Contains(out.String()+errOut.String(), "secret") {
			t.Error("the password is printed")
		}
	})
}

func TestConfigFileIsFoundFromTheWorkingDirectory(t *testing.T) {
	for _, k := range []string{config.EnvPostgresURL, config.EnvSQLitePath, config.EnvNamespace, config.EnvSchema, config.EnvWorkerConcurrency} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte("sqlite_path: data/x.db\nnamespace: team\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := execute(context.Background(), []string{"doctor", "--json"}, &out, &errOut, sub); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var d config.Diagnosis
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.File != filepath.Join(dir, config.FileName) || d.Location != filepath.Join(dir, "data", "x.db") {
		t.Errorf("doctor used file %q, database %q", d.File, d.Location)
	}
}

func TestDemoCompletesWithAReport(t *testing.T) {
	t.Parallel()
	if _, err := goindex.SourceRoot(); err != nil {
		t.Skip(err)
	}
	e := newEnv(t)
	pkgs := "errors,container/list,unicode/utf8"
	out := e.ok("demo", "--packages", pkgs, "--sleep", "10ms").stdout
	mustContain(t, "demo", out, "started run wrun_", "batch 1: [errors container/list]", "indexed container/list/list.go",
		"durable sleep 10ms", "batch 2: [unicode/utf8]", "report: 3 packages", "largest files:", "total", "done in")

	t.Run("running it again shows the completed run's report as JSON", func(t *testing.T) {
		r := e.ok("demo", "--packages", pkgs, "--sleep", "10ms", "--json")
		res := decode[goindex.DemoResult](t, r)
		if !res.Resumed || res.Report.Totals.Files == 0 || len(res.Report.Packages) != 3 {
			t.Errorf("demo --json = %+v", res)
		}
		mustContain(t, "stderr", r.stderr, "already completed")
		if !strings.Contains(out, "started run "+res.RunID) {
			t.Errorf("second demo returned run %s, not the first one", res.RunID)
		}

		d := decode[runDetail](t, e.ok("runs", "get", res.RunID, "--json"))
		if d.Run.Status != backend.RunCompleted || len(d.Steps) == 0 {
			t.Errorf("runs get of the demo run: status %s, %d steps", d.Run.Status, len(d.Steps))
		}
	})
}

// ow runs signal keeps a signal for one run until the run waits for it:
// sent before any worker runs it, the run still receives it.
func TestRunsSignalKeepsTheSignalUntilTheRunWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := e.client()
	type approval struct {
		OK bool `json:"ok"`
	}
	wait := ow.Define(ow.Spec{Name: "await-approval"}, func(ctx ow.Context, _ struct{}) (approval, error) {
		a, _, err := ow.WaitForSignal[approval](ctx, "approve")
		return a, err
	})
	h, err := wait.Start(ctx, c, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "signal before the run waits", e.ok("runs", "signal", h.ID, "approve", "--data", `{"ok":true}`).stdout, "kept for run "+h.ID)
	w := ow.NewWorker(c.Backend().(backend.Backend), ow.WorkerOptions{Concurrency: 2})
	if err := w.Register(wait); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	got, err := h.Result(ctx)
	if err != nil || !got.OK {
		t.Fatalf("result %+v, %v; want the signal sent before the run waited", got, err)
	}
	r := e.run("runs", "signal", h.ID, "approve")
	if r.code == 0 {
		t.Fatalf("signal to a completed run succeeded: %s", r.stdout)
	}
	mustContain(t, "signal to a completed run", r.stderr, "terminal")
}
