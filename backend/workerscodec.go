package backend

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// EncodeRegisteredWorkflows is the JSON text a [WorkerRegistry] stores
// for a worker's workflows, sorted by name then version ("[]" for none).
func EncodeRegisteredWorkflows(ws []RegisteredWorkflow) string {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b RegisteredWorkflow) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	if ws == nil {
		ws = []RegisteredWorkflow{}
	}
	b, _ := json.Marshal(ws) // strings only: cannot fail
	return string(b)
}

// DecodeRegisteredWorkflows parses what [EncodeRegisteredWorkflows]
// made; the error names the worker.
func DecodeRegisteredWorkflows(workerID, text string) ([]RegisteredWorkflow, error) {
	ws := []RegisteredWorkflow{}
	if err := json.Unmarshal([]byte(text), &ws); err != nil {
		return nil, fmt.Errorf("worker %q: stored workflows are not a JSON list: %w", workerID, err)
	}
	return ws, nil
}

// AddWorkflowRunCount adds n runs of status to the count of (name,
// version) in counts, read in (name, version) order: the last entry is
// that workflow's when it is there already.
func AddWorkflowRunCount(counts []WorkflowRunCount, name, version string, status RunStatus, n int) []WorkflowRunCount {
	if k := len(counts); k == 0 || counts[k-1].Name != name || counts[k-1].Version != version {
		counts = append(counts, WorkflowRunCount{Name: name, Version: version})
	}
	counts[len(counts)-1].Counts.Add(status, n)
	return counts
}
