package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/openworkflow-go/openworkflow/backend"
)

// workerEnv turns the test binary into a W5 worker process (what
// "ow bench worker" is in the CLI); its arguments follow the binary name.
const workerEnv = "OW_BENCH_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := WorkerMain(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// testWorkerCommand re-executes the test binary as a worker process.
func testWorkerCommand(ctx context.Context, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	return cmd
}

// testPostgresURL is the admin URL of the test server; the bench creates
// its databases through it.
func testPostgresURL() string {
	if u := os.Getenv("OPENWORKFLOW_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// requirePostgres returns the admin URL, or skips when the server is
// unreachable and OPENWORKFLOW_SKIP_POSTGRES=1 (else the test fails).
func requirePostgres(t *testing.T) string {
	t.Helper()
	url := testPostgresURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if os.Getenv("OPENWORKFLOW_SKIP_POSTGRES") == "1" {
			t.Skipf("PostgreSQL unreachable and OPENWORKFLOW_SKIP_POSTGRES=1: %v", err)
		}
		t.Fatalf("PostgreSQL at %s unreachable (set OPENWORKFLOW_TEST_POSTGRES_URL, or OPENWORKFLOW_SKIP_POSTGRES=1 to skip): %v", url, err)
	}
	_ = conn.Close(ctx)
	return url
}

// benchDatabases lists the databases the bench created and has not
// dropped.
func benchDatabases(t *testing.T, url string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1", dbPrefix)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// syncBuffer is a progress writer tests can read while the bench writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// wantMetrics are the metrics every workload must report, per backend
// kind (PostgreSQL adds the commit counts).
func wantMetrics(workload, kind string) []string {
	var ms []string
	switch workload {
	case W0, W0b:
		ms = []string{MetricStartsPerS}
	case W1, W1k, W1f, W3:
		ms = []string{MetricRunsPerS, MetricStepsPerS, MetricCPUPerRun} // the worker runs in the bench's process
	case W5:
		ms = []string{MetricRunsPerS, MetricStepsPerS}
	case W2, L3, L3h:
		ms = []string{MetricRunsPerS, MetricP50, MetricP95, MetricP99}
	case W4:
		ms = []string{MetricRunsPerS, MetricStepsPerS, MetricLatenessP50, MetricLatenessP99}
	}
	if kind == Postgres {
		ms = append(ms, MetricCommitsPerRun)
		if workload != W0 && workload != W0b {
			ms = append(ms, MetricCommitsPerStep)
		}
	}
	return ms
}

// The CI check of ow bench: every standard workload, at a tiny scale, on
// each backend. It asserts that the tool works and verified every output,
// never how fast anything is.
func TestEveryWorkloadRunsAndVerifiesEveryOutput(t *testing.T) {
	for _, kind := range []string{SQLite, Postgres} {
		t.Run("on "+kind, func(t *testing.T) {
			o := Options{Runs: 20, Concurrency: 10, Backends: []string{kind}, TempDir: t.TempDir(), WorkerCommand: testWorkerCommand}
			var before []string
			if kind == Postgres {
				o.PostgresURL = requirePostgres(t)
				before = benchDatabases(t, o.PostgresURL)
			}
			var progress syncBuffer
			o.Progress = &progress
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()

			rep, err := Run(ctx, o)
			if err != nil {
				t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
			}

			type key struct {
				workload string
				workers  int
			}
			got := map[key]Result{}
			for _, r := range rep.Results {
				got[key{r.Workload, r.Workers}] = r
			}
			want := []key{{W0, 0}, {W0b, 0}, {W1, 0}, {W2, 0}, {L3, 0}, {L3h, 0}, {W3, 0}, {W4, 0}, {W5, 1}, {W5, 2}, {W5, 4}}
			if len(rep.Results) != len(want) {
				t.Errorf("got %d results, want %d: %+v", len(rep.Results), len(want), rep.Results)
			}
			for _, k := range want {
				r, ok := got[k]
				if !ok {
					t.Errorf("no result for %s with %d workers", k.workload, k.workers)
					continue
				}
				if r.Engine != EngineGo || r.Backend != kind || r.Repeat != 1 || r.Error != "" || r.Skipped != "" {
					t.Errorf("%s: engine %q backend %q repeat %d error %q skipped %q; want go, %s, 1 measurement, no error", r.Label(), r.Engine, r.Backend, r.Repeat, r.Error, r.Skipped, kind)
				}
				if r.Runs != o.runsFor(k.workload) {
					t.Errorf("%s: %d runs, want %d", r.Label(), r.Runs, o.runsFor(k.workload))
				}
				for _, m := range wantMetrics(k.workload, kind) {
					if v, ok := r.Metrics[m]; !ok || v <= 0 {
						t.Errorf("%s: metric %s = %v (present %v), want a positive value", r.Label(), m, v, ok)
					}
				}
			}
			if s := got[key{W5, 2}].Metrics[MetricSpeedup]; s <= 0 {
				t.Errorf("W5 ×2 has no speed-up over 1 process: %v", got[key{W5, 2}].Metrics)
			}
			if !strings.Contains(progress.String(), "runs verified") {
				t.Errorf("progress does not report verified runs:\n%s", progress.String())
			}
			if kind == Postgres {
				if after := benchDatabases(t, o.PostgresURL); len(after) != len(before) {
					t.Errorf("bench databases before %v, after %v: every database must be dropped", before, after)
				}
			}
		})
	}
}

func TestJSONOutputIsOneObjectPerLineWithTheRequiredFields(t *testing.T) {
	rep := &Report{Results: []Result{
		{Engine: EngineGo, Workload: W1, Backend: Postgres, Concurrency: 100, Runs: 5000, Steps: 15000, Repeat: 3,
			Metrics: map[string]float64{MetricRunsPerS: 1234.5678, MetricStepsPerS: 3703.7, MetricCommitsPerStep: 0.3333333, MetricSeconds: 4.05}},
		{Engine: EngineGo, Workload: W2, Backend: SQLite, Concurrency: 100, Runs: 200, Steps: 200, Repeat: 3,
			Metrics: map[string]float64{MetricP50: 3.2, MetricP95: 4.5, MetricP99: 9.87654}},
	}}
	var out bytes.Buffer
	if err := WriteJSON(&out, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not one JSON object: %v\n%s", i, err, l)
		}
		for _, f := range []string{"workload", "backend", "runs"} {
			if _, ok := m[f]; !ok {
				t.Errorf("line %d lacks %q: %s", i, f, l)
			}
		}
	}
	if !strings.HasPrefix(lines[0], `{"engine":"go","workload":"W1","backend":"postgres",`) ||
		!strings.Contains(lines[0], `"runs_per_s":1235,"steps_per_s":3704,"commits_per_step":0.3333`) {
		t.Errorf("W1 line not in field order or not rounded to 4 significant digits:\n%s", lines[0])
	}
	var back Result
	if err := json.Unmarshal([]byte(lines[1]), &back); err != nil {
		t.Fatal(err)
	}
	if back.Workload != W2 || back.Runs != 200 || back.Metrics[MetricP99] != 9.877 {
		t.Errorf("round trip of %s gave %+v", lines[1], back)
	}
}

func TestRepeatedMeasurementsAreFoldedIntoMedians(t *testing.T) {
	m := func(workers int, runsPerS float64) Result {
		return Result{Engine: EngineGo, Workload: W5, Backend: SQLite, Workers: workers, Repeat: 1, Metrics: map[string]float64{MetricRunsPerS: runsPerS}}
	}
	failed := m(1, 0)
	failed.Error = "output verification failed"
	got := aggregate([]Result{m(1, 100), m(2, 150), m(1, 300), m(2, 250), m(1, 200), m(2, 200), failed})
	if len(got) != 2 {
		t.Fatalf("got %d results, want one per worker count: %+v", len(got), got)
	}
	one, two := got[0], got[1]
	if one.Repeat != 3 || one.Metrics[MetricRunsPerS] != 200 {
		t.Errorf("1 worker: repeat %d, runs/s %v; want the median of the 3 good measurements, 200", one.Repeat, one.Metrics[MetricRunsPerS])
	}
	if one.Error == "" {
		t.Error("1 worker: the failed measurement's error is lost")
	}
	if two.Metrics[MetricRunsPerS] != 200 || two.Metrics[MetricSpeedup] != 1 {
		t.Errorf("2 workers: runs/s %v speed-up %v; want 200 and 1 (200 ÷ 200)", two.Metrics[MetricRunsPerS], two.Metrics[MetricSpeedup])
	}
}

func TestRatiosAreGoOverTypeScript(t *testing.T) {
	goRs := []Result{{Workload: W1, Backend: Postgres, Repeat: 1, Metrics: map[string]float64{MetricRunsPerS: 1000, MetricCommitsPerStep: 0.5, MetricSeconds: 5}}}
	tsRs := []Result{
		{Workload: W1, Backend: Postgres, Repeat: 1, Metrics: map[string]float64{MetricRunsPerS: 250, MetricCommitsPerStep: 2, MetricSeconds: 20}},
		{Workload: W1, Backend: SQLite, Skipped: "no node:sqlite"},
	}
	rs := ratios(goRs, tsRs)
	if len(rs) != 1 {
		t.Fatalf("got %d ratios, want 1: %+v", len(rs), rs)
	}
	if rs[0].Metrics[MetricRunsPerS] != 4 || rs[0].Metrics[MetricCommitsPerStep] != 0.25 {
		t.Errorf("ratios %v, want runs/s 4 and commits/step 0.25", rs[0].Metrics)
	}
	if _, ok := rs[0].Metrics[MetricSeconds]; ok {
		t.Error("the duration is not a metric to compare")
	}
}

func TestVerifyFailsLoudlyOnAWrongOrMissingOutput(t *testing.T) {
	good := func(i int) runRow { return runRow{i: i, status: "completed", output: expectedOutput(i, 3)} }
	cases := []struct {
		name string
		rows []runRow
		want string // "" = verifies
	}{
		{"every run completed with its output", []runRow{good(0), good(1), good(2)}, ""},
		{"a wrong output", []runRow{good(0), {i: 1, status: "completed", output: Output{I: 1, Sum: 5}}, good(2)}, `output {"i":1,"sum":5}, want {"i":1,"sum":6}`},
		{"a missing run", []runRow{good(0), good(2)}, "no run with input 1"},
		{"a failed run", []runRow{good(0), {i: 1, status: "failed"}, good(2)}, "status failed"},
		{"a run twice", []runRow{good(0), good(1), good(1), good(2)}, "a second run with input 1"},
		{"a run of another workflow", []runRow{good(0), good(1), good(2), {i: 0, status: "completed", name: "other"}}, "unexpected run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := verify(fakeRuns(c.rows), nameSeq3, 3, 3)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("verify: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("verify = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestInterruptDropsTheDatabaseInUse(t *testing.T) {
	url := requirePostgres(t)
	before := benchDatabases(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// W4's runs sleep 2 s, so the workload is still under way at its
	// first progress report, whatever the machine's speed; the bench is
	// interrupted then.
	progress := &cancelOnWrite{substr: "W4 postgres:", cancel: cancel}
	_, err := Run(ctx, Options{Workloads: []string{W4}, Backends: []string{Postgres}, PostgresURL: url, Progress: progress})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if after := benchDatabases(t, url); len(after) != len(before) {
		t.Errorf("bench databases before %v, after the interrupt %v", before, after)
	}
}

// cancelOnWrite cancels when a progress line contains substr.
type cancelOnWrite struct {
	substr string
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.substr) {
		c.cancel()
	}
	return len(p), nil
}

func TestWorkloadSelectionAndScaling(t *testing.T) {
	cases := []struct {
		in      []string
		want    string
		wantErr bool
	}{
		{nil, "W0,W0b,W1,W2,L3,L3h,W3,W4,W5", false},
		{[]string{"all"}, "W0,W0b,W1,W2,L3,L3h,W3,W4,W5", false},
		{[]string{"w1K"}, "W1k", false},
		{[]string{"w2", "W0"}, "W0,W0b,W2", false},
		{[]string{"W0b"}, "W0b", false},
		{[]string{"L0", "W1"}, "W1,L0", false},
		{[]string{"w1m", "W1"}, "W1,W1m", false},
		{[]string{"s1", "W1"}, "W1,S1", false},
		{[]string{"W9"}, "", true},
	}
	for _, c := range cases {
		got, err := ParseWorkloads(c.in)
		if (err != nil) != c.wantErr || strings.Join(got, ",") != c.want {
			t.Errorf("ParseWorkloads(%q) = %q, %v; want %q (error %v)", c.in, got, err, c.want, c.wantErr)
		}
	}
	std := Options{}
	scaled := Options{Runs: 200}
	for w, want := range map[string][2]int{W0: {5000, 200}, W1: {5000, 200}, W1k: {5000, 200}, W2: {200, 8}, L3: {300, 12}, L3h: {300, 12}, W3: {500, 20}, W4: {1000, 40}, W5: {5000, 200}} {
		if got := [2]int{std.runsFor(w), scaled.runsFor(w)}; got != want {
			t.Errorf("%s runs (standard, --runs 200) = %v, want %v", w, got, want)
		}
	}
	if got := (Options{Runs: 1}).runsFor(W2); got != 1 {
		t.Errorf("W2 at --runs 1 has %d runs, want at least 1", got)
	}
	if _, err := ParseBackends([]string{"mysql"}); err == nil {
		t.Error("ParseBackends accepted mysql")
	}
}

// runRow describes a fake run for verify.
type runRow struct {
	i      int
	status string
	output Output
	name   string // "" = bench-seq3
}

func fakeRuns(rows []runRow) []backend.WorkflowRun {
	runs := make([]backend.WorkflowRun, len(rows))
	for k, r := range rows {
		in, _ := json.Marshal(Input{I: r.i})
		out, _ := json.Marshal(r.output)
		name := r.name
		if name == "" {
			name = nameSeq3
		}
		runs[k] = backend.WorkflowRun{ID: fmt.Sprintf("wrun_%d", k), WorkflowName: name, Status: backend.RunStatus(r.status), Input: in, Output: out}
	}
	return runs
}

func TestCommitCountsKeepThreeSignificantDigits(t *testing.T) {
	for v, want := range map[float64]string{11.06: "11.1", 1: "1.00", 0.0503: "0.0503", 0.001: "0.00100", 0: "0"} {
		if got := significant(v); got != want {
			t.Errorf("significant(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestW1AndW1mAreMeasuredInTurnsWhoseOrderAlternates(t *testing.T) {
	both := []string{W1, W1m}
	for i, want := range []string{"W1 W1m", "W1m W1", "W1 W1m"} {
		var got []string
		for _, tr := range turnsOf(W1, i, both) {
			got = append(got, tr.id)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("repetition %d measures %v, want %s", i, got, want)
		}
	}
	if got := turnsOf(W1, 0, []string{W1}); len(got) != 1 || got[0].id != W1 {
		t.Errorf("W1 alone measures %v", got)
	}
	res := func(w string, runsPerS float64) Result {
		return Result{Engine: EngineGo, Workload: w, Backend: SQLite, Concurrency: 100, Repeat: 1, Metrics: map[string]float64{MetricRunsPerS: runsPerS}}
	}
	got := aggregate([]Result{res(W1, 1000), res(W1m, 950), res(W1m, 990), res(W1, 1100), res(W1, 900), res(W1m, 970)})
	if len(got) != 2 || got[1].Workload != W1m || got[1].Metrics[MetricSpeedup] != 0.97 {
		t.Errorf("W1m's speed-up over W1 = %+v; want 970 ÷ 1000 = 0.97", got)
	}
	if _, ok := got[0].Metrics[MetricSpeedup]; ok {
		t.Errorf("W1 got a speed-up of its own: %v", got[0].Metrics)
	}
}

func TestW1mCountsEveryRunInItsMetrics(t *testing.T) {
	o := Options{Runs: 40, Concurrency: 10, Backends: []string{SQLite}, Workloads: []string{W1m, W1}, Repeat: 2, TempDir: t.TempDir()}
	var progress syncBuffer
	o.Progress = &progress
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	if len(rep.Results) != 2 || rep.Results[1].Workload != W1m || rep.Results[1].Repeat != 2 || rep.Results[1].Metrics[MetricSpeedup] <= 0 {
		t.Fatalf("results %+v; want W1 and W1m, 2 measurements each, W1m with its ratio to W1", rep.Results)
	}
	for _, r := range rep.Results {
		if r.Metrics[MetricCPUPerRun] <= 0 {
			t.Errorf("%s has no CPU time per run: %v", r.Workload, r.Metrics)
		}
	}
	var order []string
	for _, l := range strings.Split(progress.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(l, "runs verified") {
			order = append(order, f[0])
		}
	}
	if strings.Join(order, " ") != "W1 W1m W1m W1" {
		t.Errorf("measured in the order %v, want W1 W1m W1m W1\n%s", order, progress.String())
	}
}

// W1f is not a standard workload: its own check, on both backends, that
// its runs under fair shares finish verified, measured in turn with W1.
func TestW1fRunsEveryRunUnderFairShares(t *testing.T) {
	for _, kind := range []string{SQLite, Postgres} {
		t.Run("on "+kind, func(t *testing.T) {
			o := Options{Runs: 40, Concurrency: 10, Backends: []string{kind}, Workloads: []string{W1, W1f}, Repeat: 1, TempDir: t.TempDir()}
			if kind == Postgres {
				o.PostgresURL = requirePostgres(t)
			}
			var progress syncBuffer
			o.Progress = &progress
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := Run(ctx, o)
			if err != nil {
				t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
			}
			var f *Result
			for i, r := range rep.Results {
				if r.Workload == W1f {
					f = &rep.Results[i]
				}
			}
			if len(rep.Results) != 2 || f == nil || f.Error != "" || f.Runs != 40 {
				t.Fatalf("results %+v; want W1 and a W1f result of 40 runs, no error", rep.Results)
			}
			for _, m := range wantMetrics(W1f, kind) {
				if v := f.Metrics[m]; v <= 0 {
					t.Errorf("metric %s = %v, want a positive value", m, v)
				}
			}
		})
	}
}

// W1k is not a standard workload: its own check, on both backends, that its
// runs finish verified under their keys' limits.
func TestW1kRunsEveryRunUnderItsKeysLimits(t *testing.T) {
	for _, kind := range []string{SQLite, Postgres} {
		t.Run("on "+kind, func(t *testing.T) {
			o := Options{Runs: 40, Concurrency: 10, Backends: []string{kind}, Workloads: []string{W1k}, Repeat: 1, TempDir: t.TempDir()}
			if kind == Postgres {
				o.PostgresURL = requirePostgres(t)
			}
			var progress syncBuffer
			o.Progress = &progress
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := Run(ctx, o)
			if err != nil {
				t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
			}
			if len(rep.Results) != 1 || rep.Results[0].Workload != W1k || rep.Results[0].Error != "" || rep.Results[0].Runs != 40 {
				t.Fatalf("results %+v; want one W1k result of 40 runs, no error", rep.Results)
			}
			for _, m := range wantMetrics(W1k, kind) {
				if v := rep.Results[0].Metrics[m]; v <= 0 {
					t.Errorf("metric %s = %v, want a positive value", m, v)
				}
			}
			if !strings.Contains(progress.String(), "runs verified") {
				t.Errorf("progress does not report verified runs:\n%s", progress.String())
			}
		})
	}
}
