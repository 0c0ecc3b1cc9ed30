package openworkflow_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// fullBackend is a backend with every optional part the worker uses, so
// that a wrapper embedding it keeps group commits, due times and batched
// history reads.
type fullBackend interface {
	backend.Backend
	backend.DueTimer
	backend.HistoryReader
}

// claimRecorder remembers when each run was claimed.
type claimRecorder struct {
	fullBackend
	mu     sync.Mutex
	claims map[string][]time.Time
}

func (c *claimRecorder) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	runs, err := c.fullBackend.ClaimWorkflowRuns(ctx, p)
	now := time.Now()
	c.mu.Lock()
	for _, r := range runs {
		c.claims[r.ID] = append(c.claims[r.ID], now)
	}
	c.mu.Unlock()
	return runs, err
}

func (c *claimRecorder) of(id string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.claims[id]...)
}

// runClaimAhead starts a real-time worker claiming ClaimAhead before
// wake-ups, runs wf to its result and returns the env, the run id and
// when the run was claimed.
func runClaimAhead[O any](t *testing.T, ahead time.Duration, wf *ow.Workflow[int, O]) (*env, string, []time.Time) {
	t.Helper()
	e := newRealTimeEnv(t)
	full, ok := any(e.b).(fullBackend)
	if !ok {
		t.Fatalf("%T lacks a batcher, a due timer or a history reader", e.b)
	}
	rec := &claimRecorder{fullBackend: full, claims: map[string][]time.Time{}}
	ctx := startWorker(t, rec, ow.WorkerOptions{Concurrency: 2, ClaimAhead: ahead, ID: "ahead"}, wf)
	h, err := wf.Start(ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Result(ctx); err != nil {
		t.Fatalf("result: %v", err)
	}
	return e, h.ID, rec.of(h.ID)
}

func TestARunClaimedAheadOfItsWakeUpWaitsForIt(t *testing.T) {
	const nap, ahead = 400 * time.Millisecond, 300 * time.Millisecond
	wf := ow.Define(ow.Spec{Name: "nap-then-clock"}, func(ctx ow.Context, _ int) (int64, error) {
		if err := ow.Sleep(ctx, "nap", nap); err != nil {
			return 0, err
		}
		return ow.Run(ctx, "after", func(context.Context) (int64, error) { return time.Now().UnixNano(), nil })
	})
	e, id, claims := runClaimAhead(t, ahead, wf)

	var resumeAt time.Time
	var after int64
	for _, s := range e.steps(id) {
		switch s.StepName {
		case "nap":
			var c struct {
				ResumeAt string `json:"resumeAt"`
			}
			if err := json.Unmarshal(s.Context, &c); err != nil {
				t.Fatal(err)
			}
			var err error
			if resumeAt, err = backend.ParseTime(c.ResumeAt); err != nil {
				t.Fatal(err)
			}
		case "after":
			if err := json.Unmarshal(s.Output, &after); err != nil {
				t.Fatal(err)
			}
		}
	}
	if resumeAt.IsZero() || after == 0 {
		t.Fatalf("steps %v: want the nap and the step after it", e.stepNames(id))
	}
	if ran := time.Unix(0, after); ran.Before(resumeAt) {
		t.Fatalf("the step after the sleep ran at %v, %v before the sleep's wake-up", ran, resumeAt.Sub(ran))
	}
	// Two claims: the first pass, and the woken one, made ahead of the
	// wake-up (the worker held the run until then).
	if len(claims) != 2 {
		t.Fatalf("the run was claimed %d times, want 2", len(claims))
	}
	if !claims[1].Before(resumeAt) {
		t.Fatalf("the woken pass was claimed %v after the wake-up, want ahead of it (ClaimAhead %v)", claims[1].Sub(resumeAt), ahead)
	}
}

func TestATimeoutIsClaimedAheadOnceAndNeverReplayedEarly(t *testing.T) {
	// A signal wait's timeout, like a sleep, is waited for after a claim
	// ahead of it, before the replay: replayed early, the wait would
	// suspend again and the run be parked and claimed once more.
	for _, c := range []struct {
		name    string
		timeout time.Duration
	}{
		{"parked within the claim-ahead window at once", 150 * time.Millisecond},
		{"claimed ahead by the worker's wake-up timer", 600 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			wf := ow.Define(ow.Spec{Name: "short-wait"}, func(ctx ow.Context, _ int) (bool, error) {
				_, received, err := ow.WaitForSignal[int](ctx, "never", ow.WithTimeout(c.timeout))
				return received, err
			})
			e, id, claims := runClaimAhead(t, 300*time.Millisecond, wf)
			if got := output[bool](e, id); got {
				t.Fatal("received a signal nobody sent")
			}
			if len(claims) != 2 {
				t.Fatalf("the run was claimed %d times at %v (its attempts: %d; its steps: %v), want 2 (the wait's pass, then once ahead of its timeout)",
					len(claims), claims, e.run(id).Attempts, e.stepNames(id))
			}
		})
	}
}

// dueCounter counts NextDueAt queries.
type dueCounter struct {
	fullBackend
	mu    sync.Mutex
	calls int
}

func (d *dueCounter) NextDueAt(ctx context.Context) (time.Time, bool, error) {
	d.mu.Lock()
	d.calls++
	d.mu.Unlock()
	return d.fullBackend.NextDueAt(ctx)
}

func TestAnIdleWorkerDoesNotPollAheadOfAWakeUpItCannotClaimEarly(t *testing.T) {
	// A lease running out is due, but never claimed ahead: inside the
	// claim-ahead window the worker waits for it instead of asking again
	// and again when it comes due.
	e := newRealTimeEnv(t)
	full := any(e.b).(fullBackend)
	wf := ow.Define(ow.Spec{Name: "abandoned"}, func(ctx ow.Context, _ int) (int, error) { return 1, nil })
	h, err := wf.Start(e.ctx, e.client, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Another worker claims the run with a 300 ms lease and vanishes.
	if runs, err := e.b.ClaimWorkflowRuns(e.ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: []string{"gone/0"}, LeaseDuration: 300 * time.Millisecond}); err != nil || len(runs) != 1 {
		t.Fatalf("claim: %v, %v", runs, err)
	}
	dc := &dueCounter{fullBackend: full}
	ctx := startWorker(t, dc, ow.WorkerOptions{Concurrency: 1, ClaimAhead: 500 * time.Millisecond, ID: "idle"}, wf)
	if _, err := h.Result(ctx); err != nil {
		t.Fatalf("result: %v", err)
	}
	dc.mu.Lock()
	calls := dc.calls
	dc.mu.Unlock()
	if calls > 5 {
		t.Fatalf("%d NextDueAt queries while waiting 300 ms for one lease to run out, want a few", calls)
	}
}
