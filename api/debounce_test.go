package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// POST /v1/runs with debounce: the first start creates the run (201), the
// next join it (200, same run, the latest input); GET /v1/debounced-runs
// lists it with its key; bad combinations answer 400 naming the field.
func TestDebouncedStartsThroughTheAPI(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		// An hour's period: the worker never claims it during the test.
		deb := map[string]any{"key": "cust-1", "periodSeconds": 3600, "maxDelaySeconds": 7200}
		body := func(n int) map[string]any {
			return map[string]any{"workflowName": "echo", "input": n, "debounce": deb}
		}
		var first, again api.Run
		s.must(http.StatusCreated, "POST", "/v1/runs", body(1)).decode(t, &first)
		s.must(http.StatusOK, "POST", "/v1/runs", body(2)).decode(t, &again)
		s.must(http.StatusOK, "POST", "/v1/runs", body(3)).decode(t, &again)
		if again.ID != first.ID || string(again.Input) != "3" {
			t.Fatalf("third start answered run %s with input %s, want run %s with input 3", again.ID, again.Input, first.ID)
		}
		var list struct{ Data []api.DebouncedRun }
		s.must(http.StatusOK, "GET", "/v1/debounced-runs", nil).decode(t, &list)
		if len(list.Data) != 1 || list.Data[0].Run.ID != first.ID || list.Data[0].Key != "cust-1" || !list.Data[0].Deadline.After(list.Data[0].DueAt) {
			t.Fatalf("GET /v1/debounced-runs = %+v", list.Data)
		}
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"workflowName": "echo", "debounce": deb, "idempotencyKey": "i"}, "idempotencyKey"},
			{map[string]any{"workflowName": "echo", "debounce": deb, "delaySeconds": 5}, "availableAt"},
			{map[string]any{"workflowName": "echo", "debounce": map[string]any{"key": "k", "periodSeconds": 60, "maxDelaySeconds": 10}}, "debounce.maxDelay"},
			{map[string]any{"workflowName": "echo", "debounce": map[string]any{"key": "", "periodSeconds": 60}}, "debounce.key"},
			{map[string]any{"workflowName": "echo", "debounce": map[string]any{"key": "k", "periodSeconds": -1}}, "debounce.periodSeconds"},
			{map[string]any{"workflowName": "echo", "debounce": map[string]any{"key": "k", "periodSeconds": 1, "extra": 1}}, ""},
		} {
			r := s.do("POST", "/v1/runs", c.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("%v answered %d, want 400: %s", c.body, r.status, r.body)
			}
			if e := r.apiError(t); c.field != "" && e.Field != c.field {
				t.Errorf("%v: field %q, want %q (%s)", c.body, e.Field, c.field, e.Message)
			}
		}
		s.must(http.StatusOK, "POST", "/v1/runs/"+first.ID+"/cancel", nil)
	})
}

// POST /v1/batches appends items; the append that fills the batch
// flushes it into one run, which the worker runs with the items as input;
// GET /v1/batches lists the open batch before.
func TestBatchesThroughTheAPI(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		item := func(v string) map[string]any {
			return map[string]any{"workflowName": "echo", "key": "k", "item": v, "maxSize": 2, "timeoutSeconds": 3600}
		}
		var a api.BatchAppend
		s.must(http.StatusCreated, "POST", "/v1/batches", item("a")).decode(t, &a)
		if a.Count != 1 || len(a.Flushed) != 0 {
			t.Fatalf("first append = %+v", a)
		}
		var open struct {
			Data []struct {
				WorkflowName, Key string
				Count             int
			}
		}
		s.must(http.StatusOK, "GET", "/v1/batches", nil).decode(t, &open)
		if len(open.Data) != 1 || open.Data[0].WorkflowName != "echo" || open.Data[0].Key != "k" || open.Data[0].Count != 1 {
			t.Fatalf("GET /v1/batches = %+v", open.Data)
		}
		s.must(http.StatusCreated, "POST", "/v1/batches", item("b")).decode(t, &a)
		if a.Count != 0 || len(a.Flushed) != 1 {
			t.Fatalf("second append = %+v, want a flush", a)
		}
		run := s.waitStatus(a.Flushed[0], "completed")
		var out []string
		if err := json.Unmarshal(run.Output, &out); err != nil || len(out) != 2 || out[0] != "a" || out[1] != "b" {
			t.Fatalf("batch run output %s, want [a b]", run.Output)
		}
		bad := item("c")
		bad["maxSize"] = 1
		if e := s.must(http.StatusBadRequest, "POST", "/v1/batches", bad).apiError(t); e.Field != "batch.maxSize" {
			t.Fatalf("maxSize 1: field %q (%s)", e.Field, e.Message)
		}
	})
}
