package openworkflow

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/openworkflow-go/openworkflow/backend"
)

// workerRegistry returns the client's backend as a WorkerRegistry, or an
// error wrapping backend.ErrNotSupported.
func (c *Client) workerRegistry(op string) (backend.WorkerRegistry, error) {
	wr, ok := c.b.(backend.WorkerRegistry)
	if !ok {
		return nil, fmt.Errorf("%s: %w: the backend (%T) keeps no registry of workers (backend.WorkerRegistry)", op, backend.ErrNotSupported, c.b)
	}
	return wr, nil
}

// ListWorkers lists the namespace's Go workers from the registry of
// workers, by id: running (idle ones included), draining, stopped, or
// gone (silent for 3 of their heartbeat intervals); workers silent for
// 24 h are forgotten. TypeScript workers write no record and are not
// listed. Errors wrap backend.ErrNotSupported when the backend keeps no
// registry (both built-in backends do), or are the backend's.
func (c *Client) ListWorkers(ctx context.Context) ([]backend.WorkerRecord, error) {
	wr, err := c.workerRegistry("list workers")
	if err != nil {
		return nil, err
	}
	return wr.ListWorkers(ctx)
}

// WorkflowSummary is one workflow (name and version) of the namespace as
// [Client.ListWorkflows] describes it.
type WorkflowSummary struct {
	// Name and Version identify the workflow (Version "" for unversioned).
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Registered says whether a listed worker (of any state) registered
	// it; false for a workflow known only by its active runs.
	Registered bool `json:"registered"`
	// InputExample is the example input a registering worker gave
	// (Spec.InputExample; the first non-empty one by worker id), "" for
	// none.
	InputExample string `json:"inputExample,omitempty"`
	// LiveWorkers are the ids of the running workers that registered it,
	// by id: empty when no live Go worker serves it.
	LiveWorkers []string `json:"liveWorkers"`
	// Active counts its pending and running runs (terminal runs are not
	// counted here; GET /v1/runs/counts has the namespace's totals).
	Active backend.RunCounts `json:"active"`
}

// Served reports whether a live worker serves the workflow.
func (s WorkflowSummary) Served() bool { return len(s.LiveWorkers) > 0 }

// ListWorkflows describes the namespace's workflows, by name then
// version: every workflow registered by a worker of the registry, with
// its example input and the live workers serving it, and every workflow
// with pending or running runs, registered or not (a run of a workflow
// nobody serves waits until a worker registers it). Two reads: the
// registry and the active runs' counts. Errors are [Client.ListWorkers]'s.
func (c *Client) ListWorkflows(ctx context.Context) ([]WorkflowSummary, error) {
	wr, err := c.workerRegistry("list workflows")
	if err != nil {
		return nil, err
	}
	workers, err := wr.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := wr.CountActiveRunsByWorkflow(ctx)
	if err != nil {
		return nil, err
	}
	return summarizeWorkflows(workers, counts), nil
}

// summarizeWorkflows joins the registry's workers (by id) and the active
// runs' counts into one summary per workflow name and version.
func summarizeWorkflows(workers []backend.WorkerRecord, counts []backend.WorkflowRunCount) []WorkflowSummary {
	byKey := map[[2]string]*WorkflowSummary{}
	get := func(name, version string) *WorkflowSummary {
		k := [2]string{name, version}
		s := byKey[k]
		if s == nil {
			s = &WorkflowSummary{Name: name, Version: version, LiveWorkers: []string{}}
			byKey[k] = s
		}
		return s
	}
	for _, w := range workers {
		for _, r := range w.Workflows {
			s := get(r.Name, r.Version)
			s.Registered = true
			if s.InputExample == "" {
				s.InputExample = r.InputExample
			}
			if w.Live() {
				s.LiveWorkers = append(s.LiveWorkers, w.ID)
			}
		}
	}
	for _, c := range counts {
		get(c.Name, c.Version).Active = c.Counts
	}
	out := make([]WorkflowSummary, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b WorkflowSummary) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out
}

// NoLiveWorkerMessage is the sentence a run page and `ow runs get` show
// for an active run of a workflow no live worker serves: it names the
// workflow and version and says what to do. TypeScript workers write no
// record, so a run one of them would take is said unserved too, and the
// sentence says so.
func NoLiveWorkerMessage(name, version string) string {
	v := ""
	if version != "" {
		v = " (version " + version + ")"
	}
	return fmt.Sprintf("no live worker serves workflow %q%s: the run waits until one registers it; start one with "+
		"ow.NewWorker(…).Register(yourWorkflow) in your program (or ow worker / ow dev for flows and the samples), "+
		"and check with ow workflows (TypeScript workers are not listed there)", name, v)
}

// UnservedReason returns [NoLiveWorkerMessage] for r when it is pending
// or running and no running worker of the registry registered its
// workflow (name and version); "" when it is finished, when it is served,
// or when the backend keeps no registry of workers. Errors are the
// backend's.
func (c *Client) UnservedReason(ctx context.Context, r *backend.WorkflowRun) (string, error) {
	wr, ok := c.b.(backend.WorkerRegistry)
	if !ok || r.Status.Terminal() {
		return "", nil
	}
	ws, err := wr.ListWorkers(ctx)
	if err != nil {
		return "", err
	}
	version := ""
	if r.Version != nil {
		version = *r.Version
	}
	for _, w := range ws {
		if w.Live() && slices.ContainsFunc(w.Workflows, func(rw backend.RegisteredWorkflow) bool { return rw.Name == r.WorkflowName && rw.Version == version }) {
			return "", nil
		}
	}
	return NoLiveWorkerMessage(r.WorkflowName, version), nil
}
