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
