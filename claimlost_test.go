package openworkflow_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// answerLostBackend commits a claim and then reports it failed, once, as
// when the connection to the database dies between the commit and its
// answer (a primary killed in a failover); it records the slot ids of
// every claim.
type answerLostBackend struct {
	backend.Backend
	mu    sync.Mutex
	lost  bool     // the claim's answer was lost already
	taken []string // runs the lost claim took
	slots [][]string
}

func (b *answerLostBackend) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	runs, err := b.Backend.ClaimWorkflowRuns(ctx, p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(p.WorkerIDs) > 0 {
		b.slots = append(b.slots, slices.Clone(p.WorkerIDs))
	}
	if err == nil && len(runs) > 0 && !b.lost {
		b.lost = true
		for _, r := range runs {
			b.taken = append(b.taken, r.ID)
		}
		return nil, errors.New("unexpected EOF")
	}
	return runs, err
}

// TestAClaimWhoseAnswerWasLostKeepsItsSlotIDs: a claim whose answer was
// lost quarantines its slot ids until the runs it may have taken are
// handed back; the slots then come back with their ids. (They came back
// as empty strings: the release deleted the quarantined ids from the slice
// it was iterating over, and its zeroed tail became the free slots; the
// next claim leased runs to worker id "", and a hook created in such a
// run failed it: "a hook needs a worker id". Found by test/failover.)
func TestAClaimWhoseAnswerWasLostKeepsItsSlotIDs(t *testing.T) {
	eachBackend(t, func(t *testing.T, inner backend.Backend) {
		b := &answerLostBackend{Backend: inner}
		wf := ow.Define(ow.Spec{Name: "lost-answer"}, func(ctx ow.Context, in int) (int, error) {
			if err := ow.Sleep(ctx, "nap", 10*time.Millisecond); err != nil {
				return 0, err
			}
			return ow.Run(ctx, "double", func(context.Context) (int, error) { return 2 * in, nil })
		})
		ctx := startWorker(t, b, ow.WorkerOptions{Concurrency: 4, ID: "lost-answer", LeaseDuration: time.Minute}, wf)
		client := ow.NewClient(inner)
		inputs := []int{1, 2, 3, 4, 5, 6, 7, 8}
		hs, err := wf.StartMany(ctx, client, inputs)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range hs {
			out, err := h.Result(ctx)
			if err != nil {
				t.Fatalf("run %d: %v (a run the lost claim took must be handed back, not wait for its 1 min lease)", i, err)
			}
			if out != 2*inputs[i] {
				t.Fatalf("run %d: output %d, want %d", i, out, 2*inputs[i])
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if !b.lost || len(b.taken) == 0 {
			t.Fatal("no claim's answer was lost: the test did not test")
		}
		for i, ids := range b.slots {
			seen := map[string]bool{}
			for _, id := range ids {
				if !strings.HasPrefix(id, "lost-answer/") || seen[id] {
					t.Fatalf("claim %d asked for slot ids %q: every id must be one of the worker's, once", i, ids)
				}
				seen[id] = true
			}
		}
	})
}
