package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// helperDBEnv names the database file a helper process claims from.
const helperDBEnv = "OW_SQLITE_CLAIM_HELPER_DB"

// TestClaimHelperProcess is not a test: run by
// TestWorkerProcessesNeverDoubleClaim in child processes, it claims runs
// from the file named by helperDBEnv until none is left and prints their
// ids, one a line.
func TestClaimHelperProcess(t *testing.T) {
	path := os.Getenv(helperDBEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	b, err := Open(context.Background(), path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	defer b.Close()
	worker := fmt.Sprintf("proc-%d", os.Getpid())
	for {
		runs, err := b.ClaimWorkflowRuns(context.Background(), backend.ClaimWorkflowRunsParams{
			WorkerIDs: []string{worker + "-a", worker + "-b"}, LeaseDuration: time.Hour,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "claim:", err)
			os.Exit(3)
		}
		if len(runs) == 0 {
			return
		}
		for _, r := range runs {
			fmt.Println("claimed", r.ID)
		}
	}
}

func TestWorkerProcessesNeverDoubleClaim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	b, path := openTest(t, nil)
	const runs, procs = 90, 3
	for range runs {
		mustCreate(t, b, backend.CreateWorkflowRunParams{})
	}
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestClaimHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperDBEnv+"="+path)
			cmd.Stdout = &outs[i]
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("%w: %s", err, stderr.String())
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for i := range procs {
		if errs[i] != nil {
			t.Fatalf("process %d: %v", i, errs[i])
		}
		sc := bufio.NewScanner(&outs[i])
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "claimed "); ok {
				if prev, dup := seen[id]; dup {
					t.Errorf("run %s claimed by processes %d and %d", id, prev, i)
				}
				seen[id] = i
			}
		}
	}
	if len(seen) != runs {
		t.Fatalf("processes claimed %d runs, want %d", len(seen), runs)
	}
}

// Backends opened with share=false below stand for other processes: each
// has its own in-process lock and hub, so they meet only at the file's
// lock (BEGIN IMMEDIATE, busy waits and retries). What two backends of one
// namespace do in one process is backendtest's.

func TestKeyedCreatesOnSeparateHandlesReturnOneRun(t *testing.T) {
	b, path := openTest(t, nil)
	other := openAt(t, path, nil, false) // as another process
	const n = 10
	got := make([]string, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Go(func() {
			be := b
			if i%2 == 1 {
				be = other
			}
			r, err := be.CreateWorkflowRun(context.Background(), backend.CreateWorkflowRunParams{WorkflowName: "wf", IdempotencyKey: ptr("k")})
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			got[i] = r.ID
		})
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] {
			t.Fatalf("keyed creates returned several runs: %v", got)
		}
	}
	counts, err := b.CountWorkflowRuns(t.Context())
	if err != nil || counts.Pending != 1 {
		t.Fatalf("counts = %+v, %v; want one pending run", counts, err)
	}
}

func TestConcurrentClaimersOnSeparateHandlesNeverDoubleClaim(t *testing.T) {
	a, path := openTest(t, nil)
	b := openAt(t, path, nil, false)
	const runs = 60
	for range runs {
		mustCreate(t, a, backend.CreateWorkflowRunParams{})
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			be := a
			if g%2 == 1 {
				be = b
			}
			for {
				w1, w2 := fmt.Sprintf("g%d-a", g), fmt.Sprintf("g%d-b", g)
				got, err := be.ClaimWorkflowRuns(context.Background(), backend.ClaimWorkflowRunsParams{WorkerIDs: []string{w1, w2}, LeaseDuration: time.Hour})
				if err != nil {
					t.Errorf("claimer %d: %v", g, err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, r := range got {
					if prev, dup := seen[r.ID]; dup {
						t.Errorf("run %s claimed twice (%s, then %s)", r.ID, prev, *r.WorkerID)
					}
					seen[r.ID] = *r.WorkerID
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != runs {
		t.Fatalf("claimed %d runs, want %d", len(seen), runs)
	}
}

// TestConcurrentBatchesOnSeparateHandlesAllApply sends batches from many
// goroutines through two backends on one file, one standing for another
// process.
func TestConcurrentBatchesOnSeparateHandlesAllApply(t *testing.T) {
	a, path := openTest(t, nil)
	other := openAt(t, path, nil, false)
	const goroutines, runsEach, stepsEach = 6, 5, 4
	type owned struct{ id, worker string }
	var all [][]owned
	for g := range goroutines {
		var mine []owned
		for range runsEach {
			r := mustCreate(t, a, backend.CreateWorkflowRunParams{})
			w := fmt.Sprintf("g%d-%s", g, r.ID)
			got := mustClaim(t, a, time.Hour, w)
			if len(got) != 1 || got[0].ID != r.ID {
				t.Fatalf("claimed %v, want %s", ids(got), r.ID)
			}
			mine = append(mine, owned{r.ID, w})
		}
		all = append(all, mine)
	}
	var wg sync.WaitGroup
	for g, mine := range all {
		be := a
		if g%2 == 1 {
			be = other
		}
		wg.Go(func() {
			for s := range stepsEach {
				var ws [][]backend.Write
				for _, o := range mine {
					g := []backend.Write{insertCompleted(o.id, o.worker, fmt.Sprintf("s%d", s), fmt.Sprint(s))}
					if s == stepsEach-1 {
						g = append(g, backend.Write{Kind: backend.WriteCompleteRun, WorkflowRunID: o.id, WorkerID: o.worker})
					}
					ws = append(ws, g)
				}
				for i, err := range be.ApplyWrites(t.Context(), ws) {
					if err != nil {
						t.Errorf("goroutine %d batch %d write %d: %v", g, s, i, err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, mine := range all {
		for _, o := range mine {
			if n := len(steps(t, a, o.id)); n != stepsEach {
				t.Errorf("run %s has %d attempts, want %d", o.id, n, stepsEach)
			}
			if r := getRun(t, a, o.id); r.Status != backend.RunCompleted {
				t.Errorf("run %s is %s, want completed", o.id, r.Status)
			}
		}
	}
}
