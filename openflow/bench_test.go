package openflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// noopScripts are near no-op scripts per runner language: each returns
// its argument x.
var noopScripts = map[string]string{
	"bash":    `x="$1"` + "\necho \"$x\"",
	"python3": "def main(x):\n    return x",
	"bun":     "export function main(x) { return x }",
	"deno":    "export function main(x) { return x }",
}

// sequentialFlow is n script modules in sequence, each passing the
// previous result on through a javascript transform.
func sequentialFlow(lang string, n int) []byte {
	mods := make([]map[string]any, n)
	for i := range mods {
		expr := "previous_result.x"
		if i > 0 {
			expr = fmt.Sprintf("results.m%d", i-1)
		}
		mods[i] = map[string]any{"id": fmt.Sprintf("m%d", i), "value": map[string]any{
			"type": "rawscript", "language": lang, "content": noopScripts[lang],
			"input_transforms": map[string]any{"x": map[string]any{"type": "javascript", "expr": expr}},
		}}
	}
	return mustMarshal(map[string]any{"summary": "bench", "value": map[string]any{"modules": mods}})
}

// expressionFlow is n identity modules; with exprs, each also evaluates
// a skip_if (on the previous module's result) and a stop_after_if.
func expressionFlow(n int, exprs bool) []byte {
	mods := make([]map[string]any, n)
	for i := range mods {
		m := map[string]any{"id": fmt.Sprintf("m%d", i), "value": map[string]any{"type": "identity"}}
		if exprs {
			prev := "flow_input"
			if i > 0 {
				prev = fmt.Sprintf("results.m%d", i-1)
			}
			m["skip_if"] = map[string]any{"expr": prev + ".x === 'never'"}
			m["stop_after_if"] = map[string]any{"expr": "result.x < 0"}
		}
		mods[i] = m
	}
	return mustMarshal(map[string]any{"summary": "bench", "value": map[string]any{"modules": mods}})
}

// runTiming is one benchmark run's figures.
type runTiming struct {
	flow    time.Duration // the run's started → finished (worker time)
	e2e     time.Duration // Start called → Wait returned
	process time.Duration // Σ the scripts' process wall times
}

// timeRun runs doc once and returns its figures; the flow must succeed.
func timeRun(b *testing.B, env *flowEnv, doc []byte) runTiming {
	t0 := time.Now()
	runID := env.start(doc, `{"x": 1}`)
	res := env.wait(runID)
	e2e := time.Since(t0)
	if !res.Success {
		b.Fatalf("run failed: %s", res.Result)
	}
	run, err := env.client.GetRun(env.ctx, runID)
	if err != nil || run.StartedAt == nil || run.FinishedAt == nil {
		b.Fatalf("run %s: %v", runID, err)
	}
	rt := runTiming{flow: run.FinishedAt.Sub(*run.StartedAt), e2e: e2e}
	for _, s := range env.steps(runID) {
		var rec struct {
			ProcessMS float64 `json:"process_ms"`
		}
		if json.Unmarshal(s.Output, &rec) == nil {
			rt.process += time.Duration(rec.ProcessMS * float64(time.Millisecond))
		}
	}
	return rt
}

func median(ds []float64) float64 {
	s := append([]float64(nil), ds...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkSequentialModules runs a flow of 40 near no-op script modules
// per runner language and backend. Metrics (medians over the runs):
// overhead_ms/module = (flow time − the scripts' process time) / 40, the
// orchestration's own cost; ms/module = flow time / 40, process start
// included; process_ms/module = the scripts' process wall time.
func BenchmarkSequentialModules(b *testing.B) {
	const n = 40
	for _, kind := range backends {
		for _, lang := range []string{"bash", "python3", "bun", "deno"} {
			b.Run(kind+"/"+lang, func(b *testing.B) {
				doc := sequentialFlow(lang, n)
				requireRunners(b, mustParseB(b, doc))
				env := startEnv(b, kind)
				timeRun(b, env, doc) // warm up: runner lookup, caches
				var overhead, perModule, process, e2e []float64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					rt := timeRun(b, env, doc)
					overhead = append(overhead, ms(rt.flow-rt.process)/n)
					perModule = append(perModule, ms(rt.flow)/n)
					process = append(process, ms(rt.process)/n)
					e2e = append(e2e, ms(rt.e2e))
				}
				b.ReportMetric(median(overhead), "overhead_ms/module")
				b.ReportMetric(median(perModule), "ms/module")
				b.ReportMetric(median(process), "process_ms/module")
				b.ReportMetric(median(e2e), "e2e_ms/flow")
			})
		}
	}
}

// BenchmarkExpressionModules runs a flow of 100 identity modules, bare or
// each with a skip_if and a stop_after_if expression. Metric: the median
// flow time (the run's started → finished) and end to end (start → result
// read).
func BenchmarkExpressionModules(b *testing.B) {
	const n = 100
	for _, kind := range backends {
		for _, variant := range []string{"identity", "expressions"} {
			b.Run(kind+"/"+variant, func(b *testing.B) {
				doc := expressionFlow(n, variant == "expressions")
				env := startEnv(b, kind)
				timeRun(b, env, doc)
				var flow, e2e []float64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					rt := timeRun(b, env, doc)
					flow = append(flow, ms(rt.flow))
					e2e = append(e2e, ms(rt.e2e))
				}
				b.ReportMetric(median(flow), "ms/flow")
				b.ReportMetric(median(e2e), "e2e_ms/flow")
			})
		}
	}
}

// BenchmarkRunnerProcess is one script run per language outside any
// flow: the process start and the wrapper, for comparison with the
// per-module figures above.
func BenchmarkRunnerProcess(b *testing.B) {
	for _, lang := range []string{"bash", "python3", "bun", "deno"} {
		b.Run(lang, func(b *testing.B) {
			doc := sequentialFlow(lang, 1)
			requireRunners(b, mustParseB(b, doc))
			env := startEnv(b, "sqlite")
			timeRun(b, env, doc)
			var process []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				process = append(process, ms(timeRun(b, env, doc).process))
			}
			b.ReportMetric(median(process), "process_ms")
		})
	}
}

func mustParseB(b *testing.B, doc []byte) *openflow.Flow {
	f, err := openflow.Parse(doc)
	if err != nil {
		b.Fatal(strings.TrimSpace(err.Error()))
	}
	return f
}

// BenchmarkCoreSteps is the baseline of the figures above: a Go workflow
// of 100 sequential no-op ow.Run steps on the same worker set-up, so the
// interpreter's own share shows as a ratio measured in the same run.
func BenchmarkCoreSteps(b *testing.B) {
	const n = 100
	wf := ow.Define(ow.Spec{Name: "bench-core-steps"}, func(ctx ow.Context, _ struct{}) (int, error) {
		sum := 0
		for i := 0; i < n; i++ {
			v, err := ow.Run(ctx, fmt.Sprintf("s%d", i), func(context.Context) (int, error) { return 1, nil })
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	for _, kind := range backends {
		b.Run(kind, func(b *testing.B) {
			bk := newBackend(b, kind)
			w := ow.NewWorker(bk, ow.WorkerOptions{Concurrency: 4, MaxPollInterval: 200 * time.Millisecond, Logger: quietLogger(), OnlyRegistered: true})
			if err := w.Register(wf); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if err := w.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = w.Stop(context.Background()) }()
			c := ow.NewClient(bk)
			var flow []float64
			for i := 0; i <= b.N; i++ { // the first run warms up
				h, err := wf.Start(ctx, c, struct{}{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.Result(ctx); err != nil {
					b.Fatal(err)
				}
				run, err := c.GetRun(ctx, h.ID)
				if err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					flow = append(flow, ms(run.FinishedAt.Sub(*run.StartedAt)))
				}
			}
			b.ReportMetric(median(flow), "ms/flow")
		})
	}
}
