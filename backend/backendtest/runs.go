package backendtest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

func testCreateWorkflowRun(t *testing.T, s *suite) {
	t.Run("creates a pending run with zero attempts, available now, and defaults for what was not given", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		start := time.Now()
		got := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "greet", Input: json.RawMessage(`{"name":"Ada"}`)})
		w := since(start)

		want := &backend.WorkflowRun{
			NamespaceID:  b.NamespaceID(),
			ID:           got.ID,
			WorkflowName: "greet",
			Status:       backend.RunPending,
			Config:       json.RawMessage(`{}`),
			Input:        json.RawMessage(`{"name":"Ada"}`),
			AvailableAt:  requireTimeIn(t, "available_at", got.AvailableAt, w),
			CreatedAt:    *requireTimeIn(t, "created_at", &got.CreatedAt, w),
		}
		requireRun(t, "created run", got, want)
		requireRun(t, "GetWorkflowRun of the created run", getRun(t, b, got.ID), got)
	})

	t.Run("stores version, key, config, context, input, parent linkage, delayed start and deadline as given", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		worker := newWorkerID()
		parent := startRun(t, b, worker, backend.CreateWorkflowRunParams{WorkflowName: "parent"})
		step := createStep(t, b, parent.ID, worker, "child", backend.StepWorkflow, `{"kind":"workflow","timeoutAt":null}`)
		ns := b.NamespaceID()
		availableAt := ms(time.Now().Add(farFuture))
		deadlineAt := ms(time.Now().Add(2 * farFuture))

		got := createRun(t, b, backend.CreateWorkflowRunParams{
			WorkflowName:                 "child",
			Version:                      ptr("v2"),
			IdempotencyKey:               ptr("key-1"),
			Config:                       json.RawMessage(`{"reserved":true}`),
			Context:                      json.RawMessage(`{"trace":"abc"}`),
			Input:                        json.RawMessage(`[1,2,3]`),
			ParentStepAttemptNamespaceID: &ns,
			ParentStepAttemptID:          &step.ID,
			AvailableAt:                  &availableAt,
			DeadlineAt:                   &deadlineAt,
		})
		want := &backend.WorkflowRun{
			NamespaceID:                  ns,
			ID:                           got.ID,
			WorkflowName:                 "child",
			Version:                      ptr("v2"),
			Status:                       backend.RunPending,
			IdempotencyKey:               ptr("key-1"),
			Config:                       json.RawMessage(`{"reserved":true}`),
			Context:                      json.RawMessage(`{"trace":"abc"}`),
			Input:                        json.RawMessage(`[1,2,3]`),
			ParentStepAttemptNamespaceID: &ns,
			ParentStepAttemptID:          &step.ID,
			AvailableAt:                  &availableAt,
			DeadlineAt:                   &deadlineAt,
			CreatedAt:                    got.CreatedAt,
		}
		requireRun(t, "created run", got, want)
		requireRun(t, "GetWorkflowRun of the created run", getRun(t, b, got.ID), want)
	})

	t.Run("stores timestamps in UTC with millisecond precision, even after a lease with microseconds", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		created := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: ptr(time.Now().Add(-time.Second))})
		r := getRun(t, b, created.ID)
		claimed := claim(t, b, 1234*time.Microsecond, newWorkerID())
		if len(claimed) != 1 {
			t.Fatalf("claimed %d runs, want 1", len(claimed))
		}
		c := claimed[0]
		for name, ts := range map[string]*time.Time{"created_at": &r.CreatedAt, "updated_at": &r.UpdatedAt, "available_at": r.AvailableAt,
			"created_at as created": &created.CreatedAt, "available_at as created": created.AvailableAt,
			"started_at as claimed": c.StartedAt, "available_at as claimed": c.AvailableAt, "updated_at as claimed": &c.UpdatedAt} {
			if ts == nil {
				t.Fatalf("%s is nil", name)
			}
			if ts.Location() != time.UTC {
				t.Errorf("%s = %v is in location %v, want UTC", name, ts, ts.Location())
			}
			if ts.Nanosecond()%int(time.Millisecond) != 0 {
				t.Errorf("%s = %v has sub-millisecond digits", name, ts.Format(time.RFC3339Nano))
			}
		}
	})

	t.Run("with an idempotency key", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name         string
			second       backend.CreateWorkflowRunParams
			otherNS      bool
			wantSameRun  bool
			firstVersion *string
		}{
			{name: "returns the existing run for the same workflow name and key, ignoring the new input",
				second: backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k"), Input: json.RawMessage(`"second"`)}, wantSameRun: true},
			{name: "returns the existing run when only the version differs",
				firstVersion: ptr("v1"),
				second:       backend.CreateWorkflowRunParams{WorkflowName: "order", Version: ptr("v2"), IdempotencyKey: ptr("k")}, wantSameRun: true},
			{name: "creates a new run for another workflow name with the same key",
				second: backend.CreateWorkflowRunParams{WorkflowName: "invoice", IdempotencyKey: ptr("k")}},
			{name: "creates a new run for another key",
				second: backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k2")}},
			{name: "creates a new run in another namespace with the same name and key",
				second: backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")}, otherNS: true},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				b := s.newBackend(t)
				first := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order", Version: c.firstVersion, IdempotencyKey: ptr("k"), Input: json.RawMessage(`"first"`)})
				b2 := b
				if c.otherNS {
					b2 = s.newBackend(t)
				}
				second := createRun(t, b2, c.second)
				if first.Reused {
					t.Fatalf("the first create is Reused, want a new run")
				}
				if c.wantSameRun {
					requireRun(t, "second create", second, first)
					if !second.Reused {
						t.Fatalf("the second create returned the first run without Reused set: a caller cannot tell its input was dropped")
					}
					return
				}
				if second.Reused {
					t.Fatalf("a new run is Reused")
				}
				if second.ID == first.ID {
					t.Fatalf("second create returned the first run %s, want a new run", first.ID)
				}
				if second.Status != backend.RunPending || second.NamespaceID != b2.NamespaceID() {
					t.Fatalf("second run has status %s in namespace %s, want a pending run in %s", second.Status, second.NamespaceID, b2.NamespaceID())
				}
			})
		}
	})

	t.Run("creates distinct runs when the idempotency key is nil", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		a := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order"})
		c := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order"})
		if a.ID == c.ID {
			t.Fatalf("two unkeyed creates returned the same run %s", a.ID)
		}
	})

	t.Run("collapses 10 concurrent creates with the same key, from two backends, to one run", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace()
		backends := []backend.Backend{s.backendIn(t, ns), s.backendIn(t, ns)}
		ids := make([]string, 10)
		errs := make([]error, 10)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				r, err := backends[i%2].CreateWorkflowRun(t.Context(), backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("same")})
				if err == nil {
					ids[i] = r.ID
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("create %d: %v", i, err)
			}
			if ids[i] != ids[0] {
				t.Fatalf("concurrent keyed creates returned different runs: %v", ids)
			}
		}
		page, err := backends[0].ListWorkflowRuns(t.Context(), backend.ListWorkflowRunsParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 1 {
			t.Fatalf("namespace holds %d runs after 10 keyed creates, want 1", len(page.Data))
		}
	})

	t.Run("returns the existing run whatever its terminal status", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name   string
			status backend.RunStatus
			finish func(t *testing.T, b backend.Backend, runID, worker string)
		}{
			{"completed", backend.RunCompleted, func(t *testing.T, b backend.Backend, runID, worker string) {
				completeRun(t, b, runID, worker, `"done"`)
			}},
			{"failed", backend.RunFailed, func(t *testing.T, b backend.Backend, runID, worker string) {
				failRun(t, b, runID, worker, `{"message":"boom"}`)
			}},
			{"canceled", backend.RunCanceled, func(t *testing.T, b backend.Backend, runID, worker string) {
				cancelRun(t, b, runID)
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				b := s.newBackend(t)
				worker := newWorkerID()
				run := startRun(t, b, worker, backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")})
				c.finish(t, b, run.ID, worker)
				finished := getRun(t, b, run.ID)
				if finished.Status != c.status {
					t.Fatalf("status = %s, want %s", finished.Status, c.status)
				}
				again := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")})
				requireRun(t, "keyed create after the run finished", again, finished)
			})
		}
	})

	t.Run("honours the key up to exactly 24 hours on the backend's clock, and not a millisecond more", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		b := s.newBackendOn(t, clk)
		first := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")})
		requireTimeAt(t, "created_at", &first.CreatedAt, clk.Now())
		clk.Advance(backend.IdempotencyPeriod)
		requireRun(t, "keyed create at exactly 24 hours", createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")}), first)
		clk.Advance(time.Millisecond)
		if again := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")}); again.ID == first.ID {
			t.Fatalf("keyed create 24 hours and 1 ms later returned the first run")
		}
	})

	t.Run("honours the key only within the 24 hour idempotency period", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name        string
			age         time.Duration
			wantSameRun bool
		}{
			{"returns the run created 23 hours ago", backend.IdempotencyPeriod - time.Hour, true},
			{"creates a new run when the matching run is older than 24 hours", backend.IdempotencyPeriod + time.Minute, false},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				b := s.newBackend(t)
				old := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")})
				s.ageRun(t, b, old.ID, c.age)
				aged := getRun(t, b, old.ID)
				if want := old.CreatedAt.Add(-c.age); !aged.CreatedAt.Equal(want) {
					t.Fatalf("AgeRun: created_at = %v, want %v", aged.CreatedAt, want)
				}
				again := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")})
				if c.wantSameRun {
					requireRun(t, "keyed create", again, aged)
					return
				}
				if again.ID == old.ID {
					t.Fatalf("keyed create returned the run created %v ago", c.age)
				}
				third := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "order", IdempotencyKey: ptr("k")})
				requireRun(t, "keyed create once a fresh run exists", third, again)
			})
		}
	})
}

func testGetWorkflowRun(t *testing.T, s *suite) {
	t.Run("returns ErrRunNotFound for an unknown id", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		for _, id := range []string{"wrun_01J00000000000000000000000", "00000000-0000-4000-8000-000000000000"} {
			_, err := b.GetWorkflowRun(t.Context(), id)
			requireErrorIs(t, "GetWorkflowRun("+id+")", err, backend.ErrRunNotFound)
		}
	})
}

// jsonValues are JSON values that must round-trip exactly through every
// JSON column, including those PostgreSQL's JSONB or a naive TEXT encoding
// would alter.
var jsonValues = []struct{ name, json string }{
	{"null", `null`},
	{"an empty string", `""`},
	{"a NUL character inside a string", `"a\u0000b"`},
	{"a NUL character inside an object key", `{"k\u0000":"v"}`},
	{"strings starting with U+0001 beside a NUL", `{"a":"\u0000","b":"\u0001\u00010","\u0001":"\u00011","c":"\u0001"}`},
	{"U+0001 U+0001 '0', without any NUL", `"\u0001\u00010"`},
	{"a big integer", `12345678901234567890`},
	{"a big negative integer", `-98765432109876543210`},
	{"a fraction", `3.25`},
	{"unicode and escapes", `"é ☃ 😀 \" \\ \n \t \u2028 </script>"`},
	{"a boolean", `false`},
	{"an empty object", `{}`},
	{"an empty array", `[]`},
	{"a nested object", `{"z":1,"a":{"b":[1,"two",null,true,{"c":[]}]},"e":{},"":""}`},
}

func testJSONRoundTrip(t *testing.T, s *suite) {
	for _, v := range jsonValues {
		t.Run("round-trips "+v.name+" through input, output, error, step context and output, and signal data", func(t *testing.T) {
			t.Parallel()
			b := s.newBackend(t)
			worker := newWorkerID()
			value := json.RawMessage(v.json)
			errJSON := json.RawMessage(`{"name":"E","message":` + v.json + `}`)

			run := startRun(t, b, worker, backend.CreateWorkflowRunParams{Input: value})
			requireJSON(t, "run input", getRun(t, b, run.ID).Input, value)

			stepCtx := json.RawMessage(`{"kind":"custom","value":` + v.json + `}`)
			step := createStep(t, b, run.ID, worker, "s", backend.StepFunction, string(stepCtx))
			if _, err := Single(b).CompleteStepAttempt(t.Context(), CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: worker, Output: value}); err != nil {
				t.Fatal(err)
			}
			gotStep := getStep(t, b, step.ID)
			requireJSON(t, "step context", gotStep.Context, stepCtx)
			requireJSON(t, "step output", gotStep.Output, value)

			failing := createStep(t, b, run.ID, worker, "f", backend.StepFunction, "")
			if _, err := Single(b).FailStepAttempt(t.Context(), FailStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: failing.ID, WorkerID: worker, Error: errJSON}); err != nil {
				t.Fatal(err)
			}
			requireJSON(t, "step error", getStep(t, b, failing.ID).Error, errJSON)

			wait := createStep(t, b, run.ID, worker, "w", backend.StepSignalWait, signalWaitContext("sig"))
			if _, err := b.SendSignal(t.Context(), backend.SendSignalParams{Signal: "sig", Data: value}); err != nil {
				t.Fatal(err)
			}
			data, ok, err := b.GetSignalDelivery(t.Context(), wait.ID)
			if err != nil || !ok {
				t.Fatalf("GetSignalDelivery = %s, %v, %v; want a delivery", data, ok, err)
			}
			requireJSON(t, "signal data", data, value)

			completeRun(t, b, run.ID, worker, v.json)
			requireJSON(t, "run output", getRun(t, b, run.ID).Output, value)

			other := startRun(t, b, worker, backend.CreateWorkflowRunParams{})
			failRun(t, b, other.ID, worker, string(errJSON))
			requireJSON(t, "run error", getRun(t, b, other.ID).Error, errJSON)
		})
	}

	t.Run("stores a nil input as NULL, distinct from JSON null", func(t *testing.T) {
		t.Parallel()
		b := s.newBackend(t)
		nilInput := createRun(t, b, backend.CreateWorkflowRunParams{})
		nullInput := createRun(t, b, backend.CreateWorkflowRunParams{Input: json.RawMessage(`null`)})
		requireJSON(t, "input given as nil", getRun(t, b, nilInput.ID).Input, nil)
		requireJSON(t, "input given as null", getRun(t, b, nullInput.ID).Input, json.RawMessage(`null`))
	})
}
