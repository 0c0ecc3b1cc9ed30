package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

// TestWorkersAndWorkflowsListTheRegistry: GET /v1/workers lists the
// test server's worker, idle, with its registered workflows and free
// slots; GET /v1/workflows lists each registered workflow as served by it
// with its example input, and a workflow nobody registered, with its
// pending run, as unserved; both refuse query parameters.
func TestWorkersAndWorkflowsListTheRegistry(t *testing.T) {
	eachBackend(t, api.Options{}, func(t *testing.T, s *server) {
		var workers api.List[api.Worker]
		s.must(http.StatusOK, "GET", "/v1/workers", nil).decode(t, &workers)
		if len(workers.Data) != 1 || workers.HasMore {
			t.Fatalf("GET /v1/workers = %+v, want the server's one worker", workers)
		}
		w := workers.Data[0]
		names := make([]string, 0, len(w.Workflows))
		for _, r := range w.Workflows {
			names = append(names, r.Name)
		}
		if w.State != "running" || w.FreeSlots != w.Concurrency || w.InUse != 0 || w.Concurrency != 10 ||
			w.SDK != "openworkflow-go" || !slices.Contains(names, "add") || !slices.IsSorted(names) {
			t.Fatalf("the idle worker is listed as %+v (workflows %v); want running, 10 free slots of 10, its workflows by name", w, names)
		}

		run := s.start("nobody-serves-this", map[string]int{"n": 1})
		var sums api.List[api.WorkflowSummary]
		s.must(http.StatusOK, "GET", "/v1/workflows", nil).decode(t, &sums)
		byName := map[string]api.WorkflowSummary{}
		for _, sum := range sums.Data {
			byName[sum.Name] = sum
		}
		add := byName["add"]
		var example any
		if err := json.Unmarshal(add.InputExample, &example); err != nil {
			t.Fatalf("add's inputExample %s: %v", add.InputExample, err)
		}
		if !add.Registered || !add.Served || !slices.Equal(add.LiveWorkers, []string{w.ID}) ||
			example.(map[string]any)["A"] != 2.0 {
			t.Fatalf("add: %+v (example %s), want registered, served by %s, with its example", add, add.InputExample, w.ID)
		}
		nobody, ok := byName["nobody-serves-this"]
		if !ok || nobody.Registered || nobody.Served || len(nobody.LiveWorkers) != 0 || nobody.Active.Pending != 1 ||
			string(nobody.InputExample) != "null" {
			t.Fatalf("nobody-serves-this (run %s): %+v, want unregistered, unserved, 1 pending run, no example", run.ID, nobody)
		}

		for _, path := range []string{"/v1/workers?limit=1", "/v1/workflows?x=1"} {
			if e := s.must(http.StatusBadRequest, "GET", path, nil).apiError(t); e.Message == "" {
				t.Errorf("GET %s: 400 without a message", path)
			}
		}
	})
}
