package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
	"github.com/openworkflow-go/openworkflow/metrics"
	"github.com/openworkflow-go/openworkflow/server"
)

type in struct {
	I int `json:"i"`
}

// seq3 is W1's workflow: three steps in a row.
var seq3 = ow.Define(ow.Spec{Name: "seq3"}, func(ctx ow.Context, x in) (int, error) {
	sum := 0
	for _, name := range []string{"a", "b", "c"} {
		v, err := ow.Run(ctx, name, func(context.Context) (int, error) { return x.I, nil })
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
})

// boom fails at its one step, for good.
var boom = ow.Define(ow.Spec{Name: "boom"}, func(ctx ow.Context, x in) (int, error) {
	return ow.Run(ctx, "explode", func(context.Context) (int, error) {
		return 0, ow.NonRetryable(errors.New("boom"))
	})
})

func openSQLite(t *testing.T) *sqlite.Backend {
	t.Helper()
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ow.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// serve runs server.Serve on a loopback port until the test ends, and
// returns its base URL and a channel with Serve's result.
func serve(t *testing.T, c *ow.Client, opts server.Options) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Listener = ln
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, c, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), done
}

// scrape GETs /metrics over HTTP and parses it with Prometheus' own text
// parser.
func scrape(t *testing.T, base string, header http.Header) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header = header
	req.Header.Set("Accept", "text/plain") // the text format, not protobuf
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s: %s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics answered %q, want Prometheus' text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("Prometheus' parser refuses /metrics: %v\n%s", err, body)
	}
	return fams
}

// metric finds the sample of family name whose labels include want
// (name=value pairs); nil when there is none.
func metric(fams map[string]*dto.MetricFamily, name string, want ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is a gauge's or counter's value, or a histogram's sample count;
// -1 when the sample is missing.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	m := metric(fams, name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}

func postRun(t *testing.T, base, workflow string, i int) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"workflowName": workflow, "input": in{I: i}})
	resp, err := http.Post(base+"/v1/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var run struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&run) != nil {
		t.Fatalf("POST /v1/runs %s: %s", workflow, resp.Status)
	}
	return run.ID
}

// TestMetricsCountWhatRan runs workflows through the API and a worker in
// one server, then scrapes /metrics over HTTP and checks every family
// against what ran: runs per status, run, step and pass durations, claims,
// commits, slots and API requests.
func TestMetricsCountWhatRan(t *testing.T) {
	b := openSQLite(t)
	c := ow.NewClient(b)
	m, err := metrics.New(metrics.Options{Client: c, CountsMaxAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	const slots, completed, failed = 4, 20, 2
	w := ow.NewWorker(b, ow.WorkerOptions{Concurrency: slots, Metrics: m})
	if err := w.Register(seq3, boom); err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, c, server.Options{API: api.Options{Metrics: m}, Metrics: m.Handler(), Worker: w})

	var ids []string
	for i := range completed {
		ids = append(ids, postRun(t, base, "seq3", i))
	}
	for i := range failed {
		ids = append(ids, postRun(t, base, "boom", i))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, id := range ids {
		_, _ = c.Handle(id).Result(ctx) // boom's runs fail: that is their result
	}
	if ctx.Err() != nil {
		t.Fatal("runs did not finish in 30 s")
	}
	// A run is finished when its transition commits; its slot is freed
	// just after, and its pass is measured when the pass's goroutine
	// ends, after that (CI once scraped between the two: 19 passes of
	// 20). Wait for both, not with a sleep.
	settled := func(fams map[string]*dto.MetricFamily) bool {
		return value(fams, "openworkflow_worker_slots_busy") == 0 &&
			value(fams, "openworkflow_pass_duration_seconds", "workflow", "seq3", "outcome", "completed")+
				value(fams, "openworkflow_pass_duration_seconds", "workflow", "boom", "outcome", "failed") >= completed+failed
	}
	var fams map[string]*dto.MetricFamily
	for fams = scrape(t, base, http.Header{}); !settled(fams); fams = scrape(t, base, http.Header{}) {
		if ctx.Err() != nil {
			t.Fatalf("slots still busy (%v) or passes not all measured", value(fams, "openworkflow_worker_slots_busy"))
		}
		time.Sleep(10 * time.Millisecond)
	}

	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"openworkflow_runs", []string{"status", "completed"}, completed},
		{"openworkflow_runs", []string{"status", "failed"}, failed},
		{"openworkflow_runs", []string{"status", "pending"}, 0},
		{"openworkflow_runs", []string{"status", "running"}, 0},
		{"openworkflow_runs", []string{"status", "canceled"}, 0},
		{"openworkflow_run_duration_seconds", []string{"workflow", "seq3", "status", "completed"}, completed},
		{"openworkflow_run_duration_seconds", []string{"workflow", "boom", "status", "failed"}, failed},
		{"openworkflow_step_duration_seconds", []string{"workflow", "seq3", "status", "completed"}, 3 * completed},
		{"openworkflow_step_duration_seconds", []string{"workflow", "boom", "status", "failed"}, failed},
		{"openworkflow_pass_duration_seconds", []string{"workflow", "seq3", "outcome", "completed"}, completed},
		{"openworkflow_pass_duration_seconds", []string{"workflow", "boom", "outcome", "failed"}, failed},
		{"openworkflow_claimed_runs_total", nil, completed + failed},
		{"openworkflow_claim_errors_total", nil, 0},
		{"openworkflow_commit_failed_groups_total", nil, 0},
		{"openworkflow_workers", nil, 1},
		{"openworkflow_worker_slots", nil, slots},
		{"openworkflow_worker_slots_busy", nil, 0},
		{"openworkflow_worker_abandoned_steps", nil, 0},
		{"openworkflow_http_request_duration_seconds", []string{"route", "/v1/runs", "method", "POST", "code", "201"}, completed + failed},
	} {
		if got := value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Every claim that took runs is measured; the idle worker's empty
	// claims too.
	if n := value(fams, "openworkflow_claim_duration_seconds"); n < 1 {
		t.Errorf("claim latency has %v samples, want at least one", n)
	}
	// Each step and each transition is one write: 3+1 per seq3 run, 1+1
	// per boom run (more only if a step ran past RunningStepAfter and got
	// a running row too). Commits batch them: at most one per write.
	writes := metric(fams, "openworkflow_commit_writes").GetHistogram()
	commits := value(fams, "openworkflow_commit_duration_seconds")
	if min := float64(4*completed + 2*failed); writes.GetSampleSum() < min {
		t.Errorf("commits applied %v writes, want at least %v", writes.GetSampleSum(), min)
	}
	if commits < 1 || commits > writes.GetSampleSum() || float64(writes.GetSampleCount()) != commits {
		t.Errorf("%v commits for %v writes (%d batch sizes)", commits, writes.GetSampleSum(), writes.GetSampleCount())
	}
	if value(fams, "go_goroutines") < 1 || value(fams, "process_start_time_seconds") <= 0 {
		t.Error("the Go runtime and process collectors are missing")
	}
}

// TestMetricsNeedTheTokenWhenTheAPIHasOne: /metrics is as protected as the
// API it describes.
func TestMetricsNeedTheTokenWhenTheAPIHasOne(t *testing.T) {
	b := openSQLite(t)
	c := ow.NewClient(b)
	m, err := metrics.New(metrics.Options{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, c, server.Options{API: api.Options{Token: "s3cret-metrics-token", Metrics: m}, Metrics: m.Handler()})
	for _, h := range []string{"", "Bearer wrong", "s3cret-metrics-token"} {
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /metrics with Authorization %q: %s, want 401", h, resp.Status)
		}
	}
	fams := scrape(t, base, http.Header{"Authorization": {"Bearer s3cret-metrics-token"}})
	if value(fams, "openworkflow_runs", "status", "pending") != 0 {
		t.Errorf("with the token: openworkflow_runs{pending} = %v, want 0", value(fams, "openworkflow_runs", "status", "pending"))
	}
	// The refused scrapes never reached the API's routes.
	if n := value(fams, "openworkflow_http_request_duration_seconds", "route", "unmatched"); n != -1 {
		t.Errorf("unmatched API requests counted: %v", n)
	}
}

// countingClient counts CountWorkflowRuns calls, and fails them while
// failing is set.
type countingClient struct {
	backend.Client
	calls   atomic.Int32
	failing atomic.Bool
}

func (c *countingClient) CountWorkflowRuns(ctx context.Context) (backend.RunCounts, error) {
	c.calls.Add(1)
	if c.failing.Load() {
		return backend.RunCounts{}, errors.New("database unreachable")
	}
	return c.Client.CountWorkflowRuns(ctx)
}

func TestRunCountsAreReusedForCountsMaxAgeAndAFailedCountSparesTheRest(t *testing.T) {
	b := openSQLite(t)
	cc := &countingClient{Client: b}
	c := ow.NewClient(cc)
	if _, err := c.StartByName(t.Context(), "seq3", "", in{}); err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(metrics.Options{Client: c, CountsMaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, c, server.Options{Metrics: m.Handler()})
	for range 3 {
		if got := value(scrape(t, base, http.Header{}), "openworkflow_runs", "status", "pending"); got != 1 {
			t.Fatalf("openworkflow_runs{pending} = %v, want 1", got)
		}
	}
	if n := cc.calls.Load(); n != 1 {
		t.Errorf("3 scrapes within CountsMaxAge counted %d times, want 1", n)
	}

	failing, err := metrics.New(metrics.Options{Client: c, CountsMaxAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	cc.failing.Store(true)
	base, _ = serve(t, c, server.Options{Metrics: failing.Handler()})
	fams := scrape(t, base, http.Header{})
	if _, ok := fams["openworkflow_runs"]; ok {
		t.Error("a failed count still exported openworkflow_runs")
	}
	if value(fams, "openworkflow_worker_slots") != 0 {
		t.Errorf("the other metrics are missing when the count fails: %v", fmt.Sprint(len(fams), " families"))
	}
}

func TestTwoExportersOnOneRegistryIsAnError(t *testing.T) {
	m, err := metrics.New(metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(metrics.Options{Registry: m.Registry()}); err == nil {
		t.Error("a second exporter registered its metrics in the same registry")
	}
}

// TestTheAbandonedStepsGaugeFollowsTheWorkersReports: each abandonment a
// worker reports raises openworkflow_worker_abandoned_steps, each return
// of abandoned code lowers it.
func TestTheAbandonedStepsGaugeFollowsTheWorkersReports(t *testing.T) {
	m, err := metrics.New(metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gauge := func() float64 {
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*dto.MetricFamily{}
		for _, f := range fams {
			byName[f.GetName()] = f
		}
		return value(byName, "openworkflow_worker_abandoned_steps")
	}
	for _, step := range []struct {
		abandoned bool
		want      float64
	}{{true, 1}, {true, 2}, {false, 1}, {false, 0}} {
		m.ObserveAbandonedStep(step.abandoned)
		if got := gauge(); got != step.want {
			t.Fatalf("after ObserveAbandonedStep(%v): gauge %v, want %v", step.abandoned, got, step.want)
		}
	}
}
