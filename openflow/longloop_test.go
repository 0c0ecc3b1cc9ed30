package openflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// longForFlow is a forloop l over flow_input.n items (2·index each)
// whose body is one identity module a (its result is the iteration's
// flow_input: {"n", "iter": {index, value}}). loopExtra is merged into
// the loop module (stop_after_if…), valueExtra into its value
// (parallel…), and body replaces a when given.
func longForFlow(loopExtra, valueExtra map[string]any, body ...any) []byte {
	if body == nil {
		body = []any{map[string]any{"id": "a", "value": map[string]any{"type": "identity"}}}
	}
	value := map[string]any{"type": "forloopflow",
		"iterator": map[string]any{"type": "javascript", "expr": "Array.from({length: flow_input.n}, (_, i) => 2 * i)"},
		"modules":  body}
	for k, v := range valueExtra {
		value[k] = v
	}
	loop := map[string]any{"id": "l", "value": value}
	for k, v := range loopExtra {
		loop[k] = v
	}
	return mustMarshal(map[string]any{"summary": "long forloop", "value": map[string]any{"modules": []any{loop}}})
}

// longWhileFlow is a while loop l whose body is the identity a; the
// loop's stop_after_if ends it after flow_input.n iterations.
func longWhileFlow() []byte {
	loop := map[string]any{"id": "l", "stop_after_if": map[string]any{"expr": "result.iter.index >= flow_input.n - 1"},
		"value": map[string]any{"type": "whileloopflow",
			"modules": []any{map[string]any{"id": "a", "value": map[string]any{"type": "identity"}}}}}
	return mustMarshal(map[string]any{"summary": "long while", "value": map[string]any{"modules": []any{loop}}})
}

// withAfter appends a module after the loop whose result shows the
// loop's array and what results.a is after the loop (the last
// iteration's result, as in Windmill): a forloop over [results.l,
// results.a] with an identity body, so the flow's result is
// [{"iter": {"index": 0, "value": <l's array>}}, {"iter": {"index": 1,
// "value": <results.a>}}] (with n).
func withAfter(doc []byte) []byte {
	var f map[string]any
	if err := json.Unmarshal(doc, &f); err != nil {
		panic(err)
	}
	after := map[string]any{"id": "after", "value": map[string]any{"type": "forloopflow",
		"iterator": map[string]any{"type": "javascript", "expr": "[results.l, results.a]"},
		"modules":  []any{map[string]any{"id": "b", "value": map[string]any{"type": "identity"}}}}}
	v := f["value"].(map[string]any)
	v["modules"] = append(v["modules"].([]any), after)
	return mustMarshal(f)
}

// iterResult is the result of an identity module in a loop body: the
// iteration's flow_input.
type iterResult struct {
	N    int `json:"n"`
	Iter struct {
		Index int             `json:"index"`
		Value json.RawMessage `json:"value"`
	} `json:"iter"`
}

// checkArray checks a loop's array of identity results: n of them, the
// i-th with iter {index: i, value: value(i)}.
func checkArray(t *testing.T, raw json.RawMessage, n int, value func(i int) int) {
	t.Helper()
	var got []iterResult
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("decode the loop's array: %v (%s)", err, truncate(string(raw), 300))
	}
	if len(got) != n {
		t.Fatalf("the loop's array has %d results, want %d", len(got), n)
	}
	for i, r := range got {
		if r.Iter.Index != i || string(r.Iter.Value) != fmt.Sprint(value(i)) {
			t.Fatalf("result %d is %+v, want iter {index: %d, value: %d}", i, r, i, value(i))
		}
	}
}

// chunkSteps counts the steps of run runID that ran loop chunks as child
// runs, and all its steps.
func chunkSteps(env *flowEnv, runID string) (chunks, all int) {
	for _, s := range env.steps(runID) {
		all++
		if strings.Contains(s.StepName, "@chunk[") {
			chunks++
		}
	}
	return chunks, all
}

// TestLongLoop runs loops of 1,200 iterations, more than a run's 1,000
// steps: a sequential and a parallel forloop, one broken by a stop in the
// middle of a chunk, and a while loop; each gives Windmill's result, and
// results.a after the loop is its last iteration's.
func TestLongLoop(t *testing.T) {
	const n = 1200
	double := func(i int) int { return 2 * i }
	index := func(i int) int { return i }
	cases := []struct {
		name    string
		doc     []byte
		results int // the loop's array's length
		value   func(int) int
	}{
		{"forloop", longForFlow(nil, nil), n, double},
		{"parallel forloop", longForFlow(nil, map[string]any{"parallel": true, "parallelism": map[string]any{"type": "static", "value": 3}}), n, double},
		{"parallel forloop, no parallelism", longForFlow(nil, map[string]any{"parallel": true}), n, double},
		{"forloop broken at 1000", longForFlow(map[string]any{"stop_after_if": map[string]any{"expr": "result.iter.index === 1000"}}, nil), 1001, double},
		{"while loop", longWhileFlow(), n, index},
	}
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			ids := make([]string, len(cases))
			for i, c := range cases { // all at once: the worker runs 4 runs at a time
				ids[i] = env.start(withAfter(c.doc), fmt.Sprintf(`{"n": %d}`, n))
			}
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					res := env.wait(ids[i])
					if !res.Success {
						t.Fatalf("the flow failed: %s", truncate(string(res.Result), 2000))
					}
					var out []iterResult
					if err := json.Unmarshal(res.Result, &out); err != nil || len(out) != 2 {
						t.Fatalf("result %s: %v", truncate(string(res.Result), 300), err)
					}
					checkArray(t, out[0].Iter.Value, c.results, c.value)
					var last iterResult
					if err := json.Unmarshal(out[1].Iter.Value, &last); err != nil || last.Iter.Index != c.results-1 {
						t.Errorf("results.a after the loop is %s, want iteration %d's", out[1].Iter.Value, c.results-1)
					}
					if chunks, all := chunkSteps(env, ids[i]); chunks == 0 || all >= ow.StepLimit {
						t.Errorf("the run has %d steps, %d of them chunks: want the loop in chunk runs", all, chunks)
					}
					// Watch (ow flow run's progress) reports the iterations
					// run in chunk runs too
					seen := map[string]int{}
					if err := openflow.Watch(env.ctx, env.client, ids[i], func(ev openflow.Event) {
						if strings.HasPrefix(ev.Module, "l[") && strings.HasSuffix(ev.Module, "]/a") && ev.Status == "success" {
							seen[ev.Module]++
						}
					}); err != nil {
						t.Fatal(err)
					}
					for j := 0; j < c.results; j++ {
						if k := fmt.Sprintf("l[%d]/a", j); seen[k] != 1 {
							t.Fatalf("Watch reported %s %d times, want once (%d modules reported)", k, seen[k], len(seen))
						}
					}
				})
			}
		})
	}
}

// TestLongLoopFailure: a failed iteration in a chunk run ends a
// sequential loop there, and the flow fails with the results so far; a
// parallel loop runs every iteration and fails with all of them.
func TestLongLoopFailure(t *testing.T) {
	const n = 1200
	fail := map[string]any{"id": "a", "value": map[string]any{"type": "identity"},
		"stop_after_if": map[string]any{"expr": "result.iter.index === 700", "error_message": "boom"}}
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			ids := map[bool]string{}
			for _, parallel := range []bool{false, true} {
				ids[parallel] = env.start(longForFlow(nil, map[string]any{"parallel": parallel}, fail), fmt.Sprintf(`{"n": %d}`, n))
			}
			for _, parallel := range []bool{false, true} {
				t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
					res := env.wait(ids[parallel])
					if res.Success {
						t.Fatalf("the flow succeeded: %s", truncate(string(res.Result), 300))
					}
					var items []json.RawMessage
					if err := json.Unmarshal(res.Result, &items); err != nil {
						t.Fatalf("result %s: %v", truncate(string(res.Result), 300), err)
					}
					want := 701
					if parallel {
						want = n
					}
					if len(items) != want || !strings.Contains(string(items[700]), "boom") {
						t.Fatalf("%d results, the 701st %s; want %d, the 701st an error", len(items), truncate(string(items[min(700, len(items)-1)]), 200), want)
					}
				})
			}
		})
	}
}

// TestVeryLongLoop runs a while loop of 10,000 iterations (20,000 steps:
// each iteration's module and its stop_after_if) on SQLite; skipped with
// -short. The forloop over 100,000 items is TestLongLoopCrash's.
func TestVeryLongLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	env := startEnvFor(t, "sqlite", 10*time.Minute)
	t0 := time.Now()
	res := env.run(longWhileFlow(), `{"n": 10000}`)
	if !res.Success {
		t.Fatalf("the while loop failed: %s", truncate(string(res.Result), 2000))
	}
	checkArray(t, res.Result, 10000, func(i int) int { return i })
	t.Logf("while loop of 10,000 iterations: %v", time.Since(t0))
}

// crashLoopFlow is a forloop over flow_input.n items whose body is one
// bash module, skipped (skip_if) but at every index multiple of every,
// where it appends the index to the file flow_input.log.
func crashLoopFlow(every int) []byte {
	mark := map[string]any{"id": "mark", "skip_if": map[string]any{"expr": fmt.Sprintf("flow_input.iter.index %% %d !== 0", every)},
		"value": map[string]any{"type": "rawscript", "language": "bash",
			"content": "i=\"$1\"\nlog=\"$2\"\necho \"$i\" >> \"$log\"\necho \"$i\"",
			"input_transforms": map[string]any{
				"i":   map[string]any{"type": "javascript", "expr": "flow_input.iter.index"},
				"log": map[string]any{"type": "javascript", "expr": "flow_input.log"}}}}
	loop := map[string]any{"id": "l", "value": map[string]any{"type": "forloopflow",
		"iterator": map[string]any{"type": "javascript", "expr": "Array.from({length: flow_input.n}, (_, i) => i)"},
		"modules":  []any{mark}}}
	return mustMarshal(map[string]any{"summary": "a long loop, its worker killed", "value": map[string]any{"modules": []any{loop}},
		"schema": map[string]any{"type": "object", "properties": map[string]any{"log": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"}}}})
}

// TestLongLoopCrash kills a worker process (kill -9) during a forloop
// over 100,000 items on SQLite (5,000 on PostgreSQL), about a third of
// the way through; another worker process finishes the run. Every
// iteration's step completed exactly once over all the loop's chunk
// runs, and the 100 that ran a bash script wrote their index once each
// (the one that may have been executing when the worker died may have
// written it twice). Skipped with -short. With the race detector the
// SQLite loop has 10,000 items: 100,000 would take about 13 minutes on
// two cores.
func TestLongLoopCrash(t *testing.T) {
	if os.Getenv(crashWorkerEnv) != "" {
		t.Skip("inside a worker process")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	long := 100_000
	if raceEnabled {
		long = 10_000
	}
	for kind, n := range map[string]int{"sqlite": long, "postgres": 5_000} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			longLoopCrash(t, kind, n)
		})
	}
}

func longLoopCrash(t *testing.T, kind string, n int) {
	every := n / 100
	cfg, b := crashBackend(t, kind)
	cfg.WorkDir = t.TempDir()
	client := ow.NewClient(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	log := filepath.Join(t.TempDir(), "executions.log")
	f, err := openflow.Parse(crashLoopFlow(every))
	if err != nil {
		t.Fatal(err)
	}
	first := startWorkerProcess(t, cfg)
	h, err := openflow.New(openflow.Options{}).Start(ctx, client, f, mustMarshal(map[string]any{"log": log, "n": n}), "crash")
	if err != nil {
		t.Fatal(err)
	}
	lines := func() []string { return strings.Fields(readFile(log)) }
	waitFor(ctx, t, "a third of the iterations", func() bool { return len(lines()) >= 31 })
	if err := first.Process.Kill(); err != nil { // SIGKILL: kill -9
		t.Fatal(err)
	}
	_ = first.Wait()
	atKill := lines()

	startWorkerProcess(t, cfg)
	res, err := openflow.Wait(ctx, client, h.ID)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if !res.Success {
		t.Fatalf("the flow failed: %s", truncate(string(res.Result), 2000))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(res.Result, &items); err != nil || len(items) != n {
		t.Fatalf("%d results (%v), want %d", len(items), err, n)
	}
	for i := range items {
		var it iterResult
		want := fmt.Sprintf("%q", fmt.Sprint(i)) // bash's stdout, a string
		if i%every != 0 {
			if err := json.Unmarshal(items[i], &it); err != nil || it.Iter.Index != i || string(it.Iter.Value) != fmt.Sprint(i) {
				t.Fatalf("result %d is %s, want the iteration's flow_input (a skipped module)", i, items[i])
			}
		} else if strings.TrimSpace(string(items[i])) != want {
			t.Fatalf("result %d is %s, want %s", i, items[i], want)
		}
	}

	// the bash executions: each multiple of every once, but the last one
	// before the kill may have run twice
	counts := map[string]int{}
	for _, l := range lines() {
		counts[l]++
	}
	for i := 0; i < n; i += every {
		c := counts[fmt.Sprint(i)]
		if c == 1 || c == 2 && fmt.Sprint(i) == atKill[len(atKill)-1] {
			continue
		}
		t.Errorf("the bash module of iteration %d ran %d times", i, c)
	}
	if len(counts) != n/every {
		t.Errorf("%d distinct indexes were written, want %d", len(counts), n/every)
	}

	// the steps: over the flow's run and every chunk run, each
	// iteration's module completed once
	completed := make([]int, n)
	runs := []string{h.ID}
	chunkRuns := 0
	for len(runs) > 0 {
		id := runs[0]
		runs = runs[1:]
		steps, err := openflow.RunSteps(ctx, client, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			if s.ChildWorkflowRunID != nil {
				runs = append(runs, *s.ChildWorkflowRunID)
				chunkRuns++
			}
			var i int
			if _, err := fmt.Sscanf(s.StepName, "l[%d]/mark", &i); err == nil && s.Status.Normalize() == "completed" {
				completed[i]++
			}
		}
	}
	for i, c := range completed {
		if c != 1 {
			t.Fatalf("iteration %d's module completed %d times over the runs", i, c)
		}
	}
	t.Logf("%d chunk runs; bash executions at the kill: %d", chunkRuns, len(atKill))
}

// BenchmarkLoopIterations measures a forloop's cost per iteration: a loop
// of 100 identity iterations (run in the flow's run) against one of
// 100,000 (in chunk runs), on SQLite. Metrics: ms/iter, the flow run's
// execution time per iteration (median over b.N flows); allocs/iter and
// B/iter, the process's allocations per iteration (worker and backend
// included); peak-heap-MB, the largest heap in use seen while the flows
// ran (sampled every 10 ms). Run it with -benchtime 1x for the long loop:
//
//	go test -run '^$' -bench LoopIterations -benchtime 3x ./openflow
func BenchmarkLoopIterations(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			env := startEnvFor(b, "sqlite", 30*time.Minute)
			doc := longForFlow(nil, nil)
			args := fmt.Sprintf(`{"n": %d}`, n)
			env.run(doc, `{"n": 10}`) // warm up
			runtime.GC()
			stop, peak := samplePeakHeap()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var perIter []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := env.start(doc, args)
				res := env.wait(id)
				if !res.Success {
					b.Fatalf("the flow failed: %s", truncate(string(res.Result), 500))
				}
				run, err := env.client.GetRun(env.ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				perIter = append(perIter, ms(run.FinishedAt.Sub(*run.StartedAt))/float64(n))
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			stop()
			iters := float64(n * b.N)
			b.ReportMetric(median(perIter), "ms/iter")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/iters, "allocs/iter")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/iters, "B/iter")
			b.ReportMetric(float64(*peak)/(1<<20), "peak-heap-MB")
		})
	}
}

// samplePeakHeap samples the heap in use every 10 ms until stop is
// called; *peak is the largest seen (read it after stop).
func samplePeakHeap() (stop func(), peak *uint64) {
	peak = new(uint64)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(sample)
			*peak = max(*peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-finished }, peak
}

// TestLongLoopChunkSeesResults: a body estimated at more steps than a
// run should hold in one go (a nested loop: about 300) runs each
// iteration of a three-item loop but the first in a chunk run, which
// sees the earlier module results the body names (results.tagger) and
// is not given those it does not name (big).
func TestLongLoopChunkSeesResults(t *testing.T) {
	inner := map[string]any{"id": "inner", "value": map[string]any{"type": "forloopflow",
		"iterator": map[string]any{"type": "javascript", "expr": "[results.tagger.tag + flow_input.iter.value]"},
		"modules":  []any{map[string]any{"id": "b", "value": map[string]any{"type": "identity"}}}}}
	loop := map[string]any{"id": "l", "value": map[string]any{"type": "forloopflow",
		"iterator": map[string]any{"type": "static", "value": []int{1, 2, 3}},
		"modules":  []any{inner}}}
	doc := mustMarshal(map[string]any{"summary": "a loop of big iterations", "value": map[string]any{"modules": []any{
		map[string]any{"id": "big", "value": map[string]any{"type": "identity"}},
		map[string]any{"id": "tagger", "value": map[string]any{"type": "identity"}},
		loop}}})
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			id := env.start(doc, `{"tag": "T"}`)
			res := env.wait(id)
			if !res.Success {
				t.Fatalf("the flow failed: %s", res.Result)
			}
			var got [][]iterResult
			if err := json.Unmarshal(res.Result, &got); err != nil || len(got) != 3 {
				t.Fatalf("result %s: %v", res.Result, err)
			}
			for i, r := range got {
				if len(r) != 1 || string(r[0].Iter.Value) != fmt.Sprintf(`"T%d"`, i+1) {
					t.Errorf("iteration %d's inner loop gave %s, want one iteration over \"T%d\"", i, mustMarshal(r), i+1)
				}
			}
			chunks := 0
			for _, s := range env.steps(id) {
				if s.ChildWorkflowRunID == nil {
					continue
				}
				chunks++
				run, err := env.client.GetRun(env.ctx, *s.ChildWorkflowRunID)
				if err != nil {
					t.Fatal(err)
				}
				var in struct {
					Results []struct {
						ID string `json:"id"`
					} `json:"results"`
				}
				if err := json.Unmarshal(run.Input, &in); err != nil || len(in.Results) != 1 || in.Results[0].ID != "tagger" {
					t.Errorf("chunk %s's input: %s (%v); want the results of tagger only", s.StepName, run.Input, err)
				}
			}
			if chunks != 2 {
				t.Errorf("%d chunk runs, want 2 (iterations 1 and 2)", chunks)
			}
		})
	}
}
