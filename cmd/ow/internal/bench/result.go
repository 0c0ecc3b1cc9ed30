package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Engines a [Result] can be about.
const (
	EngineGo = "go"
	EngineTS = "ts" // the TypeScript OpenWorkflow
)

// Metric names: the JSON keys of [Result.Metrics], in report order.
const (
	MetricRunsPerS       = "runs_per_s"       // completed runs per second (W0: started)
	MetricStepsPerS      = "steps_per_s"      // step attempts recorded per second
	MetricStartsPerS     = "starts_per_s"     // runs started per second (W0, W0b)
	MetricCommitsPerStep = "commits_per_step" // PostgreSQL commits in the bench database per step
	MetricCommitsPerRun  = "commits_per_run"  // the same per run (W0, W0b: per start)
	MetricCPUPerRun      = "cpu_us_per_run"   // CPU time of the bench process (its worker, its polling) per run, in µs (W1, W1m, W3)
	MetricP50            = "p50_ms"           // W2 start-to-result latency
	MetricP95            = "p95_ms"
	MetricP99            = "p99_ms"
	MetricLatenessP50    = "lateness_p50_ms" // W4: finish − start − 2 s
	MetricLatenessP99    = "lateness_p99_ms"
	MetricTickP50        = "tick_p50_ms" // S1: a run's created_at − its tick
	MetricTickP99        = "tick_p99_ms"
	MetricTickMax        = "tick_max_ms"
	MetricTickStartP99   = "tick_start_p99_ms" // S1: a run's started_at (first claim) − its tick
	MetricSpeedup        = "speedup"           // W5: runs/s ÷ runs/s of 1 worker process; W1m: runs/s ÷ W1's
	MetricTPS            = "tps"               // L0: pgbench transactions per second
	MetricSeconds        = "seconds"           // the measured phase
)

// metricOrder is the order metrics are printed in.
var metricOrder = []string{
	MetricRunsPerS, MetricStepsPerS, MetricStartsPerS, MetricCommitsPerStep, MetricCommitsPerRun, MetricCPUPerRun,
	MetricP50, MetricP95, MetricP99, MetricLatenessP50, MetricLatenessP99,
	MetricTickP50, MetricTickP99, MetricTickMax, MetricTickStartP99, MetricSpeedup, MetricTPS,
	MetricAloneRunsPerS, MetricSlowdown, MetricPrunedPerS, MetricSeconds,
}

// Result is one workload's figures on one backend, for one engine: one
// measurement, or the medians of Repeat measurements.
type Result struct {
	Engine   string
	Workload string
	Backend  string
	// Workers is the number of worker processes (W5), else 0.
	Workers     int
	Concurrency int
	// Runs and Steps are the runs measured and the step attempts they
	// recorded.
	Runs, Steps int
	// Repeat is how many measurements the metrics are the medians of.
	Repeat int
	// Metrics holds the metrics that apply to the workload, by name.
	Metrics map[string]float64
	// Skipped says why the workload was not measured ("" if it was).
	Skipped string
	// Error says why a measurement failed, e.g. a run with a wrong
	// output ("" if none did); its metrics are then left out.
	Error string
}

// key identifies what repeated measurements share.
func (r Result) key() string {
	return fmt.Sprintf("%s|%s|%s|%d|%d", r.Engine, r.Workload, r.Backend, r.Workers, r.Concurrency)
}

// Label is the workload with its worker processes, e.g. "W5 ×2".
func (r Result) Label() string {
	if r.Workers > 0 {
		return fmt.Sprintf("%s ×%d", r.Workload, r.Workers)
	}
	return r.Workload
}

// MarshalJSON writes the result as one flat object: engine, workload,
// backend, workers, concurrency, runs, steps, repeat, then the metrics
// that apply in report order, rounded, then skipped.
func (r Result) MarshalJSON() ([]byte, error) {
	var o object
	o.field("engine", r.Engine)
	o.field("workload", r.Workload)
	o.field("backend", r.Backend)
	if r.Workers > 0 {
		o.field("workers", r.Workers)
	}
	o.field("concurrency", r.Concurrency)
	o.field("runs", r.Runs)
	o.field("steps", r.Steps)
	o.field("repeat", r.Repeat)
	o.metrics(r.Metrics)
	if r.Skipped != "" {
		o.field("skipped", r.Skipped)
	}
	if r.Error != "" {
		o.field("error", r.Error)
	}
	return o.close(), nil
}

// object writes a JSON object's fields in the order they are given.
type object struct{ b bytes.Buffer }

func (o *object) field(k string, v any) {
	if o.b.Len() == 0 {
		o.b.WriteByte('{')
	} else {
		o.b.WriteByte(',')
	}
	kb, _ := json.Marshal(k)
	vb, _ := json.Marshal(v)
	o.b.Write(kb)
	o.b.WriteByte(':')
	o.b.Write(vb)
}

// metrics writes the metrics present, in report order, rounded.
func (o *object) metrics(ms map[string]float64) {
	for _, m := range metricOrder {
		if v, ok := ms[m]; ok {
			o.field(m, json.Number(formatFloat(v)))
		}
	}
}

func (o *object) close() []byte {
	if o.b.Len() == 0 {
		o.b.WriteByte('{')
	}
	o.b.WriteByte('}')
	return o.b.Bytes()
}

// UnmarshalJSON reads what MarshalJSON writes (and what tsbench prints):
// known fields by name, every other number as a metric.
func (r *Result) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*r = Result{Metrics: map[string]float64{}}
	str := map[string]*string{"engine": &r.Engine, "workload": &r.Workload, "backend": &r.Backend, "skipped": &r.Skipped, "error": &r.Error}
	num := map[string]*int{"workers": &r.Workers, "concurrency": &r.Concurrency, "runs": &r.Runs, "steps": &r.Steps, "repeat": &r.Repeat}
	for k, raw := range m {
		if p, ok := str[k]; ok {
			if err := json.Unmarshal(raw, p); err != nil {
				return fmt.Errorf("field %s: %w", k, err)
			}
			continue
		}
		if p, ok := num[k]; ok {
			if err := json.Unmarshal(raw, p); err != nil {
				return fmt.Errorf("field %s: %w", k, err)
			}
			continue
		}
		var f float64
		if json.Unmarshal(raw, &f) == nil {
			r.Metrics[k] = f
		}
	}
	return nil
}

// formatFloat rounds to 4 significant digits (at least 1 decimal place
// kept for values under 1000), e.g. 1234.5678 → 1235, 0.0123456 → 0.01235.
func formatFloat(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	digits := 4 - int(math.Floor(math.Log10(math.Abs(v)))) - 1
	digits = max(digits, 0)
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// aggregate folds repeated measurements (same engine, workload, backend
// and workers) into one result each holding the medians, in first-seen
// order, and sets the speed-ups of W5 (over 1 process) and W1m (over W1)
// from the medians.
func aggregate(rs []Result) []Result {
	var order []string
	groups := map[string][]Result{}
	for _, r := range rs {
		k := r.key()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Result, 0, len(order))
	for _, k := range order {
		g := groups[k]
		agg := g[0]
		agg.Metrics = map[string]float64{}
		agg.Repeat = 0
		vals := map[string][]float64{}
		for _, r := range g {
			if r.Error != "" && agg.Error == "" {
				agg.Error = r.Error
			}
			if r.Skipped != "" || r.Error != "" {
				continue
			}
			agg.Repeat++
			agg.Skipped = ""
			for m, v := range r.Metrics {
				vals[m] = append(vals[m], v)
			}
		}
		for m, vs := range vals {
			agg.Metrics[m] = median(vs)
		}
		out = append(out, agg)
	}
	for i, r := range out {
		if (r.Workers == 0 && r.Workload != W1m) || r.Skipped != "" || r.Error != "" {
			continue
		}
		delete(out[i].Metrics, MetricSpeedup)
		for _, base := range out {
			isBase := base.Workload == r.Workload && base.Workers == 1
			if r.Workload == W1m {
				isBase = base.Workload == W1 && base.Workers == 0
			}
			if isBase && base.Engine == r.Engine && base.Backend == r.Backend && base.Concurrency == r.Concurrency && base.Repeat > 0 {
				if b := base.Metrics[MetricRunsPerS]; b > 0 {
					out[i].Metrics[MetricSpeedup] = r.Metrics[MetricRunsPerS] / b
				}
			}
		}
	}
	return out
}

// Ratio is one workload's Go figures divided by the TypeScript ones.
type Ratio struct {
	Workload, Backend string
	Workers           int
	// Metrics holds Go ÷ TS for every metric both have (and TS's non-zero).
	Metrics map[string]float64
}

// ratios pairs Go and TS results by workload, backend and workers.
func ratios(goRs, tsRs []Result) []Ratio {
	var out []Ratio
	for _, g := range goRs {
		for _, t := range tsRs {
			if t.Workload != g.Workload || t.Backend != g.Backend || t.Workers != g.Workers || t.Repeat == 0 || g.Repeat == 0 {
				continue
			}
			r := Ratio{Workload: g.Workload, Backend: g.Backend, Workers: g.Workers, Metrics: map[string]float64{}}
			for m, gv := range g.Metrics {
				if m == MetricSeconds || m == MetricSpeedup {
					continue
				}
				if tv, ok := t.Metrics[m]; ok && tv != 0 {
					r.Metrics[m] = gv / tv
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// MarshalJSON writes the ratio as one flat object with engine "go/ts".
func (r Ratio) MarshalJSON() ([]byte, error) {
	var o object
	o.field("engine", "go/ts")
	o.field("workload", r.Workload)
	o.field("backend", r.Backend)
	if r.Workers > 0 {
		o.field("workers", r.Workers)
	}
	o.metrics(r.Metrics)
	return o.close(), nil
}
