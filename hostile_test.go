package openworkflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// codeError is the classic typed-nil trap: its Error method dereferences
// the receiver, so a nil *codeError returned as an error panics when read.
type codeError struct{ Code int }

func (e *codeError) Error() string { return fmt.Sprintf("code %d", e.Code) }

// unwrapPanics is an error whose Unwrap panics (errors.Is and errors.As
// call it).
type unwrapPanics struct{}

func (unwrapPanics) Error() string { return "unwrap panics" }
func (unwrapPanics) Unwrap() error { panic("Unwrap exploded") }

// marshalPanics is a value whose MarshalJSON panics.
type marshalPanics struct{}

func (marshalPanics) MarshalJSON() ([]byte, error) { panic("MarshalJSON exploded") }

// unmarshalPanics is a value whose UnmarshalJSON panics.
type unmarshalPanics struct{}

func (*unmarshalPanics) UnmarshalJSON([]byte) error { panic("UnmarshalJSON exploded") }

// noRetry is the step option of steps whose failure must end the run at
// once.
var noRetry = ow.WithRetryPolicy(ow.RetryPolicy{MaximumAttempts: 1})

// TestUserMethodsThatPanicFailTheirRunNeverTheWorker runs, on one worker,
// workflows whose errors and values panic when the engine reads them: each
// run fails with a PanicError saying what panicked, and the worker goes on
// to complete an ordinary run afterwards.
func TestUserMethodsThatPanicFailTheirRunNeverTheWorker(t *testing.T) {
	cases := []struct {
		name    string
		def     func(name string) ow.Definition
		input   any
		message string // what the stored error's message must contain
	}{
		{
			name: "a typed nil error returned by the workflow function",
			def: func(name string) ow.Definition {
				return ow.Define(ow.Spec{Name: name}, func(ow.Context, int) (int, error) {
					var e *codeError
					return 0, e
				})
			},
			message: "*openworkflow_test.codeError panicked",
		},
		{
			name: "a typed nil error returned by a step",
			def: func(name string) ow.Definition {
				return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, _ int) (int, error) {
					return ow.Run(ctx, "typed-nil", func(context.Context) (int, error) {
						var e *codeError
						return 0, e
					})
				})
			},
			message: "*openworkflow_test.codeError panicked",
		},
		{
			name: "an error whose Unwrap panics",
			def: func(name string) ow.Definition {
				return ow.Define(ow.Spec{Name: name}, func(ow.Context, int) (int, error) { return 0, unwrapPanics{} })
			},
			message: "openworkflow_test.unwrapPanics panicked: Unwrap exploded",
		},
		{
			name: "a step result whose MarshalJSON panics",
			def: func(name string) ow.Definition {
				return ow.Define(ow.Spec{Name: name}, func(ctx ow.Context, _ int) (marshalPanics, error) {
					return ow.Run(ctx, "marshal", func(context.Context) (marshalPanics, error) { return marshalPanics{}, nil }, noRetry)
				})
			},
			message: "MarshalJSON exploded",
		},
		{
			name: "a workflow output whose MarshalJSON panics",
			def: func(name string) ow.Definition {
				return ow.Define(ow.Spec{Name: name}, func(ow.Context, int) (marshalPanics, error) { return marshalPanics{}, nil })
			},
			message: "MarshalJSON exploded",
		},
		{
			name: "an input whose UnmarshalJSON panics",
			def: func(name string) ow.Definition {
				return ow.Define(ow.Spec{Name: name}, func(ow.Context, unmarshalPanics) (int, error) { return 1, nil })
			},
			input:   map[string]int{"a": 1},
			message: "UnmarshalJSON exploded",
		},
	}
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		c := ow.NewClient(b)
		var defs []ow.Definition
		for i, tc := range cases {
			defs = append(defs, tc.def(fmt.Sprintf("hostile-%d", i)))
		}
		ordinary := ow.Define(ow.Spec{Name: "ordinary"}, func(ctx ow.Context, in int) (int, error) {
			return ow.Run(ctx, "double", func(context.Context) (int, error) { return 2 * in, nil })
		})
		ctx := startWorker(t, b, ow.WorkerOptions{Concurrency: 4}, append(defs, ordinary)...)
		for i, tc := range cases {
			h, err := c.StartByName(ctx, fmt.Sprintf("hostile-%d", i), "", tc.input)
			if err != nil {
				t.Fatalf("%s: start: %v", tc.name, err)
			}
			r := waitTerminal(t, b, h.ID)
			if r.Status != backend.RunFailed {
				t.Errorf("%s: run is %s, want failed", tc.name, r.Status)
				continue
			}
			if e := storedError(t, r); e.Name != "PanicError" || !strings.Contains(e.Message, tc.message) {
				t.Errorf("%s: stored error {%s: %s}, want a PanicError containing %q", tc.name, e.Name, e.Message, tc.message)
			}
		}
		h, err := ordinary.Start(ctx, c, 21)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := h.Result(ctx); err != nil || out != 42 {
			t.Fatalf("an ordinary run after the hostile ones: %d, %v; want 42 (the worker must still be working)", out, err)
		}
	})
}

// deeplyNested returns depth arrays nested in one another.
func deeplyNested(depth int) any {
	var v any = []any{}
	for range depth - 1 {
		v = []any{v}
	}
	return v
}

// TestValuesNoBackendCanStoreFailTheirStepAtOnce makes steps return values
// that Go encodes but PostgreSQL's jsonb refuses: each step runs once, is
// not retried, and fails its run with an error naming the step and what
// was wrong, the same on both backends.
func TestValuesNoBackendCanStoreFailTheirStepAtOnce(t *testing.T) {
	huge := new(big.Int).Exp(big.NewInt(10), big.NewInt(200000), nil)
	cases := []struct {
		name  string
		value any
		want  string
	}{
		{"a lone surrogate escape", json.RawMessage(`{"text":"\ud83d"}`), `lone UTF-16 surrogate \ud83d`},
		{"raw invalid UTF-8", json.RawMessage("\"a\xffb\""), "invalid UTF-8 at byte 2"},
		{"a number beyond numeric", json.RawMessage(`1e1000000`), "out of PostgreSQL's numeric range"},
		{"a *big.Int of 10^200000", huge, "out of PostgreSQL's numeric range"},
		{"100,000 nested arrays", deeplyNested(100000), "nested more than 1000 levels deep"},
	}
	messages := map[string][]string{} // backend → stored messages, by case
	bothBackends(t, func(t *testing.T, b backend.Backend) {
		var runs counter
		var defs []ow.Definition
		for i, tc := range cases {
			defs = append(defs, ow.Define(ow.Spec{Name: fmt.Sprintf("unstorable-%d", i)}, func(ctx ow.Context, _ int) (any, error) {
				return ow.Run(ctx, "produce", func(context.Context) (any, error) {
					runs.inc(tc.name)
					return tc.value, nil
				})
			}))
		}
		ctx := startWorker(t, b, ow.WorkerOptions{Concurrency: 2, LeaseDuration: 2 * time.Second}, defs...)
		c := ow.NewClient(b)
		for i, tc := range cases {
			h, err := c.StartByName(ctx, fmt.Sprintf("unstorable-%d", i), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			r := waitTerminal(t, b, h.ID)
			e := storedError(t, r)
			if r.Status != backend.RunFailed || !strings.Contains(e.Message, `"produce"`) || !strings.Contains(e.Message, tc.want) {
				t.Errorf("%s: run %s with error %q; want failed, naming step \"produce\" and %q", tc.name, r.Status, e.Message, tc.want)
			}
			if n := runs.get(tc.name); n != 1 {
				t.Errorf("%s: the step ran %d times, want once (such a value fails again: no retry)", tc.name, n)
			}
			messages[t.Name()] = append(messages[t.Name()], e.Message)
		}
	})
	var first []string
	for _, ms := range messages {
		if first == nil {
			first = ms
			continue
		}
		if fmt.Sprint(ms) != fmt.Sprint(first) {
			t.Errorf("the backends stored different errors:\n%q\n%q", first, ms)
		}
	}
}

// TestStartAndSignalRefuseUnstorableValuesWithAClearError checks the
// client side: a start or a signal whose value no backend can store fails
// before anything is written, saying why.
func TestStartAndSignalRefuseUnstorableValuesWithAClearError(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		c := ow.NewClient(b)
		ctx := t.Context()
		_, err := c.StartByName(ctx, "wf", "", json.RawMessage(`"\udc00"`))
		if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "lone UTF-16 surrogate") {
			t.Errorf("start with a lone surrogate: %v, want ErrInvalidArgument saying so", err)
		}
		_, err = c.StartByName(ctx, "wf", "", marshalPanics{})
		if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "MarshalJSON exploded") {
			t.Errorf("start with an input whose MarshalJSON panics: %v, want ErrInvalidArgument saying so", err)
		}
		_, err = c.SendSignal(ctx, "sig", json.RawMessage("\"\xff\""), "")
		if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "invalid UTF-8") {
			t.Errorf("signal with invalid UTF-8: %v, want ErrInvalidArgument saying so", err)
		}
		counts, err := c.CountRuns(ctx)
		if err != nil || counts != (backend.RunCounts{}) {
			t.Errorf("runs after the refused starts: %+v, %v; want none", counts, err)
		}
	})
}

// TestADecodeErrorNamesTheTypeItDecodedInto checks the message of a
// recorded result that cannot be decoded into the step's type: it names
// that type, an interface included (it said "<nil>").
func TestADecodeErrorNamesTheTypeItDecodedInto(t *testing.T) {
	e := newEnv(t)
	wf := ow.Define(ow.Spec{Name: "stringer"}, func(ctx ow.Context, _ int) (string, error) {
		s, err := ow.Run(ctx, "duration", func(context.Context) (fmt.Stringer, error) { return time.Second, nil })
		if err != nil {
			return "", err
		}
		return s.String(), nil
	})
	e.register(wf)
	id := start(e, wf, 0)
	e.drain()
	r := e.requireStatus(id, backend.RunFailed)
	if msg := storedError(t, r).Message; !strings.Contains(msg, "into fmt.Stringer") {
		t.Fatalf("stored error %q does not name the type decoded into (fmt.Stringer)", msg)
	}
}

// TestAWorkerRefusesAHeartbeatThatCannotKeepItsLease checks that Start
// refuses options under which every lease would expire before its renewal.
func TestAWorkerRefusesAHeartbeatThatCannotKeepItsLease(t *testing.T) {
	e := newEnv(t, func(o *ow.WorkerOptions) { o.LeaseDuration, o.HeartbeatInterval = time.Second, time.Second })
	err := e.worker.Start(e.ctx)
	if err == nil {
		_ = e.worker.Stop(e.ctx)
		t.Fatal("Start accepted HeartbeatInterval = LeaseDuration")
	}
	if !strings.Contains(err.Error(), "HeartbeatInterval") || !strings.Contains(err.Error(), "LeaseDuration") {
		t.Fatalf("Start: %v, want an error naming HeartbeatInterval and LeaseDuration", err)
	}
}
