package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/metrics"
)

// startBatch is the number of runs one StartMany call starts (W0b, and the
// untimed enqueue of W1, W3, W5).
const startBatch = 1000

// stopTimeout bounds stopping a worker after a measurement.
const stopTimeout = 30 * time.Second

// resultTimeout bounds waiting for one W2 or L3 run.
const resultTimeout = 30 * time.Second

// measurement is one workload measured once on one fresh target.
type measurement struct {
	o       Options
	t       target
	id      string // workload id
	workers int    // W5's worker processes
	label   string // "W1 postgres" for messages
	// exporter receives the in-process worker's measurements (W1m); nil
	// for the other workloads.
	exporter *metrics.Exporter
	// workerBackend is the in-process worker's backend while it runs (nil
	// with worker processes): W2 and L3 start and await their runs
	// through it, as a program that embeds a worker (ow dev, ow server)
	// does.
	workerBackend backend.Backend
}

func (m *measurement) progress() *progress {
	return &progress{w: m.o.Progress, label: m.label, last: time.Now()}
}

// result starts the measurement's Result.
func (m *measurement) result(runs, steps int) Result {
	return Result{Engine: EngineGo, Workload: m.id, Backend: m.t.kind(), Workers: m.workers,
		Concurrency: m.o.Concurrency, Runs: runs, Steps: steps, Repeat: 1, Metrics: map[string]float64{}}
}

// run measures the workload.
func (m *measurement) run(ctx context.Context) (Result, error) {
	switch m.id {
	case W0:
		return m.enqueue(ctx, false)
	case W0b:
		return m.enqueue(ctx, true)
	case W1:
		return m.throughput(ctx, seq3, 3)
	case W1m:
		res, err := m.throughput(ctx, seq3, 3)
		if err == nil {
			err = m.checkMetrics(res.Runs)
		}
		return res, err
	case W1k:
		return m.throughput(ctx, keyed, 3)
	case W1f:
		return m.throughput(ctx, seq3, 3)
	case W2:
		return m.latency(ctx, oneStep, 1)
	case L3:
		return m.latency(ctx, seq3, 3)
	case L3h:
		return m.latencyHTTP(ctx)
	case W3:
		return m.throughput(ctx, fanOut, fanOutWidth+1)
	case W4:
		return m.sleep(ctx)
	case W5:
		return m.throughput(ctx, seq3, 3)
	case R1:
		return m.prune(ctx)
	case S1:
		return m.schedule(ctx)
	}
	return Result{}, fmt.Errorf("workload %s cannot run here", m.id)
}

// commitMeter brackets a measured phase with the target's commit count.
type commitMeter struct {
	before int64
	ok     bool
}

// startCommits reads the commit count; every connection to the target
// must be closed.
func (m *measurement) startCommits(ctx context.Context) (commitMeter, error) {
	n, ok, err := m.t.commits(ctx)
	return commitMeter{before: n, ok: ok}, err
}

// stopCommits sets the commit metrics of res from the count now, less the
// bench's own transactions (own); every connection must be closed.
func (m *measurement) stopCommits(ctx context.Context, cm commitMeter, own int64, res *Result) error {
	if !cm.ok {
		return nil
	}
	after, _, err := m.t.commits(ctx)
	if err != nil {
		return err
	}
	commits := float64(after - cm.before - own)
	res.Metrics[MetricCommitsPerRun] = commits / float64(res.Runs)
	if res.Steps > 0 {
		res.Metrics[MetricCommitsPerStep] = commits / float64(res.Steps)
	}
	return nil
}

// enqueue is W0 (one Start at a time from one client) or W0b (StartMany
// in batches of startBatch). No worker runs while starts are timed; then
// a worker runs every run and each output is verified.
func (m *measurement) enqueue(ctx context.Context, batch bool) (Result, error) {
	n := m.o.runsFor(m.id)
	res := m.result(n, 0)
	cm, err := m.startCommits(ctx)
	if err != nil {
		return res, err
	}
	b, err := m.t.open(ctx)
	if err != nil {
		return res, err
	}
	p := m.progress()
	begin := time.Now()
	if batch {
		err = startMany(ctx, b, oneStep, n, p)
	} else {
		c := ow.NewClient(b)
		for i := 0; i < n && err == nil; i++ {
			_, err = oneStep.Start(ctx, c, Input{I: i})
			p.update(i+1, n, "runs started")
		}
	}
	elapsed := time.Since(begin)
	if err = errors.Join(err, b.Close()); err != nil {
		return res, err
	}
	res.Metrics[MetricStartsPerS] = float64(n) / elapsed.Seconds()
	res.Metrics[MetricSeconds] = elapsed.Seconds()
	if err := m.stopCommits(ctx, cm, 0, &res); err != nil {
		return res, err
	}
	// Not timed: every started run must run to the right output.
	if _, _, _, err := m.execute(ctx, n); err != nil {
		return res, err
	}
	return res, m.verify(ctx, nameOne, n, 1, nil)
}

// throughput is W1, W3 and W5: n runs of wf enqueued before any worker
// starts, then timed from the worker's start to the last completion. W5
// runs m.workers worker processes; the others one worker in this
// process.
func (m *measurement) throughput(ctx context.Context, wf *ow.Workflow[Input, Output], steps int) (Result, error) {
	n := m.o.runsFor(m.id)
	res := m.result(n, n*steps)
	b, err := m.t.open(ctx)
	if err != nil {
		return res, err
	}
	switch {
	case wf == keyed:
		err = startKeyed(ctx, b, n)
	case m.id == W1f:
		err = startFair(ctx, b, n)
	default:
		err = startMany(ctx, b, wf, n, nil)
	}
	if err = errors.Join(err, b.Close()); err != nil {
		return res, fmt.Errorf("enqueue %d runs: %w", n, err)
	}
	cm, err := m.startCommits(ctx)
	if err != nil {
		return res, err
	}
	cpu0, cpuOK := processCPU()
	begin, seen, polls, err := m.execute(ctx, n)
	if err != nil {
		return res, err
	}
	if cpu1, ok := processCPU(); cpuOK && ok && m.workers == 0 {
		// The in-process worker's CPU, with the bench's polling and the
		// worker's start and stop: less moved by other work on the
		// machine than the wall-clock rates are.
		res.Metrics[MetricCPUPerRun] = float64((cpu1 - cpu0).Microseconds()) / float64(n)
	}
	if err := m.stopCommits(ctx, cm, polls, &res); err != nil {
		return res, err
	}
	var end time.Time
	if err := m.verify(ctx, wf.Spec().Name, n, steps, func(runs []backend.WorkflowRun) {
		end = endOf(runs, begin, seen)
	}); err != nil {
		return res, err
	}
	secs := end.Sub(begin).Seconds()
	res.Metrics[MetricSeconds] = secs
	res.Metrics[MetricRunsPerS] = float64(n) / secs
	res.Metrics[MetricStepsPerS] = float64(n*steps) / secs
	return res, nil
}

// latency is W2 (wf one step) and L3 (wf three sequential steps): n runs,
// each started and awaited (Result) before the next, with an idle worker
// in this process, through the worker's backend; latency is from the
// Start call to Result's return, and every output is checked as it
// returns and again in the database afterwards.
func (m *measurement) latency(ctx context.Context, wf *ow.Workflow[Input, Output], steps int) (Result, error) {
	n := m.o.runsFor(m.id)
	res := m.result(n, n*steps)
	cm, err := m.startCommits(ctx)
	if err != nil {
		return res, err
	}
	stop, err := m.startWorkers(ctx)
	if err != nil {
		return res, err
	}
	c := ow.NewClient(m.workerBackend)
	p := m.progress()
	lat := make([]float64, 0, n)
	begin := time.Now()
	for i := 0; i < n && err == nil; i++ {
		t0 := time.Now()
		var h *ow.Handle[Output]
		if h, err = wf.Start(ctx, c, Input{I: i}); err != nil {
			break
		}
		rctx, cancel := context.WithTimeout(ctx, resultTimeout)
		var out Output
		out, err = h.Result(rctx)
		cancel()
		lat = append(lat, ms(time.Since(t0)))
		if err == nil && out != expectedOutput(i, steps) {
			err = fmt.Errorf("run %s (input %d): Result returned %+v, want %+v", h.ID, i, out, expectedOutput(i, steps))
		}
		p.update(i+1, n, "runs")
	}
	elapsed := time.Since(begin)
	if err = errors.Join(err, stop()); err != nil {
		return res, err
	}
	if err := m.stopCommits(ctx, cm, 0, &res); err != nil {
		return res, err
	}
	res.Metrics[MetricSeconds] = elapsed.Seconds()
	res.Metrics[MetricRunsPerS] = float64(n) / elapsed.Seconds()
	res.Metrics[MetricP50] = percentile(lat, 50)
	res.Metrics[MetricP95] = percentile(lat, 95)
	res.Metrics[MetricP99] = percentile(lat, 99)
	return res, m.verify(ctx, wf.Spec().Name, n, steps, nil)
}

// sleep is W4: with the worker running, n runs that sleep sleepFor and
// then run one step are started (StartMany); lateness is each run's
// finished_at − started_at − sleepFor.
func (m *measurement) sleep(ctx context.Context) (Result, error) {
	n := m.o.runsFor(W4)
	res := m.result(n, 2*n) // the sleep and the step are both step attempts
	cm, err := m.startCommits(ctx)
	if err != nil {
		return res, err
	}
	counter, err := m.t.counter(ctx)
	if err != nil {
		return res, err
	}
	b, err := m.t.open(ctx)
	if err != nil {
		return res, errors.Join(err, counter.close())
	}
	stop, err := m.startWorkers(ctx)
	if err != nil {
		return res, errors.Join(err, b.Close(), counter.close())
	}
	begin := time.Now()
	err = startMany(ctx, b, sleepThenStep, n, nil)
	var seen time.Time
	if err == nil {
		seen, err = waitAll(ctx, counter, n, m.progress())
	}
	if err = errors.Join(err, stop(), b.Close(), counter.close()); err != nil {
		return res, err
	}
	if err := m.stopCommits(ctx, cm, counter.calls(), &res); err != nil {
		return res, err
	}
	var late []float64
	var end time.Time
	err = m.verify(ctx, nameSleep, n, 1, func(runs []backend.WorkflowRun) {
		end = endOf(runs, begin, seen)
		for _, r := range runs {
			if r.StartedAt != nil && r.FinishedAt != nil {
				late = append(late, ms(r.FinishedAt.Sub(*r.StartedAt)-sleepFor))
			}
		}
	})
	if err != nil {
		return res, err
	}
	secs := end.Sub(begin).Seconds()
	res.Metrics[MetricSeconds] = secs
	res.Metrics[MetricRunsPerS] = float64(n) / secs
	res.Metrics[MetricStepsPerS] = float64(2*n) / secs
	res.Metrics[MetricLatenessP50] = percentile(late, 50)
	res.Metrics[MetricLatenessP99] = percentile(late, 99)
	return res, nil
}

// execute starts the workers, waits until n runs completed, and stops
// them. It returns when the workers started, when the bench saw the last
// completion, and the transactions its polling committed. Every
// connection it opened is closed when it returns.
func (m *measurement) execute(ctx context.Context, n int) (begin, seen time.Time, polls int64, err error) {
	counter, err := m.t.counter(ctx)
	if err != nil {
		return begin, seen, 0, err
	}
	begin = time.Now()
	stop, err := m.startWorkers(ctx)
	if err == nil {
		if m.workers > 0 {
			begin = time.Now() // processes are timed from their release
		}
		seen, err = waitAll(ctx, counter, n, m.progress())
		err = errors.Join(err, stop())
	}
	return begin, seen, counter.calls(), errors.Join(err, counter.close())
}

// startWorkers starts m.workers worker processes, released together, or
// (m.workers == 0) one worker in this process, and returns the function
// that stops them gracefully and closes their connections.
func (m *measurement) startWorkers(ctx context.Context) (stop func() error, err error) {
	if m.workers > 0 {
		g, err := startProcs(ctx, m.o, m.t, m.workers)
		if err != nil {
			return nil, err
		}
		g.release()
		return g.stop, nil
	}
	b, err := m.t.open(ctx)
	if err != nil {
		return nil, err
	}
	var stopScrapes func()
	if m.id == W1m {
		if m.exporter, err = metrics.New(metrics.Options{Client: ow.NewClient(b)}); err != nil {
			return nil, errors.Join(err, b.Close())
		}
		if stopScrapes, err = scrapeEverySecond(m.exporter.Handler()); err != nil {
			return nil, errors.Join(err, b.Close())
		}
	}
	w, err := newWorker(b, m.id, m.o.Concurrency, m.o.Progress, m.exporter)
	if err == nil {
		err = w.Start(ctx)
	}
	if err != nil {
		if stopScrapes != nil {
			stopScrapes()
		}
		return nil, errors.Join(err, b.Close())
	}
	m.workerBackend = b
	return func() error {
		m.workerBackend = nil
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		err := w.Stop(sctx)
		if stopScrapes != nil {
			stopScrapes()
		}
		return errors.Join(err, b.Close())
	}, nil
}

// newWorker is a bench worker: every bench workflow registered (and, for
// the workload W1k alone, the limited bench-keyed, so that no other
// workload's claims admit), warnings logged to logTo, measurements given to
// m when it is not nil.
func newWorker(b backend.Backend, workload string, concurrency int, logTo interface{ Write([]byte) (int, error) }, m *metrics.Exporter) (*ow.Worker, error) {
	opts := ow.WorkerOptions{
		Concurrency: concurrency,
		Logger:      slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if m != nil {
		opts.Metrics = m
	}
	w := ow.NewWorker(b, opts)
	defs := definitions()
	if workload == W1k {
		defs = append(defs, keyed)
	}
	return w, w.Register(defs...)
}

// scrapeEverySecond serves h on a loopback port and GETs it every second,
// as a Prometheus server scraping often would, until the returned
// function is called.
func scrapeEverySecond(h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serve metrics: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = srv.Serve(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer wg.Done()
		url := "http://" + ln.Addr().String() + "/metrics"
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}()
	return func() {
		cancel()
		_ = srv.Close()
		wg.Wait()
	}, nil
}

// checkMetrics checks that the exporter of a W1m measurement counted
// every run it executed: n completed runs of seq3, 3n completed steps.
func (m *measurement) checkMetrics(n int) error {
	// The run counts fail now (their backend is closed); Gather still
	// returns every other family.
	fams, _ := m.exporter.Registry().Gather()
	count := func(family, status string) uint64 {
		var c uint64
		for _, f := range fams {
			if f.GetName() != family {
				continue
			}
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "status" && l.GetValue() == status {
						c += s.GetHistogram().GetSampleCount()
					}
				}
			}
		}
		return c
	}
	runs, steps := count("openworkflow_run_duration_seconds", "completed"), count("openworkflow_step_duration_seconds", "completed")
	if runs != uint64(n) || steps != uint64(3*n) {
		return fmt.Errorf("the metrics counted %d completed runs and %d steps; the bench verified %d and %d", runs, steps, n, 3*n)
	}
	return nil
}

// startMany starts runs 0…n−1 of wf in batches of startBatch.
func startMany(ctx context.Context, b backend.Backend, wf *ow.Workflow[Input, Output], n int, p *progress) error {
	c := ow.NewClient(b)
	for lo := 0; lo < n; lo += startBatch {
		hi := min(lo+startBatch, n)
		in := make([]Input, 0, hi-lo)
		for i := lo; i < hi; i++ {
			in = append(in, Input{I: i})
		}
		if _, err := wf.StartMany(ctx, c, in); err != nil {
			return err
		}
		p.update(hi, n, "runs started")
	}
	return nil
}

// startFair enqueues W1f: n runs of bench-seq3 in batches of startBatch,
// run i under fairness key tenant-<i mod fairKeys>.
func startFair(ctx context.Context, b backend.Backend, n int) error {
	for lo := 0; lo < n; lo += startBatch {
		hi := min(lo+startBatch, n)
		ps := make([]backend.CreateWorkflowRunParams, 0, hi-lo)
		for i := lo; i < hi; i++ {
			ps = append(ps, backend.CreateWorkflowRunParams{WorkflowName: nameSeq3, Input: []byte(fmt.Sprintf(`{"i":%d}`, i)),
				Fairness: &backend.Fairness{Key: fmt.Sprintf("tenant-%d", i%fairKeys)}})
		}
		if _, err := b.CreateWorkflowRuns(ctx, ps); err != nil {
			return err
		}
	}
	return nil
}

// startKeyed enqueues W1k: stores bench-keyed's limits (before its runs,
// so that they wait for admission; the worker would store the same), then
// starts n runs in batches of startBatch, run i with concurrency key
// key-<i mod keyedKeys>.
func startKeyed(ctx context.Context, b backend.Backend, n int) error {
	ls, ok := b.(backend.LimitStore)
	if !ok {
		return fmt.Errorf("the %T backend stores no limits", b)
	}
	if _, err := ls.PutWorkflowLimits(ctx, nameKeyed, keyed.Spec().Limits.Stored()); err != nil {
		return err
	}
	for lo := 0; lo < n; lo += startBatch {
		hi := min(lo+startBatch, n)
		ps := make([]backend.CreateWorkflowRunParams, 0, hi-lo)
		for i := lo; i < hi; i++ {
			key := fmt.Sprintf("key-%d", i%keyedKeys)
			ps = append(ps, backend.CreateWorkflowRunParams{WorkflowName: nameKeyed, Input: []byte(fmt.Sprintf(`{"i":%d}`, i)), ConcurrencyKey: &key})
		}
		if _, err := b.CreateWorkflowRuns(ctx, ps); err != nil {
			return err
		}
	}
	return nil
}

// verify lists every run of the target and checks that they are the n
// runs of name with the right outputs (see [verify]); inspect, if not
// nil, then reads the runs.
func (m *measurement) verify(ctx context.Context, name string, n, steps int, inspect func([]backend.WorkflowRun)) error {
	b, err := m.t.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	runs, err := listRuns(ctx, b)
	if err != nil {
		return err
	}
	if err := verify(runs, name, n, steps); err != nil {
		return err
	}
	if inspect != nil {
		inspect(runs)
	}
	return nil
}
