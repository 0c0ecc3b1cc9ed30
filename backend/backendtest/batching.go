package backendtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// batchStore returns b's BatchStore, skipping the test when it has none.
func batchStore(t testing.TB, b backend.Backend) backend.BatchStore {
	t.Helper()
	bs, ok := b.(backend.BatchStore)
	if !ok {
		t.Skip("the backend does not implement backend.BatchStore")
	}
	return bs
}

func appendItem(t testing.TB, b backend.Backend, workflow, key, item string, o backend.BatchOptions) *backend.BatchAppend {
	t.Helper()
	got, err := batchStore(t, b).AppendBatchItem(t.Context(), backend.AppendBatchItemParams{WorkflowName: workflow, Key: key, Item: json.RawMessage(item), Options: o})
	if err != nil {
		t.Fatalf("AppendBatchItem(%s, %q, %s): %v", workflow, key, item, err)
	}
	return got
}

// requireBatchRuns fails unless the runs of workflow have exactly the
// inputs want, in any order.
func requireBatchRuns(t testing.TB, b backend.Backend, workflow string, want ...string) {
	t.Helper()
	runs := listRunsOf(t, b, workflow)
	got := map[string]int{}
	for _, r := range runs {
		v, err := decodeJSON(r.Input)
		if err != nil {
			t.Fatalf("run %s input %s: %v", r.ID, r.Input, err)
		}
		canon, _ := json.Marshal(v)
		got[string(canon)]++
	}
	for _, w := range want {
		if got[w] == 0 {
			t.Fatalf("runs of %s have inputs %v, want %v", workflow, got, want)
		}
		got[w]--
	}
	if len(runs) != len(want) {
		t.Fatalf("%d runs of %s, want %d (%v)", len(runs), workflow, len(want), want)
	}
}

func testBatching(t *testing.T, s *suite) {
	opts := backend.BatchOptions{MaxSize: 3, Timeout: time.Minute}

	t.Run("the append that fills a batch flushes it into one run, items in arrival order", func(t *testing.T) {
		b := s.newBackendOn(t, newClock())
		for _, it := range []string{`"a"`, `"b"`} {
			if got := appendItem(t, b, "wf", "", it, opts); len(got.Flushed) != 0 {
				t.Fatalf("append %s flushed %d runs, want none", it, len(got.Flushed))
			}
		}
		open, err := batchStore(t, b).ListOpenBatches(t.Context(), 0)
		if err != nil || len(open) != 1 || open[0].Count != 2 || open[0].Bytes != 6 || !open[0].FlushAt.Equal(fakeEpoch.Add(time.Minute)) {
			t.Fatalf("ListOpenBatches = %+v, %v; want one batch of 2 items, 6 bytes, due in a minute", open, err)
		}
		got := appendItem(t, b, "wf", "", `"c"`, opts)
		if len(got.Flushed) != 1 || got.Count != 0 {
			t.Fatalf("third append: %+v, want one flushed run", got)
		}
		requireJSON(t, "batch run input", getRun(t, b, got.Flushed[0].ID).Input, json.RawMessage(`["a","b","c"]`))
		requireBatchRuns(t, b, "wf", `["a","b","c"]`)
		if open, _ := batchStore(t, b).ListOpenBatches(t.Context(), 0); len(open) != 0 {
			t.Fatalf("open batches after the flush: %+v", open)
		}
		if runs := claim(t, b, time.Minute, newWorkerID()); len(runs) != 1 {
			t.Fatalf("the batch's run is not claimable at once: claimed %d", len(runs))
		}
	})

	t.Run("a batch is flushed by its timeout, counted from its first item", func(t *testing.T) {
		clk := newClock()
		b := s.newBackendOn(t, clk)
		bs := batchStore(t, b)
		appendItem(t, b, "wf", "", `1`, opts)
		clk.Advance(30 * time.Second)
		appendItem(t, b, "wf", "", `2`, opts)
		clk.Advance(30*time.Second - time.Millisecond)
		n, next, ok, err := bs.FlushDueBatches(t.Context(), 0)
		if err != nil || n != 0 || !ok || !next.Equal(fakeEpoch.Add(time.Minute)) {
			t.Fatalf("FlushDueBatches before the timeout = %d, %v, %v, %v; want 0 flushed, next at +1m", n, next, ok, err)
		}
		clk.Advance(time.Millisecond)
		n, _, ok, err = bs.FlushDueBatches(t.Context(), 0)
		if err != nil || n != 1 || ok {
			t.Fatalf("FlushDueBatches at the timeout = %d, ok %v, %v; want 1 flushed and none left", n, ok, err)
		}
		requireBatchRuns(t, b, "wf", `[1,2]`)
	})

	t.Run("keys partition a workflow's batches", func(t *testing.T) {
		b := s.newBackendOn(t, newClock())
		for i := range 6 {
			key := []string{"x", "y"}[i%2]
			appendItem(t, b, "wf", key, fmt.Sprintf(`"%s%d"`, key, i), opts)
		}
		requireBatchRuns(t, b, "wf", `["x0","x2","x4"]`, `["y1","y3","y5"]`)
		appendItem(t, b, "other", "x", `"o"`, opts)
		if open, _ := batchStore(t, b).ListOpenBatches(t.Context(), 0); len(open) != 1 || open[0].WorkflowName != "other" {
			t.Fatalf("open batches = %+v, want only other's", open)
		}
	})

	t.Run("an item that would pass the max bytes flushes the batch before it", func(t *testing.T) {
		b := s.newBackendOn(t, newClock())
		o := backend.BatchOptions{MaxSize: 10, Timeout: time.Minute, MaxBytes: 10}
		appendItem(t, b, "wf", "", `1234`, o)
		appendItem(t, b, "wf", "", `5678`, o)
		got := appendItem(t, b, "wf", "", `9012`, o)
		if len(got.Flushed) != 1 || got.Count != 1 || got.Bytes != 4 {
			t.Fatalf("third append = %+v, want the first two flushed and one item open", got)
		}
		requireBatchRuns(t, b, "wf", `[1234,5678]`)
	})

	t.Run("bad items and options are refused, nothing stored", func(t *testing.T) {
		b := s.newBackendOn(t, newClock())
		bs := batchStore(t, b)
		for _, c := range []struct {
			name  string
			p     backend.AppendBatchItemParams
			field string
		}{
			{"max size 1", backend.AppendBatchItemParams{WorkflowName: "wf", Options: backend.BatchOptions{MaxSize: 1, Timeout: time.Minute}}, "batch.maxSize"},
			{"no timeout", backend.AppendBatchItemParams{WorkflowName: "wf", Options: backend.BatchOptions{MaxSize: 2}}, "batch.timeout"},
			{"negative max bytes", backend.AppendBatchItemParams{WorkflowName: "wf", Options: backend.BatchOptions{MaxSize: 2, Timeout: time.Minute, MaxBytes: -1}}, "batch.maxBytes"},
			{"bad JSON", backend.AppendBatchItemParams{WorkflowName: "wf", Item: json.RawMessage(`{`), Options: opts}, "item"},
			{"item over max bytes", backend.AppendBatchItemParams{WorkflowName: "wf", Item: json.RawMessage(`"too long"`), Options: backend.BatchOptions{MaxSize: 2, Timeout: time.Minute, MaxBytes: 4}}, "item"},
			{"no workflow", backend.AppendBatchItemParams{Options: opts}, "workflowName"},
		} {
			_, err := bs.AppendBatchItem(t.Context(), c.p)
			var fe *backend.FieldError
			if !errors.Is(err, backend.ErrInvalidArgument) || !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("%s: error %v, want ErrInvalidArgument naming %s", c.name, err, c.field)
			}
		}
		if open, _ := bs.ListOpenBatches(t.Context(), 0); len(open) != 0 {
			t.Fatalf("open batches after refused appends: %+v", open)
		}
	})

	t.Run("an append in a transaction exists if and only if it commits", func(t *testing.T) {
		b := s.newBackendOn(t, newClock())
		bs := batchStore(t, b)
		s.txStarter(t, b)
		p := backend.AppendBatchItemParams{WorkflowName: "wf", Item: json.RawMessage(`"rolled back"`), Options: opts}
		s.inTx(t, b, func(ctx context.Context, tx any) error {
			if _, err := bs.AppendBatchItemTx(ctx, tx, p); err != nil {
				return err
			}
			return errRollback
		})
		p.Item = json.RawMessage(`"kept"`)
		for range 3 {
			s.inTx(t, b, func(ctx context.Context, tx any) error {
				_, err := bs.AppendBatchItemTx(ctx, tx, p)
				return err
			})
		}
		requireBatchRuns(t, b, "wf", `["kept","kept","kept"]`)
		if _, err := bs.AppendBatchItemTx(t.Context(), "not a transaction", p); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Fatalf("AppendBatchItemTx(string) = %v, want ErrInvalidArgument", err)
		}
	})
}
