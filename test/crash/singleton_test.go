package crash

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// startSingleton starts a run of the counting workflow (limitedWorkflow,
// without limits) for key, a singleton start of key in mode.
func startSingleton(t *testing.T, c *ow.Client, key string, mode ow.SingletonMode) *ow.Handle[string] {
	t.Helper()
	h, err := limitedWorkflow.Start(t.Context(), c, key, ow.WithSingleton(key, mode))
	if err != nil {
		t.Fatalf("start a singleton run of key %s: %v", key, err)
	}
	return h
}

// Three worker processes execute the runs of a singleton key started in
// mode queue one at a time, in the order they were started, while runs
// of other keys execute beside them.
func TestSingletonQueueHoldsAcrossThreeWorkerProcesses(t *testing.T) {
	t.Parallel()
	for _, mk := range limitsTargets(t) {
		tg := mk(t)
		t.Run(tg.kind, func(t *testing.T) {
			t.Parallel()
			keys := []string{"k0", "k1", "k2"}
			client, counters := setUpLimits(t, tg, ow.Limits{}, keys...)
			byKey := map[string][]string{}
			var ids []string
			for i := range 15 {
				k := keys[i%len(keys)]
				h := startSingleton(t, client, k, ow.SingletonQueue)
				if first := len(byKey[k]) == 0; first == (h.Run.AvailableAt == nil) {
					t.Fatalf("run %d of key %s: available at %v; want only the key's first run due", len(byKey[k]), k, h.Run.AvailableAt)
				}
				byKey[k] = append(byKey[k], h.ID)
				ids = append(ids, h.ID)
			}
			stepLog := filepath.Join(t.TempDir(), "steps.log")
			cfg := limitsWorkerConfig(tg, stepLog, ow.Limits{}, 150*time.Millisecond)
			startReady(t, stepLog, cfg, cfg, cfg)
			runs := waitCompleted(t, client, 3*time.Minute, ids...)
			byID := map[string]*backend.WorkflowRun{}
			for _, r := range runs {
				byID[r.ID] = r
			}

			peaks, err := counters.peaks(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("most steps running at once: %v", peaks)
			for _, k := range keys {
				if peaks[k] != 1 {
					t.Errorf("key %s: at most %d steps ran at once, want 1", k, peaks[k])
				}
				// FIFO: each run of the key started after the one started
				// before it. (That they never overlapped is the peak's
				// proof: started_at is the claim transaction's start,
				// which may precede the commit of the end that released
				// the run, so it is not compared with finished_at.)
				for i := 1; i < len(byKey[k]); i++ {
					prev, cur := byID[byKey[k][i-1]], byID[byKey[k][i]]
					if cur.StartedAt == nil || prev.StartedAt == nil || !cur.StartedAt.After(*prev.StartedAt) {
						t.Errorf("key %s: run %d started at %v, not after run %d (%v)", k, i, cur.StartedAt, i-1, prev.StartedAt)
					}
				}
			}
			if peaks[allKeys] < 2 {
				t.Errorf("at most %d steps ran at once in all: the keys did not run beside one another", peaks[allKeys])
			}
		})
	}
}

// Cancel-in-progress across three worker processes: each start of the key
// cancels the run before it, which its worker stops at its step (the
// step's context is canceled and its result never committed); only the
// last run completes.
func TestSingletonCancelInProgressAcrossThreeWorkerProcesses(t *testing.T) {
	t.Parallel()
	for _, mk := range limitsTargets(t) {
		tg := mk(t)
		t.Run(tg.kind, func(t *testing.T) {
			t.Parallel()
			client, _ := setUpLimits(t, tg, ow.Limits{}, "k")
			stepLog := filepath.Join(t.TempDir(), "steps.log")
			cfg := limitsWorkerConfig(tg, stepLog, ow.Limits{}, 3*time.Second)
			startReady(t, stepLog, cfg, cfg, cfg)
			var ids []string
			for i := range 4 {
				h := startSingleton(t, client, "k", ow.SingletonCancel)
				ids = append(ids, h.ID)
				// Wait until a worker executes the run's step, so that the
				// next start cancels it in progress.
				waitFor(t, time.Minute, fmt.Sprintf("run %d's step to start", i), func() (bool, error) {
					steps, err := listSteps(t.Context(), client, h.ID)
					return len(steps) > 0, err
				})
			}
			waitCompleted(t, client, 2*time.Minute, ids[len(ids)-1])
			for i, id := range ids[:len(ids)-1] {
				r, err := client.GetRun(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != backend.RunCanceled {
					t.Errorf("run %d is %s, want canceled by the next start", i, r.Status)
				}
				steps, err := listSteps(t.Context(), client, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range steps {
					if s.Status == backend.StepCompleted {
						t.Errorf("run %d, canceled in its step, has its step %s completed", i, s.StepName)
					}
				}
			}
		})
	}
}
