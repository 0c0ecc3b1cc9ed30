package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
)

// runData is a run's page.
type runData struct {
	Run      api.Run
	State    runState
	Error    *errorView
	Steps    []stepView
	Timeline timeline
	// DAG is the graph of a DAG workflow run (nil for another run).
	DAG *dagGraph
	// Flow is the title and graph of an OpenFlow run (nil for another run).
	Flow  *flowView
	Hooks []api.Hook
	// EventWaits are the run's waits for events (ow.WaitForEvent).
	EventWaits []api.EventWait
	// Updates are the run's updates (Client.UpdateRun), in admission
	// order.
	Updates  []api.RunUpdate
	Streams  []backend.StreamInfo
	Children []childLink
	// ParentRunID and ParentStep are the run and step that started this
	// run, for a child.
	ParentRunID, ParentStep string
	// Signals are the signals the run waits for now (prefilled in the
	// send form).
	Signals []string
	// WaitHookID is the hook the run waits on now, if any.
	WaitHookID string
	// Approvals are the OpenFlow modules waiting for approval, shown with
	// Approve and Reject; ApprovalTokens their hooks' tokens, which the
	// hooks table does not offer to resume generically.
	Approvals      []approvalView
	ApprovalTokens map[string]bool
	// Began is when the run was first claimed (see firstActivity).
	Began     *time.Time
	Terminal  bool
	CanCancel bool
	CanRetry  bool
	// CanPause and CanResume offer POST /v1/runs/{id}/pause (a run not
	// finished nor paused) and /resume (a paused or canceled run).
	CanPause  bool
	CanResume bool
	// ForkSteps are the steps a fork may start again from: the run's
	// durable keys in the order they first ran (marks left out).
	ForkSteps []string
	// Attempts counts the step attempts (retry marks left out).
	Attempts int
	// StepsTruncated: the run has more attempts than one page shows.
	StepsTruncated bool
	// Claims counts the run's claims by workers (see claims).
	Claims int
	// LastError is the failure a run that goes on was rescheduled for
	// (the API's lastError), not its outcome, when no attempt shows it (a
	// failure outside steps); nil for an ended run.
	LastError *errorView
	// Form holds the values of an action's form that failed, to show
	// them again beside the error.
	Form actionForm
	// Unserved says that no live worker serves the active run's workflow
	// (ow.NoLiveWorkerMessage); "" when one does, or for a finished run.
	Unserved string

	// fingerprint hashes the API answers the page was made from, so a
	// live view sends an update only when something changed.
	fingerprint [sha256.Size]byte
}

// stepView is one attempt in the attempts table.
type stepView struct {
	api.Step
	// N is the attempt's number among its step's attempts, from 1.
	N     int
	Class string
	Error *errorView
	// Wait is the wait's context (until, signal), for waits.
	Until  *time.Time
	Signal string
}

// childLink is a child run started by one of the run's steps.
type childLink struct {
	StepName, RunID, Status string
}

// actionForm is what a failed action's form held.
type actionForm struct {
	Action, Field, Problem string
	Signal, Data           string
	Token, Payload         string
	Step                   string // the fork's step
	// Values are an approval form's fields by name, and its approver.
	Values map[string]string
}

func (d *Dashboard) runPage(w http.ResponseWriter, r *http.Request) {
	data, err := d.loadRun(r.Context(), r.PathValue("id"), time.Now())
	if err != nil {
		if apiStatus(err) == http.StatusNotFound {
			d.fail(w, r, http.StatusNotFound, "No such run", "No run has the id "+r.PathValue("id")+" in this namespace. It may have been deleted, or belong to another namespace.")
			return
		}
		d.failAPI(w, r, "The run could not be read", err)
		return
	}
	d.renderRun(w, r, http.StatusOK, data, "")
}

// renderRun renders a run's page; problem is an action's failure.
func (d *Dashboard) renderRun(w http.ResponseWriter, r *http.Request, status int, data *runData, problem string) {
	title := data.Run.WorkflowName
	if data.Flow != nil {
		title = data.Flow.Title
	}
	v := d.view(r, title+" · "+shortID(data.Run.ID), "runs", data)
	v.Problem = problem
	if !data.Terminal {
		// The live view starts from what this page shows: it sends only
		// what changes after.
		v.Live = "/runs/" + url.PathEscape(data.Run.ID) + "/live?since=" + hex.EncodeToString(data.fingerprint[:])
	}
	d.render(w, r, status, "run", v)
}

// loadRun reads a run, its attempts, hooks, updates and streams through
// the API,
// then its children's statuses and its parent.
func (d *Dashboard) loadRun(ctx context.Context, id string, now time.Time) (*runData, error) {
	base := "/v1/runs/" + url.PathEscape(id)
	data := &runData{}
	h := sha256.New()
	raw, err := d.api.call(ctx, http.MethodGet, base, nil, nil, &data.Run)
	if err != nil {
		return nil, err
	}
	h.Write(raw)
	var steps api.List[api.Step]
	// The run page shows the steps' outputs and the hooks' metadata: asked
	// for (resolveData=all), within the API's byte budget of a page.
	if raw, err = d.api.call(ctx, http.MethodGet, base+"/steps", url.Values{"limit": {"1000"}, "resolveData": {"all"}}, nil, &steps); err != nil {
		return nil, err
	}
	h.Write(raw)
	data.StepsTruncated = steps.HasMore
	var hooks api.List[api.Hook]
	if raw, err = d.api.call(ctx, http.MethodGet, base+"/hooks", url.Values{"resolveData": {"all"}}, nil, &hooks); err != nil && apiCode(err) != api.CodeNotSupported {
		return nil, err
	}
	h.Write(raw)
	data.Hooks = hooks.Data
	data.Approvals = approvalsOf(hooks.Data)
	data.ApprovalTokens = map[string]bool{}
	for _, a := range data.Approvals {
		data.ApprovalTokens[a.Token] = true
	}
	var eventWaits api.List[api.EventWait]
	if raw, err = d.api.call(ctx, http.MethodGet, base+"/event-waits", nil, nil, &eventWaits); err != nil && apiCode(err) != api.CodeNotSupported {
		return nil, err
	}
	h.Write(raw)
	data.EventWaits = eventWaits.Data
	var updates api.List[api.RunUpdate]
	if raw, err = d.api.call(ctx, http.MethodGet, base+"/updates", nil, nil, &updates); err != nil && apiCode(err) != api.CodeNotSupported {
		return nil, err
	}
	h.Write(raw)
	data.Updates = updates.Data
	var streams api.List[backend.StreamInfo]
	if raw, err = d.api.call(ctx, http.MethodGet, base+"/streams", nil, nil, &streams); err != nil && apiCode(err) != api.CodeNotSupported {
		return nil, err
	}
	h.Write(raw)
	data.Streams = streams.Data

	// A DAG run's graph; any other run answers not_a_dag_run.
	var dagRun api.DAGRun
	raw, err = d.api.call(ctx, http.MethodGet, base+"/dag", url.Values{"resolveData": {"none"}}, nil, &dagRun)
	switch {
	case err == nil:
		h.Write(raw)
		first := map[string]string{}
		for _, s := range steps.Data {
			if _, ok := first[s.StepName]; !ok {
				first[s.StepName] = s.ID
			}
		}
		data.DAG = buildDAG(&dagRun, first)
	case apiCode(err) != api.CodeNotDAGRun:
		return nil, err
	}

	// An OpenFlow run's title and graph; any other run answers
	// not_an_openflow_run.
	var flowRun api.FlowRun
	raw, err = d.api.call(ctx, http.MethodGet, base+"/flow", nil, nil, &flowRun)
	switch {
	case err == nil:
		h.Write(raw)
		data.Flow = buildFlow(&flowRun)
	case apiCode(err) != api.CodeNotFlowRun:
		return nil, err
	}

	run := &data.Run
	data.Began = firstActivity(run, steps.Data)
	data.State = describe(run, steps.Data, now)
	if run.Status == "completed" || run.Status == "failed" {
		data.State.Explain = explainFinished(run, data.Began, data.State.Explain)
	}
	if data.DAG != nil && data.DAG.Status == "compensating" {
		// Stored running (for TypeScript readers of the database), but
		// undoing its steps: say so.
		data.State.Class, data.State.Label = "compensating", "compensating"
		data.State.Explain = "A step failed for good: the compensate handlers of the steps done run one after another, in reverse order (the DAG shows the chain). " + data.State.Explain
	}
	if data.DAG != nil && data.DAG.Status == "compensation_failed" {
		// Stored failed like a compensated run, but not every step was
		// undone: say so, never "compensated".
		data.State.Class, data.State.Label = "failed", "compensation failed"
		data.State.Explain = "A step failed for good, and at least one compensation failed for good too: the steps were not all undone (the DAG shows which). It cannot be retried; start a new run."
	}
	data.Error = viewError(run.Error)
	data.Claims = claims(run)
	data.Terminal = run.Status == "completed" || run.Status == "failed" || run.Status == "canceled"
	if !data.Terminal && !slices.ContainsFunc(steps.Data, func(s api.Step) bool { return backend.SameJSON(s.Error, run.LastError) }) {
		data.LastError = viewError(run.LastError)
	}
	data.CanCancel = !data.Terminal
	data.CanPause = !data.Terminal && !run.Paused
	data.CanResume = run.Paused || run.Status == "canceled"
	if !data.Terminal {
		if data.Unserved, err = d.unserved(ctx, run); err != nil {
			// Advisory, as the registry is: the run is shown all the same.
			data.Unserved = "Whether a live worker serves this workflow could not be read: " + err.Error()
		}
		h.Write([]byte(data.Unserved)) // a worker starting or going changes the page
	}
	// A DAG run that compensated is stored failed, but its steps were
	// undone: the API refuses to retry it forward (run_not_retryable).
	data.CanRetry = run.Status == "failed" && (data.DAG == nil ||
		data.DAG.Status != "compensated" && data.DAG.Status != "compensation_failed")
	data.Timeline = buildTimeline(run, steps.Data, now)
	if data.State.Wait != nil {
		c, _ := readWait(data.State.Wait)
		if c.Signal != "" {
			data.Signals = append(data.Signals, c.Signal)
		}
		data.WaitHookID = c.HookID
	}
	n := map[string]int{}
	for _, s := range steps.Data {
		n[s.StepName]++
		sv := stepView{Step: s, N: n[s.StepName], Class: attemptClass(run, &s), Error: viewError(s.Error)}
		if sv.Error == nil && s.Kind == "function" {
			sv.Error = viewError(api.ModuleError(s.Output)) // an OpenFlow module that raised
		}
		if s.Kind != "function" && s.Kind != "retry" {
			c, until := readWait(&s)
			sv.Until, sv.Signal = until, c.Signal
		}
		data.Steps = append(data.Steps, sv)
		if s.Kind != "retry" {
			data.Attempts++
			if n[s.StepName] == 1 {
				data.ForkSteps = append(data.ForkSteps, s.StepName)
			}
		}
		if s.Kind == "workflow" && s.ChildRunID != nil {
			data.Children = append(data.Children, childLink{StepName: s.StepName, RunID: *s.ChildRunID})
		}
	}

	// The children's statuses and the parent, read at once.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	const maxChildLookups = 50 // beyond, the links show without a status
	for i := range data.Children[:min(len(data.Children), maxChildLookups)] {
		c := &data.Children[i]
		wg.Add(1)
		go func() { // owned by loadRun, which waits for it
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var child api.Run
			if d.api.get(ctx, "/v1/runs/"+url.PathEscape(c.RunID), url.Values{"resolveData": {"none"}}, &child) == nil {
				c.Status = describe(&child, nil, now).Label
			}
		}()
	}
	if run.ParentStepID != nil {
		wg.Add(1)
		go func() { // owned by loadRun, which waits for it
			defer wg.Done()
			var parent api.Step
			if d.api.get(ctx, "/v1/steps/"+url.PathEscape(*run.ParentStepID), url.Values{"resolveData": {"none"}}, &parent) == nil {
				data.ParentRunID, data.ParentStep = parent.RunID, parent.StepName
			}
		}()
	}
	wg.Wait()
	for _, c := range data.Children {
		h.Write([]byte(c.RunID + c.Status))
	}
	copy(data.fingerprint[:], h.Sum(nil))
	return data, ctx.Err()
}

// unserved returns ow.NoLiveWorkerMessage for run when no live worker of
// the registry (GET /v1/workflows) serves its workflow and version; ""
// when one does, or when the backend keeps no registry.
func (d *Dashboard) unserved(ctx context.Context, run *api.Run) (string, error) {
	var page api.List[api.WorkflowSummary]
	if err := d.api.get(ctx, "/v1/workflows", nil, &page); err != nil {
		if apiCode(err) == api.CodeNotSupported {
			return "", nil
		}
		return "", err
	}
	version := deref(run.Version)
	for _, s := range page.Data {
		if s.Name == run.WorkflowName && deref(s.Version) == version && s.Served {
			return "", nil
		}
	}
	return ow.NoLiveWorkerMessage(run.WorkflowName, version), nil
}
