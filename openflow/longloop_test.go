package openflow_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// longForFlow is a forloop over flow_input.n items (2·index each) whose
// body is one identity module a (its result is the iteration's
// flow_input: {"n", "iter": {index, value}}), then a module after that
// reads results.a, which after the loop is the last iteration's. loopExtra
// is merged into the loop module (stop_after_if…), valueExtra into its
// value (parallel…).
func longForFlow(loopExtra, valueExtra map[string]any) []byte {
	value := map[string]any{"type": "forloopflow",
		"iterator": map[string]any{"type": "javascript", "expr": "Array.from({length: flow_input.n}, (_, i) => 2 * i)"},
		"modules":  []any{map[string]any{"id": "a", "value": map[string]any{"type": "identity"}}}}
	for k, v := range valueExtra {
		value[k] = v
	}
	loop := map[string]any{"id": "l", "value": value}
	for k, v := range loopExtra {
		loop[k] = v
	}
	return mustMarshal(map[string]any{"summary": "long forloop", "value": map[string]any{"modules": []any{loop, lastA}}})
}

// lastA is a forloop over [results.a.iter.index], so the flow's result
// holds the index of the loop's last iteration: [{"iter": {"index": 0,
// "value": <that index>}}].
var lastA = map[string]any{"id": "after", "value": map[string]any{"type": "forloopflow",
	"iterator": map[string]any{"type": "javascript", "expr": "[results.a.iter.index]"},
	"modules":  []any{map[string]any{"id": "b", "value": map[string]any{"type": "identity"}}}}}

// longWhileFlow is a while loop whose body is the identity a; the loop's
// stop_after_if ends it after flow_input.n iterations.
func longWhileFlow() []byte {
	loop := map[string]any{"id": "l", "stop_after_if": map[string]any{"expr": "result.iter.index >= flow_input.n - 1"},
		"value": map[string]any{"type": "whileloopflow",
			"modules": []any{map[string]any{"id": "a", "value": map[string]any{"type": "identity"}}}}}
	return mustMarshal(map[string]any{"summary": "long while", "value": map[string]any{"modules": []any{loop, lastA}}})
}

// loopResult is what a loop run's steps say: the loop's own result
// (module l's, recorded by the after loop's @pre input? no: read from the
// run's output) is checked through the flow's output.
type iterResult struct {
	N    int `json:"n"`
	Iter struct {
		Index int `json:"index"`
		Value int `json:"value"`
	} `json:"iter"`
}

// checkLoop checks a long loop's run: it succeeded, results.a after the
// loop was the iteration last, and the loop's array (the input of the
// after loop's iterator: read from step l's successor, the flow's
// output is after's array) is checked by checkArray.
func checkLast(t *testing.T, res *openflow.Result, last int) {
	t.Helper()
	if !res.Success {
		t.Fatalf("the flow failed: %s", truncate(string(res.Result), 2000))
	}
	var out []iterResult
	if err := json.Unmarshal(res.Result, &out); err != nil || len(out) != 1 || out[0].Iter.Value != last {
		t.Fatalf("result %s (%v), want results.a after the loop from iteration %d", truncate(string(res.Result), 500), err, last)
	}
}

// loopArray returns the array result of module l of run runID: a
// module's result is recorded in its step (the loop's @post is not
// recorded without stop_after_all_iters_if), so the flows above end
// with the after loop and l's array is checked through a second flow
// with l last.
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
		if r.Iter.Index != i || r.Iter.Value != value(i) {
			t.Fatalf("result %d is %+v, want iter {index: %d, value: %d}", i, r, i, value(i))
		}
	}
}

// withoutAfter drops the after module, so the flow's result is the loop's
// array.
func withoutAfter(doc []byte) []byte {
	var f map[string]any
	if err := json.Unmarshal(doc, &f); err != nil {
		panic(err)
	}
	v := f["value"].(map[string]any)
	v["modules"] = v["modules"].([]any)[:1]
	return mustMarshal(f)
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
// middle of a chunk, and a while loop; each gives Windmill's result.
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
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					args := fmt.Sprintf(`{"n": %d}`, n)
					id := env.start(c.doc, args)
					checkLast(t, env.wait(id), c.results-1)
					if chunks, all := chunkSteps(env, id); chunks == 0 || all >= ow.StepLimit {
						t.Errorf("the run has %d steps, %d of them chunks: want the loop in chunk runs", all, chunks)
					}
					res := env.run(withoutAfter(c.doc), args)
					if !res.Success {
						t.Fatalf("the flow failed: %s", truncate(string(res.Result), 2000))
					}
					checkArray(t, res.Result, c.results, c.value)
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
			for _, parallel := range []bool{false, true} {
				t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
					var f map[string]any
					_ = json.Unmarshal(withoutAfter(longForFlow(nil, map[string]any{"parallel": parallel})), &f)
					f["value"].(map[string]any)["modules"].([]any)[0].(map[string]any)["value"].(map[string]any)["modules"] = []any{fail}
					res := env.run(mustMarshal(f), fmt.Sprintf(`{"n": %d}`, n))
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

// TestVeryLongLoop runs a forloop over 100,000 trivial items and a while
// loop of 10,000 iterations, on SQLite (skipped with -short).
func TestVeryLongLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	env := startEnv(t, "sqlite")
	t0 := time.Now()
	res := env.run(withoutAfter(longForFlow(nil, nil)), `{"n": 100000}`)
	if !res.Success {
		t.Fatalf("the forloop failed: %s", truncate(string(res.Result), 2000))
	}
	checkArray(t, res.Result, 100000, func(i int) int { return 2 * i })
	t.Logf("forloop over 100,000 items: %v", time.Since(t0))
	t0 = time.Now()
	res = env.run(withoutAfter(longWhileFlow()), `{"n": 10000}`)
	if !res.Success {
		t.Fatalf("the while loop failed: %s", truncate(string(res.Result), 2000))
	}
	checkArray(t, res.Result, 10000, func(i int) int { return i })
	t.Logf("while loop of 10,000 iterations: %v", time.Since(t0))
}
