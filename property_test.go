package openworkflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// A hostile step is what one step of a generated run returns: a value of
// one of these kinds, or an error of one of these kinds.
const (
	hostileValue         = iota // an ordinary JSON value, with NUL and emoji in its strings
	hostileSurrogate            // json.RawMessage with a lone surrogate escape
	hostileInvalidUTF8          // json.RawMessage with raw invalid UTF-8
	hostileHugeNumber           // json.RawMessage 1e1000000
	hostileBigInt               // *big.Int of 10^200000
	hostileDeep                 // 1,001 nested arrays
	hostileTypedNil             // a nil *codeError as the error
	hostileErrorPanics          // an error whose Unwrap panics
	hostileMarshalPanics        // a value whose MarshalJSON panics
	hostileNonRetryable         // NonRetryable(error)
	hostileFailsOnce            // an error on the first attempt, a value on the retry
	hostileKinds
)

// hostileScript is the input of a generated run: the kind of each step,
// and a seed for its ordinary values.
type hostileScript struct {
	Steps []int  `json:"steps"`
	Seed  uint64 `json:"seed"`
}

// hostileString is a string of NUL, U+0001, neighbours of the surrogate
// range and emoji, all of which must round-trip.
func hostileString(rng *rand.Rand) string {
	alphabet := []string{"\x00", "\x01", "\x010", "a", "\ud7ff", "\ue000", "\U0001F600", "\\", `"`, "\u2028", "é"}
	var sb strings.Builder
	for range rng.IntN(8) {
		sb.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return sb.String()
}

// hostileValueOf is the ordinary value of step i of a script.
func hostileValueOf(seed uint64, i int) map[string]any {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	return map[string]any{"s": hostileString(rng), "n": rng.Int64() >> rng.IntN(60), "f": rng.Float64(), "k": map[string]any{hostileString(rng): []any{nil, true, ""}}}
}

// runHostileStep returns what step i of script returns on its attempt.
func runHostileStep(script hostileScript, i, attempt int) (any, error) {
	switch script.Steps[i] {
	case hostileSurrogate:
		return json.RawMessage(`{"text":"\ud83d"}`), nil
	case hostileInvalidUTF8:
		return json.RawMessage("\"a\xffb\""), nil
	case hostileHugeNumber:
		return json.RawMessage(`1e1000000`), nil
	case hostileBigInt:
		return new(big.Int).Exp(big.NewInt(10), big.NewInt(200000), nil), nil
	case hostileDeep:
		return deeplyNested(backend.MaxJSONDepth + 1), nil
	case hostileTypedNil:
		var e *codeError
		return nil, e
	case hostileErrorPanics:
		return nil, unwrapPanics{}
	case hostileMarshalPanics:
		return marshalPanics{}, nil
	case hostileNonRetryable:
		return nil, ow.NonRetryable(errors.New("permanently broken"))
	case hostileFailsOnce:
		if attempt == 1 {
			return nil, errors.New("transiently broken")
		}
	}
	return hostileValueOf(script.Seed, i), nil
}

// hostileOutcome is what a finished run left behind, in terms both
// backends must agree on.
type hostileOutcome struct {
	Status backend.RunStatus
	Output string   // completed: the output, decoded and re-encoded
	Error  string   // failed: the stored error's name and message, without the stack
	Steps  []string // each attempt: "name status"
}

// TestGeneratedHostileRunsEndTheSameOnBothBackends generates runs whose
// steps return ordinary values (NUL, U+0001, emoji in their strings) and
// hostile ones — lone surrogates, invalid UTF-8, numbers beyond numeric,
// deep nesting, typed nil errors, panicking methods, failures — and runs
// them on a worker per backend. Every run must end, completed or failed;
// the worker must go on working; a completed run's output is its last
// step's value; no attempt is left running and every step key has at most
// one completed attempt (no partial pass); and the two backends must
// leave exactly the same outcome, run by run.
func TestGeneratedHostileRunsEndTheSameOnBothBackends(t *testing.T) {
	const runs = 40
	rng := rand.New(rand.NewPCG(20261123, 10))
	scripts := make([]hostileScript, runs)
	for i := range scripts {
		s := hostileScript{Seed: rng.Uint64()}
		for range 1 + rng.IntN(4) {
			kind := hostileValue
			if rng.IntN(3) == 0 { // a third of the steps are hostile
				kind = 1 + rng.IntN(hostileKinds-1)
			}
			s.Steps = append(s.Steps, kind)
		}
		scripts[i] = s
	}
	outcomes := map[string][]hostileOutcome{}
	bothBackends(t, func(t *testing.T, b backend.Backend) {
		retry := ow.WithRetryPolicy(ow.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 2})
		var attempts counter
		wf := ow.Define(ow.Spec{Name: "hostile"}, func(ctx ow.Context, script hostileScript) (any, error) {
			var last any
			for i := range script.Steps {
				var err error
				name := fmt.Sprintf("step-%d", i)
				last, err = ow.Run(ctx, name, func(context.Context) (any, error) {
					return runHostileStep(script, i, attempts.inc(ctx.RunInfo().ID+"/"+name))
				}, retry)
				if err != nil {
					return nil, err
				}
			}
			return last, nil
		})
		ordinary := ow.Define(ow.Spec{Name: "ordinary"}, func(ctx ow.Context, in int) (int, error) { return in + 1, nil })
		ctx := startWorker(t, b, ow.WorkerOptions{Concurrency: 8}, wf, ordinary)
		c := ow.NewClient(b)
		var ids []string
		for _, s := range scripts {
			h, err := wf.Start(ctx, c, s)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, h.ID)
		}
		var got []hostileOutcome
		for i, id := range ids {
			r := waitTerminal(t, b, id)
			o := hostileOutcome{Status: r.Status}
			switch r.Status {
			case backend.RunCompleted:
				o.Output = canonical(t, r.Output)
				want, _ := json.Marshal(hostileValueOf(scripts[i].Seed, len(scripts[i].Steps)-1))
				if o.Output != canonical(t, want) {
					t.Errorf("run %d (%v): output %s, want the last step's value %s", i, scripts[i].Steps, o.Output, want)
				}
			case backend.RunFailed:
				e := storedError(t, r)
				o.Error = e.Name + ": " + e.Message
			default:
				t.Errorf("run %d (%v) ended %s", i, scripts[i].Steps, r.Status)
			}
			page, err := c.ListSteps(ctx, backend.ListStepAttemptsParams{WorkflowRunID: id, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			completed := map[string]int{}
			for _, s := range page.Data {
				o.Steps = append(o.Steps, s.StepName+" "+string(s.Status))
				if s.Status == backend.StepRunning {
					t.Errorf("run %d (%v): step %s left running", i, scripts[i].Steps, s.StepName)
				}
				if s.Status == backend.StepCompleted {
					if completed[s.StepName]++; completed[s.StepName] > 1 {
						t.Errorf("run %d (%v): step %s completed twice", i, scripts[i].Steps, s.StepName)
					}
				}
			}
			got = append(got, o)
		}
		h, err := ordinary.Start(ctx, c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := h.Result(ctx); err != nil || out != 2 {
			t.Fatalf("an ordinary run after the generated ones: %d, %v; the worker must still be working", out, err)
		}
		outcomes[t.Name()] = got
		if testing.Verbose() {
			for i, o := range got {
				t.Logf("run %d %v: %s %s%s", i, scripts[i].Steps, o.Status, o.Error, o.Output)
			}
		}
	})
	var names []string
	for n := range outcomes {
		names = append(names, n)
	}
	slices.Sort(names)
	for i := 1; i < len(names); i++ {
		a, b := outcomes[names[0]], outcomes[names[i]]
		for r := range a {
			if fmt.Sprint(a[r]) != fmt.Sprint(b[r]) {
				t.Errorf("run %d (%v) ended differently:\n  %s: %+v\n  %s: %+v", r, scripts[r].Steps, names[0], a[r], names[i], b[r])
			}
		}
	}
}

// canonical re-encodes a JSON value, so that two stores' renderings of
// one value compare equal.
func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// FuzzHostileRun runs one generated run per input on SQLite, driven pass
// by pass: whatever its steps return, the run ends completed or failed,
// with no attempt left running, and the worker never panics. The seed
// corpus runs with the tests; `go test -fuzz FuzzHostileRun` explores.
func FuzzHostileRun(f *testing.F) {
	for kind := range hostileKinds {
		f.Add([]byte{byte(kind)}, uint64(kind))
		f.Add([]byte{hostileValue, byte(kind), hostileValue}, uint64(kind)*7)
	}
	f.Fuzz(func(t *testing.T, kinds []byte, seed uint64) {
		if len(kinds) == 0 || len(kinds) > 8 {
			t.Skip()
		}
		script := hostileScript{Seed: seed}
		for _, k := range kinds {
			script.Steps = append(script.Steps, int(k)%hostileKinds)
		}
		e := newEnv(t)
		var attempts counter
		retry := ow.WithRetryPolicy(ow.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 2})
		wf := ow.Define(ow.Spec{Name: "hostile"}, func(ctx ow.Context, script hostileScript) (any, error) {
			var last any
			for i := range script.Steps {
				var err error
				name := fmt.Sprintf("step-%d", i)
				if last, err = ow.Run(ctx, name, func(context.Context) (any, error) {
					return runHostileStep(script, i, attempts.inc(name))
				}, retry); err != nil {
					return nil, err
				}
			}
			return last, nil
		})
		e.register(wf)
		id := start(e, wf, script)
		for range 2 * len(script.Steps) {
			e.drain()
			e.clock.Advance(time.Second) // past any retry's backoff
		}
		r := e.run(id)
		if !r.Status.Terminal() {
			t.Fatalf("script %v: run still %s", script.Steps, r.Status)
		}
		for _, s := range e.steps(id) {
			if s.Status == backend.StepRunning {
				t.Fatalf("script %v: step %s left running", script.Steps, s.StepName)
			}
		}
	})
}
