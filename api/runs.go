package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// startRunRequest is the body of POST /v1/runs.
type startRunRequest struct {
	// WorkflowName (required) and Version ("" or absent: unversioned)
	// route the run to the workers that registered it.
	WorkflowName string  `json:"workflowName"`
	Version      *string `json:"version"`
	// Input is the run's input, any JSON (absent: null).
	Input json.RawMessage `json:"input"`
	// IdempotencyKey makes a repeated start within 24 hours return the
	// first run: 200 (not 201) when its input is the same JSON value,
	// 409 idempotency_conflict when it is not (the new input would be
	// dropped).
	IdempotencyKey *string `json:"idempotencyKey"`
	// StartAt or DelaySeconds delay the start (at most one).
	StartAt      *string  `json:"startAt"`
	DelaySeconds *float64 `json:"delaySeconds"`
	// DeadlineAt fails the run if it has not finished by then.
	DeadlineAt *string `json:"deadlineAt"`
	// ConcurrencyKey is the key the per-key limits of the workflow count
	// the run under; Priority orders claims (ow.WithConcurrencyKey,
	// ow.WithPriority).
	ConcurrencyKey *string `json:"concurrencyKey"`
	Priority       *int64  `json:"priority"`
	// SearchAttributes are stored with the run (ow.WithSearchAttributes):
	// a string is a keyword, an array of strings a keyword list, a number
	// an int (whole) or a float, true/false a bool; a name declared as a
	// time takes an RFC 3339 string.
	SearchAttributes map[string]json.RawMessage `json:"searchAttributes"`
	// Debounce debounces the start (ow.WithDebounce): 200 when it joined
	// the pending run of its key, 201 when it created the run.
	Debounce *debounceRequest `json:"debounce"`
	// Singleton makes the start a singleton start (ow.WithSingleton): at
	// most one active run of the workflow per key. In mode skip with an
	// active run nothing is started and the answer is that run, 200, with
	// singletonSkipped true — or, with errorOnSkip, 409
	// singleton_skipped naming it.
	Singleton *startSingleton `json:"singleton"`
	// Fairness puts the run under fair shares between keys
	// (ow.WithFairness): claims take turns between the keys whose runs
	// wait, in proportion to their weights.
	Fairness *startFairness `json:"fairness"`
}

// startFairness is StartRunRequest.fairness.
type startFairness struct {
	Key    string   `json:"key"`
	Weight *float64 `json:"weight"`
}

// startSingleton is StartRunRequest.singleton.
type startSingleton struct {
	Key         string `json:"key"`
	Mode        string `json:"mode"`
	ErrorOnSkip bool   `json:"errorOnSkip"`
}

// MaxStartWait is the longest POST /v1/runs?wait=… waits for the run to
// finish: a longer wait is refused (400) rather than cut, so that a
// caller never mistakes the cap for its own choice.
const MaxStartWait = 60 * time.Second

func (h *Handler) startRun(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "wait")
	if err != nil {
		return err
	}
	wait, err := startWait(q.str("wait"))
	if err != nil {
		return err
	}
	var req startRunRequest
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	opts, err := req.options(time.Now())
	if err != nil {
		return err
	}
	version := ""
	if req.Version != nil {
		version = *req.Version
	}
	input := any(nil)
	if req.Input != nil {
		input = req.Input
	}
	handle, err := h.c.StartByName(r.Context(), req.WorkflowName, version, input, opts...)
	if err != nil {
		return asAPIError(err, "singleton")
	}
	if handle.InputDiffers {
		return asAPIError(handle.Conflict(), "idempotencyKey")
	}
	status := http.StatusCreated
	if handle.Reused || handle.SingletonSkipped || handle.Debounced {
		status = http.StatusOK // a replay, a skipped singleton start, or a start joining its burst's run
	}
	run := handle.Run
	if wait > 0 {
		if run, err = h.awaitRun(r.Context(), handle, wait); err != nil {
			return err
		}
		if !run.Status.Terminal() {
			status = http.StatusAccepted // started, not finished within the wait
		}
	}
	out := RunOf(run, false)
	out.SingletonSkipped = handle.SingletonSkipped
	attrs, err := h.searchAttributes(r.Context(), *run)
	if err != nil {
		return asAPIError(err, "")
	}
	out.SearchAttributes = attrs[run.ID]
	writeJSON(w, status, out)
	return nil
}

// startWait reads POST /v1/runs's wait parameter: a Go duration ("1.5s",
// "300ms") or a number of seconds, above 0 and at most MaxStartWait; ""
// is no wait.
func startWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return 0, badField("wait", "wait must be a duration such as 30s or 500ms, or a number of seconds, got %q", s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 || d > MaxStartWait {
		return 0, badField("wait", "wait must be more than 0 and at most %s, got %q", MaxStartWait, s)
	}
	return d, nil
}

// awaitRun waits up to d for the started run to finish (Result, which
// wakes on the backend's completion event) and returns the run as it then
// stands: finished, or still pending or running when d passed first. Only
// a failure to read the run is an error; the request's own end (the
// caller left) answers the run as started.
func (h *Handler) awaitRun(ctx context.Context, handle *ow.RunHandle, d time.Duration) (*backend.WorkflowRun, error) {
	if handle.Run != nil && handle.Run.Status.Terminal() {
		return handle.Run, nil // a replay of a finished run
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	_, err := handle.Result(wctx)
	cancel()
	if ctx.Err() != nil {
		return handle.Run, nil
	}
	var failed *ow.RunFailedError
	if err != nil && !errors.As(err, &failed) && !errors.Is(err, ow.ErrRunCanceled) && !errors.Is(err, context.DeadlineExceeded) {
		return nil, asAPIError(err, "")
	}
	run, err := h.c.GetRun(ctx, handle.ID)
	if err != nil {
		return nil, asAPIError(err, "")
	}
	return run, nil
}

// options checks the request and turns it into start options.
func (req *startRunRequest) options(now time.Time) ([]ow.StartOption, error) {
	if req.WorkflowName == "" {
		return nil, badField("workflowName", "workflowName is required: the name the workflow was registered with")
	}
	if !backend.ValidText(req.WorkflowName) || len(req.WorkflowName) > backend.MaxWorkflowNameLength {
		return nil, badField("workflowName", "workflowName must be 1 to %d bytes of text", backend.MaxWorkflowNameLength)
	}
	if req.Version != nil && (!backend.ValidText(*req.Version) || len(*req.Version) > backend.MaxVersionLength) {
		return nil, badField("version", "version must be text of at most %d bytes", backend.MaxVersionLength)
	}
	if req.Input != nil {
		if err := backend.ValidateJSON(req.Input); err != nil {
			return nil, badField("input", "input cannot be stored: %s", err)
		}
	}
	var opts []ow.StartOption
	if k := req.IdempotencyKey; k != nil {
		if *k == "" || len(*k) > backend.MaxIdempotencyKeyLength || !backend.ValidText(*k) {
			return nil, badField("idempotencyKey", "idempotencyKey must be 1 to %d bytes of text", backend.MaxIdempotencyKeyLength)
		}
		opts = append(opts, ow.WithIdempotencyKey(*k))
	}
	startAt, err := bodyTime("startAt", req.StartAt)
	if err != nil {
		return nil, err
	}
	if d := req.DelaySeconds; d != nil {
		if startAt != nil {
			return nil, badField("delaySeconds", "give startAt or delaySeconds, not both")
		}
		if *d < 0 || math.IsNaN(*d) || *d > 100*365*24*3600 {
			return nil, badField("delaySeconds", "delaySeconds must be from 0 to 100 years of seconds, got %v", *d)
		}
		t := now.Add(time.Duration(*d * float64(time.Second)))
		startAt = &t
	}
	if startAt != nil {
		opts = append(opts, ow.WithStartAt(*startAt))
	}
	deadline, err := bodyTime("deadlineAt", req.DeadlineAt)
	if err != nil {
		return nil, err
	}
	if deadline != nil {
		opts = append(opts, ow.WithDeadline(*deadline))
	}
	if k := req.ConcurrencyKey; k != nil {
		if err := backend.ValidateConcurrencyKey(*k); err != nil {
			return nil, badField("concurrencyKey", "concurrencyKey must be text of at most %d bytes", backend.MaxConcurrencyKeyLength)
		}
		opts = append(opts, ow.WithConcurrencyKey(*k))
	}
	if p := req.Priority; p != nil {
		if *p > backend.MaxPriority || *p < -backend.MaxPriority {
			return nil, badField("priority", "priority must be an integer from %d to %d, got %d", -backend.MaxPriority, backend.MaxPriority, *p)
		}
		opts = append(opts, ow.WithPriority(int(*p)))
	}
	if sg := req.Singleton; sg != nil {
		mode, err := backend.ParseSingletonMode(sg.Mode)
		if err != nil || string(mode) != sg.Mode {
			return nil, badField("singleton", "singleton.mode must be skip, queue or cancel, got %q", sg.Mode)
		}
		if err := (backend.Singleton{Key: sg.Key, Mode: mode}).Validate(); err != nil {
			return nil, badField("singleton", "%s", err)
		}
		opts = append(opts, ow.WithSingleton(sg.Key, mode))
		if sg.ErrorOnSkip {
			opts = append(opts, ow.WithSingletonSkipError())
		}
	}
	if f := req.Fairness; f != nil {
		fair := backend.Fairness{Key: f.Key}
		if f.Weight != nil {
			fair.Weight = *f.Weight
		}
		if err := fair.Validate(); err != nil {
			return nil, badField("fairness", "%s", err)
		}
		opts = append(opts, ow.WithFairness(fair.Key, fair.Weight))
	}
	if len(req.SearchAttributes) > 0 {
		attrs, err := searchAttributesOf(req.SearchAttributes)
		if err != nil {
			return nil, err
		}
		opts = append(opts, ow.WithSearchAttributes(attrs))
	}
	if req.Debounce != nil {
		o, err := req.Debounce.option()
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// searchAttributesOf decodes the JSON values of searchAttributes (numbers
// as json.Number, so an integer stays exact) and checks them.
func searchAttributesOf(raw map[string]json.RawMessage) (backend.SearchAttributes, error) {
	attrs := backend.SearchAttributes{}
	for name, v := range raw {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return nil, badField("searchAttributes", "searchAttributes.%s: %s", name, err)
		}
		attrs[name] = x
	}
	if err := attrs.Validate(); err != nil {
		return nil, badField("searchAttributes", "%s", err)
	}
	return attrs, nil
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := parseQuery(r, "resolveData")
	if err != nil {
		return err
	}
	run, err := h.c.GetRun(r.Context(), id)
	if err != nil {
		return asAPIError(err, "id")
	}
	out := RunOf(run, q.resolveNone())
	attrs, err := h.searchAttributes(r.Context(), *run)
	if err != nil {
		return asAPIError(err, "")
	}
	out.SearchAttributes = attrs[run.ID]
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) listRuns(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "status", "workflowName", "createdAfter", "createdBefore", "limit", "cursor", "before", "resolveData", "q")
	if err != nil {
		return err
	}
	p := backend.ListWorkflowRunsParams{WorkflowName: q.str("workflowName"), After: q.str("cursor"), Before: q.str("before")}
	if p.Query, err = runQuery(q.str("q")); err != nil {
		return err
	}
	if p.After != "" && p.Before != "" {
		return badField("before", "give cursor (the next, older page) or before (the previous, newer page), not both")
	}
	if p.Status, err = q.status(); err != nil {
		return err
	}
	if p.Limit, err = q.limit(50); err != nil {
		return err
	}
	if p.CreatedAfter, err = q.time("createdAfter"); err != nil {
		return err
	}
	if p.CreatedBefore, err = q.time("createdBefore"); err != nil {
		return err
	}
	if p.CreatedAfter != nil && p.CreatedBefore != nil && !p.CreatedAfter.Before(*p.CreatedBefore) {
		return badField("createdBefore", "createdBefore must be after createdAfter")
	}
	all, err := q.resolveAll()
	if err != nil {
		return err
	}
	p.OmitPayloads, p.MaxBytes = !all, h.opts.MaxListBytes
	page, err := h.c.ListRuns(r.Context(), p)
	if err != nil {
		field := "cursor"
		if p.Before != "" {
			field = "before"
		}
		return asAPIError(err, field)
	}
	attrs, err := h.searchAttributes(r.Context(), page.Data...)
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, RunPage{
		List: listOf(page.Data, page.Next, func(run *backend.WorkflowRun) Run {
			out := RunOf(run, !all)
			out.SearchAttributes = attrs[run.ID]
			return out
		}),
		PrevCursor: page.Prev,
	})
	return nil
}

// runQuery parses the q parameter (package runquery); blank is no query.
// A bad query answers 400 naming its position (asAPIError).
func runQuery(src string) (*runquery.Query, error) {
	q, err := runquery.Parse(src)
	if err != nil {
		return nil, asAPIError(err, "q")
	}
	return q, nil
}

// searchAttributes reads the search attributes of runs, or none when the
// backend stores none.
func (h *Handler) searchAttributes(ctx context.Context, runs ...backend.WorkflowRun) (map[string]backend.SearchAttributes, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
	}
	attrs, err := h.c.SearchAttributes(ctx, ids...)
	if errors.Is(err, backend.ErrNotSupported) {
		return nil, nil
	}
	return attrs, err
}

// RunCount answers GET /v1/runs/count: how many runs the filters and
// query select now.
type RunCount struct {
	Count int64 `json:"count"`
}

func (h *Handler) countMatchingRuns(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "status", "workflowName", "createdAfter", "createdBefore", "q")
	if err != nil {
		return err
	}
	p := backend.ListWorkflowRunsParams{WorkflowName: q.str("workflowName")}
	if p.Query, err = runQuery(q.str("q")); err != nil {
		return err
	}
	if p.Status, err = q.status(); err != nil {
		return err
	}
	if p.CreatedAfter, err = q.time("createdAfter"); err != nil {
		return err
	}
	if p.CreatedBefore, err = q.time("createdBefore"); err != nil {
		return err
	}
	n, err := h.c.CountMatchingRuns(r.Context(), p)
	if err != nil {
		return asAPIError(err, "q")
	}
	writeJSON(w, http.StatusOK, RunCount{Count: n})
	return nil
}

// RunPage answers GET /v1/runs: a page of runs, newest first, the cursor
// of the next (older) page, and PrevCursor, the cursor to pass as before
// for the previous (newer) page — null on the first page. A page reached
// with cursor always has a PrevCursor, which may lead to an empty page if
// the newer runs were deleted since.
type RunPage struct {
	List[Run]
	PrevCursor *string `json:"prevCursor"`
}

func (h *Handler) countRuns(w http.ResponseWriter, r *http.Request) error {
	_, err := parseQuery(r)
	if err != nil {
		return err
	}
	counts, err := h.c.CountRuns(r.Context())
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, counts)
	return nil
}

func (h *Handler) cancelRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := decodeBody(r, &struct{}{}, true); err != nil {
		return err
	}
	run, err := h.c.CancelRun(r.Context(), id)
	if err != nil {
		return asAPIError(err, "id")
	}
	writeJSON(w, http.StatusOK, RunOf(run, false))
	return nil
}

// retryRunRequest is the optional body of POST /v1/runs/{id}/retry.
type retryRunRequest struct {
	// DeadlineAt is the retried run's deadline (absent: none).
	DeadlineAt *string `json:"deadlineAt"`
}

func (h *Handler) retryRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req retryRunRequest
	if err := decodeBody(r, &req, true); err != nil {
		return err
	}
	deadline, err := bodyTime("deadlineAt", req.DeadlineAt)
	if err != nil {
		return err
	}
	run, err := h.c.RetryRun(r.Context(), backend.RetryWorkflowRunParams{WorkflowRunID: id, DeadlineAt: deadline})
	if err != nil {
		return asAPIError(err, "id")
	}
	writeJSON(w, http.StatusOK, RunOf(run, false))
	return nil
}

// forkRunRequest is the body of POST /v1/runs/{id}/fork.
type forkRunRequest struct {
	// FromStep is the durable key of the first step the fork executes
	// again; the steps before it are reused.
	FromStep string `json:"fromStep"`
}

func (h *Handler) forkRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req forkRunRequest
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	if req.FromStep == "" {
		return badField("fromStep", "fromStep is required: the name of the first step to execute again, as the run's steps name it (GET /v1/runs/%s/steps)", id)
	}
	if !backend.ValidText(req.FromStep) {
		return badField("fromStep", "fromStep must be text")
	}
	fork, err := h.c.ForkRun(r.Context(), id, req.FromStep)
	if err != nil {
		return asAPIError(err, "fromStep")
	}
	writeJSON(w, http.StatusCreated, RunOf(fork.Run, false))
	return nil
}

func (h *Handler) listSteps(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := parseQuery(r, "limit", "cursor", "resolveData")
	if err != nil {
		return err
	}
	limit, err := q.limit(backend.DefaultPageSize)
	if err != nil {
		return err
	}
	all, err := q.resolveAll()
	if err != nil {
		return err
	}
	// The run first: an unknown run is a 404, not an empty list.
	run, err := h.c.GetRun(r.Context(), id)
	if err != nil {
		return asAPIError(err, "id")
	}
	page, err := h.c.ListSteps(r.Context(), backend.ListStepAttemptsParams{
		WorkflowRunID: id, Limit: limit, After: q.str("cursor"), OmitPayloads: !all, MaxBytes: h.opts.MaxListBytes})
	if err != nil {
		return asAPIError(err, "cursor")
	}
	out := listOf(page.Data, page.Next, func(a *backend.StepAttempt) Step { return StepOf(a, !all) })
	MarkAbandoned(run, out.Data, time.Now())
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getStep answers one step attempt by id, found without its run's id: a
// child run's parentStepId leads to its parent this way. Abandoned is
// derived as in listSteps, from the run and the step's later attempts.
func (h *Handler) getStep(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := parseQuery(r, "resolveData")
	if err != nil {
		return err
	}
	a, err := h.c.GetStep(r.Context(), id)
	if err != nil {
		return asAPIError(err, "id")
	}
	step := StepOf(a, q.resolveNone())
	if step.Status == string(backend.StepRunning) && step.Kind == string(backend.StepFunction) {
		// Only a running function attempt can be abandoned: its run lost
		// its lease, or a later attempt of the same step exists.
		run, err := h.c.GetRun(r.Context(), a.WorkflowRunID)
		if err != nil {
			return asAPIError(err, "")
		}
		step.Abandoned = unleased(run, time.Now())
		cursor := backend.Cursor{CreatedAt: a.CreatedAt, ID: a.ID}.Encode()
		for !step.Abandoned {
			page, err := h.c.ListSteps(r.Context(), backend.ListStepAttemptsParams{
				WorkflowRunID: a.WorkflowRunID, Limit: backend.MaxPageSize, After: cursor, OmitPayloads: true, MaxBytes: h.opts.MaxListBytes})
			if err != nil {
				return asAPIError(err, "")
			}
			for i := range page.Data {
				step.Abandoned = step.Abandoned || page.Data[i].StepName == a.StepName
			}
			if page.Next == nil {
				break
			}
			cursor = *page.Next
		}
	}
	writeJSON(w, http.StatusOK, step)
	return nil
}
