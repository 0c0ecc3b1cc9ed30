package api

import (
	"errors"
	"net/http"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// FlowRun is the answer of GET /v1/runs/{id}/flow: an OpenFlow run as
// the flow's title and its modules (by id and summary, in order), each
// with its state, its loop iterations and branches — [openflow.RunView],
// derived by [openflow.ViewOf] from the stored run and its step attempts.
type FlowRun struct {
	// RunID and Status are the run's.
	RunID  string `json:"runId"`
	Status string `json:"status"`
	openflow.RunView
}

// FlowModule, FlowIteration and FlowBranch are the parts of a [FlowRun]:
// a module, a loop's iteration, a branch.
type (
	FlowModule    = openflow.ModuleView
	FlowIteration = openflow.IterationView
	FlowBranch    = openflow.BranchView
)

// maxFlowAttempts bounds the attempts read for a flow run's view: a run
// records at most 1000 steps (the core's step limit), so this is a guard.
const maxFlowAttempts = 2000

// getFlow answers an OpenFlow run's view: 404 not_found for an unknown
// run, 404 not_an_openflow_run for a run of another workflow.
func (h *Handler) getFlow(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := parseQuery(r); err != nil {
		return err
	}
	run, err := h.c.GetRun(r.Context(), id)
	if err != nil {
		return asAPIError(err, "id")
	}
	// Whether it is a flow run is in its input, or in its first step (a
	// directory flow's definition): ask before reading every step, so
	// that the run page of any other run pays one small read.
	if _, err := openflow.ViewOf(run, nil); errors.Is(err, openflow.ErrNotFlowRun) {
		first, err := h.c.ListSteps(r.Context(), backend.ListStepAttemptsParams{WorkflowRunID: id, Limit: 1, OmitPayloads: true})
		if err != nil {
			return asAPIError(err, "")
		}
		if len(first.Data) == 0 || first.Data[0].StepName != openflow.DefinitionStep {
			return notFlowRun(run)
		}
	}
	var attempts []backend.StepAttempt
	// The modules' states are in the steps' outputs: read them.
	p := backend.ListStepAttemptsParams{WorkflowRunID: id, Limit: 1000}
	for len(attempts) < maxFlowAttempts {
		page, err := h.c.ListSteps(r.Context(), p)
		if err != nil {
			return asAPIError(err, "")
		}
		attempts = append(attempts, page.Data...)
		if page.Next == nil {
			break
		}
		p.After = *page.Next
	}
	v, err := openflow.ViewOf(run, attempts)
	switch {
	case errors.Is(err, openflow.ErrNotFlowRun):
		return notFlowRun(run)
	case err != nil:
		return errorf(http.StatusInternalServerError, CodeInternal, "", "%s", err)
	}
	writeJSON(w, http.StatusOK, FlowRun{RunID: run.ID, Status: string(run.Status), RunView: *v})
	return nil
}

func notFlowRun(run *backend.WorkflowRun) error {
	return errorf(http.StatusNotFound, CodeNotFlowRun, "id",
		"run %s of workflow %q is not an OpenFlow run (its input holds no flow, and it read none from a directory); GET /v1/runs/%s shows it", run.ID, run.WorkflowName, run.ID)
}
