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

// claimRecorder remembers when each run was claimed.
type claimRecorder struct {
	backend.Backend
	mu     sync.Mutex
	claims map[string][]time.Time
}

func (c *claimRecorder) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	runs, err := c.Backend.ClaimWorkflowRuns(ctx, p)
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
	e := newEnvWithClock(t, time.Now, nil)
	rec := &claimRecorder{Backend: e.b, claims: map[string][]time.Time{}}
	w := ow.NewWorker(rec, ow.WorkerOptions{Concurrency: 2, ClaimAhead: ahead, ID: "ahead"})
	if err := w.Register(wf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
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

func TestAWaitDueWithinClaimAheadIsHeldRatherThanClaimedOverAndOver(t *testing.T) {
	// A signal wait's timeout is not a sleep: the pre-pass does not hold
	// it, so the pass that suspends on it holds the run until it is due.
	// Parking it at once would let the claim ahead take it back before it
	// is due, again and again.
	wf := ow.Define(ow.Spec{Name: "short-wait"}, func(ctx ow.Context, _ int) (bool, error) {
		_, received, err := ow.WaitForSignal[int](ctx, "never", ow.WaitOptions{Timeout: 150 * time.Millisecond})
		return received, err
	})
	e, id, claims := runClaimAhead(t, 300*time.Millisecond, wf)
	if got := output[bool](e, id); got {
		t.Fatal("received a signal nobody sent")
	}
	if len(claims) != 2 {
		t.Fatalf("the run was claimed %d times, want 2 (the wait's pass, then once it was due)", len(claims))
	}
}
