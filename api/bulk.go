package api

import (
	"errors"
	"net/http"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/runquery"
)

// BulkAction is a bulk action as the API shows it
// (`GET /v1/bulk-actions/{id}`): what it does, to what, how far it got.
// State is running, canceling, canceled, completed or failed; matched is
// the count of the runs the operation applied to when the action was
// created (an estimate), acted, skipped (no longer eligible when reached)
// and failed count what the pages applied so far did.
type BulkAction struct {
	ID           string     `json:"id"`
	Operation    string     `json:"operation"`
	Query        string     `json:"query"`
	Reason       string     `json:"reason"`
	RequestedBy  string     `json:"requestedBy"`
	State        string     `json:"state"`
	MaxPerSecond int        `json:"maxPerSecond"`
	Matched      int64      `json:"matched"`
	Acted        int64      `json:"acted"`
	Skipped      int64      `json:"skipped"`
	Failed       int64      `json:"failed"`
	Pages        int64      `json:"pages"`
	LastError    *string    `json:"lastError"`
	Driver       *string    `json:"driver"`
	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
	StartedAt    *time.Time `json:"startedAt"`
	FinishedAt   *time.Time `json:"finishedAt"`
}

// BulkActionOf converts a stored action.
func BulkActionOf(a *backend.BulkAction) BulkAction {
	text := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return BulkAction{
		ID: a.ID, Operation: string(a.Operation), Query: a.Query, Reason: a.Reason, RequestedBy: a.RequestedBy,
		State: string(a.State), MaxPerSecond: a.MaxPerSecond, Matched: a.Matched, Acted: a.Acted, Skipped: a.Skipped,
		Failed: a.Failed, Pages: a.Pages, LastError: text(a.LastError), Driver: text(a.LeaseOwner),
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt,
	}
}

// BulkDryRun is the answer of `POST /v1/bulk-actions` with dryRun: what
// the action would act on now; nothing is stored.
type BulkDryRun struct {
	DryRun    bool   `json:"dryRun"`
	Operation string `json:"operation"`
	Query     string `json:"query"`
	Matched   int64  `json:"matched"`
	Eligible  int64  `json:"eligible"`
}

// startBulkActionRequest is the body of POST /v1/bulk-actions.
type startBulkActionRequest struct {
	Operation    string  `json:"operation"`
	Query        *string `json:"query"`
	Reason       string  `json:"reason"`
	DryRun       bool    `json:"dryRun"`
	MaxPerSecond int     `json:"maxPerSecond"`
}

// startBulkAction counts (dryRun) or starts a bulk action: 201 with the
// action, 200 with the count for a dry run, 400 naming the field (the
// query's message gives the line and column of its fault).
func (h *Handler) startBulkAction(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseQuery(r); err != nil {
		return err
	}
	var req startBulkActionRequest
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	op := backend.BulkOperation(req.Operation)
	if !op.Valid() {
		return badField("operation", "operation must be one of %v, got %q", backend.BulkOperations, req.Operation)
	}
	if req.Query == nil {
		return badField("query", `query is required: the runs to act on, e.g. status = "failed" AND workflow = "x" ("" selects every run)`)
	}
	if req.DryRun {
		dry, err := h.c.DryRunBulkAction(r.Context(), op, *req.Query)
		if err != nil {
			return bulkQueryError(err)
		}
		writeJSON(w, http.StatusOK, BulkDryRun{DryRun: true, Operation: string(op), Query: dry.Query, Matched: dry.Matched, Eligible: dry.Eligible})
		return nil
	}
	if req.MaxPerSecond < 0 {
		return badField("maxPerSecond", "maxPerSecond must be 0 (the default, %d) or more, got %d", ow.DefaultBulkRate, req.MaxPerSecond)
	}
	if len(req.Reason) > backend.MaxBulkReasonBytes {
		return badField("reason", "reason is %d bytes, at most %d", len(req.Reason), backend.MaxBulkReasonBytes)
	}
	a, err := h.c.StartBulkAction(r.Context(), op, *req.Query, ow.BulkActionOptions{
		Reason: req.Reason, RequestedBy: h.requester(r), MaxPerSecond: req.MaxPerSecond,
	})
	if err != nil {
		return bulkQueryError(err)
	}
	writeJSON(w, http.StatusCreated, BulkActionOf(a))
	return nil
}

// bulkQueryError is asAPIError for a bulk action's start: a bad query is
// a 400 on the body's field query (the list routes name their parameter
// q), with its position.
func bulkQueryError(err error) *Error {
	e := asAPIError(err, "query")
	if errors.As(err, new(*runquery.Error)) {
		e.Field = "query"
	}
	return e
}

// requester names who sent r: the token's name, or "api" without tokens.
func (h *Handler) requester(r *http.Request) string {
	if h.keys != nil && !h.keys.Open() {
		if t, err := h.keys.Bearer(r); err == nil {
			return "token:" + t.Name
		}
	}
	return "api"
}

func (h *Handler) listBulkActions(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "limit", "cursor")
	if err != nil {
		return err
	}
	limit, err := q.limit(backend.DefaultPageSize)
	if err != nil {
		return err
	}
	cursor := q.str("cursor")
	if cursor != "" {
		if _, err := backend.DecodeCursor(cursor); err != nil {
			return badField("cursor", "cursor %q is not one this route answered; pass back the cursor of the previous page", cursor)
		}
	}
	page, err := h.c.ListBulkActions(r.Context(), backend.ListBulkActionsParams{Limit: limit, After: cursor})
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(page.Data, page.Next, BulkActionOf))
	return nil
}

func (h *Handler) getBulkAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := noQuery(r); err != nil {
		return err
	}
	a, err := h.c.GetBulkAction(r.Context(), id)
	if err != nil {
		return bulkError(err)
	}
	writeJSON(w, http.StatusOK, BulkActionOf(a))
	return nil
}

func (h *Handler) cancelBulkAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := decodeBody(r, &struct{}{}, true); err != nil {
		return err
	}
	a, err := h.c.CancelBulkAction(r.Context(), id)
	if err != nil {
		return bulkError(err)
	}
	writeJSON(w, http.StatusOK, BulkActionOf(a))
	return nil
}

// bulkError maps the bulk action errors (404 not_found, 409
// bulk_action_finished), then the rest as asAPIError.
func bulkError(err error) *Error {
	switch {
	case errors.Is(err, backend.ErrBulkActionNotFound):
		return errorf(http.StatusNotFound, CodeNotFound, "id", "%s", err)
	case errors.Is(err, backend.ErrBulkActionFinished):
		return errorf(http.StatusConflict, CodeBulkActionFinished, "id", "%s", err)
	}
	return asAPIError(err, "id")
}
