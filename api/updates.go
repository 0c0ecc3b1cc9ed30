package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Waits of the update routes: POST waits DefaultUpdateWait unless ?wait=
// says otherwise, GET does not wait unless asked; neither waits longer
// than MaxUpdateWait (a longer ?wait= is refused, 400), so a request
// holds a server goroutine and a connection a bounded time.
const (
	DefaultUpdateWait = 10 * time.Second
	MaxUpdateWait     = 60 * time.Second
)

// updateRequest is the body of POST /v1/runs/{id}/updates/{name}.
type updateRequest struct {
	// Input is any JSON (absent: null), at most 1 MiB.
	Input json.RawMessage `json:"input"`
	// UpdateID is the update's idempotency key within the run (absent: a
	// new id).
	UpdateID *string `json:"updateId"`
}

// RunUpdate is an update of a run as the API shows it (POST and GET
// /v1/runs/{id}/updates/…): state admitted (not handled yet), completed
// (result), failed (the handler's error) or rejected (error: the
// validator's, an unknown name, or the run finished first).
type RunUpdate struct {
	// ID is the update's id, its idempotency key within the run.
	ID string `json:"id"`
	// RunID is the run's id; Name the update's (its handler's) name.
	RunID string `json:"runId"`
	Name  string `json:"name"`
	// State is admitted, completed, failed or rejected.
	State string `json:"state"`
	// Input is the input as admitted; Result the handler's result
	// (completed); Error the stored error {name?, message, code?} of a
	// failed or rejected update.
	Input  json.RawMessage `json:"input"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	// CreatedAt is when it was admitted, SettledAt when it was settled
	// (null while admitted).
	CreatedAt time.Time  `json:"createdAt"`
	SettledAt *time.Time `json:"settledAt"`
	// Duplicate: the POST repeated an update id the run already had;
	// nothing was admitted, and this is the earlier update.
	Duplicate bool `json:"duplicate,omitempty"`
}

func runUpdateOf(u *backend.RunUpdate) RunUpdate {
	return RunUpdate{ID: u.ID, RunID: u.WorkflowRunID, Name: u.Name, State: string(u.State), Input: u.Input,
		Result: u.Result, Error: u.Error, CreatedAt: u.CreatedAt, SettledAt: u.SettledAt, Duplicate: u.Duplicate}
}

// updateWait reads ?wait= (a Go duration such as 5s or 500ms, 0 to 60s).
func updateWait(r *http.Request, def time.Duration) (time.Duration, error) {
	q, err := parseQuery(r, "wait")
	if err != nil {
		return 0, err
	}
	s := q.str("wait")
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxUpdateWait {
		return 0, badField("wait", "wait must be a duration from 0s to %s (such as 5s or 500ms), got %q", MaxUpdateWait, s)
	}
	return d, nil
}

// updateRun admits an update of a run and waits for its outcome up to
// ?wait=: 200 completed or failed, 202 still admitted (follow with GET
// /v1/runs/{id}/updates/{name}/{updateId}), 422 update_rejected.
func (h *Handler) updateRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if name == "" || len(name) > 255 || !backend.ValidText(name) {
		return badField("name", "the update name in the path must be 1 to 255 bytes of text, a name the workflow handles (ow.HandleUpdate)")
	}
	wait, err := updateWait(r, DefaultUpdateWait)
	if err != nil {
		return err
	}
	var req updateRequest
	if err := decodeBody(r, &req, true); err != nil {
		return err
	}
	var opts []ow.UpdateOption
	if k := req.UpdateID; k != nil {
		if *k == "" || len(*k) > 255 || !backend.ValidText(*k) {
			return badField("updateId", "updateId must be 1 to 255 bytes of text")
		}
		opts = append(opts, ow.WithUpdateID(*k))
	}
	var input any
	if req.Input != nil {
		if len(req.Input) > backend.MaxUpdateInputBytes {
			return badField("input", "input is %d bytes, more than the %d allowed", len(req.Input), backend.MaxUpdateInputBytes)
		}
		if err := backend.ValidateJSON(req.Input); err != nil {
			return badField("input", "input cannot be stored: %s", err)
		}
		input = req.Input
	}
	u, err := h.c.AdmitUpdate(r.Context(), id, name, input, opts...)
	if err != nil {
		return updateError(err)
	}
	dup := u.Duplicate
	if !u.State.Settled() && wait > 0 {
		if u, err = h.waitUpdate(r, id, u.ID, wait); err != nil {
			return err
		}
		u.Duplicate = dup
	}
	if u.State == backend.UpdateRejected {
		return errorf(http.StatusUnprocessableEntity, CodeUpdateRejected, "", "update %q (id %s) of run %s was rejected: %s",
			u.Name, u.ID, u.WorkflowRunID, storedMessage(u.Error))
	}
	writeUpdate(w, u)
	return nil
}

// getRunUpdate answers an update (GET
// /v1/runs/{id}/updates/{name}/{updateId}: the name is the update's, as
// the POST's answer gives it), waiting up to ?wait= (default 0) for it
// to settle: 200 settled (any final state), 202 still admitted.
func (h *Handler) getRunUpdate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	updateID, err := pathID(r, "updateId")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	wait, err := updateWait(r, 0)
	if err != nil {
		return err
	}
	var u *backend.RunUpdate
	if wait > 0 {
		u, err = h.waitUpdate(r, id, updateID, wait)
	} else {
		u, err = h.c.GetUpdate(r.Context(), id, updateID)
		if err != nil {
			err = updateError(err)
		}
	}
	if err != nil {
		return err
	}
	if u.Name != name {
		return errorf(http.StatusNotFound, CodeNotFound, "name", "update %s of run %s is named %q, not %q", updateID, id, u.Name, name)
	}
	writeUpdate(w, u)
	return nil
}

// listRunUpdates answers the run's updates in admission order (at most
// backend.MaxUpdatesPerRun, one page).
func (h *Handler) listRunUpdates(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := parseQuery(r); err != nil {
		return err
	}
	if _, err := h.c.GetRun(r.Context(), id); err != nil {
		return asAPIError(err, "id")
	}
	list, err := h.c.ListUpdates(r.Context(), id)
	if err != nil {
		return updateError(err)
	}
	writeJSON(w, http.StatusOK, listOf(list, nil, runUpdateOf))
	return nil
}

// waitUpdate waits up to d for the update to settle, or until the server
// shuts down (Options.Done); the update as it stands then.
func (h *Handler) waitUpdate(r *http.Request, runID, updateID string, d time.Duration) (*backend.RunUpdate, error) {
	base, stop := h.done(r) // a server shutting down answers 202 at once
	defer stop()
	ctx, cancel := context.WithTimeout(base, d)
	defer cancel()
	u, err := h.c.WaitUpdate(ctx, runID, updateID)
	var te *ow.UpdateTimeoutError
	if errors.As(err, &te) && r.Context().Err() == nil {
		u, err = h.c.GetUpdate(r.Context(), runID, updateID)
	}
	if err != nil {
		return nil, updateError(err)
	}
	return u, nil
}

func writeUpdate(w http.ResponseWriter, u *backend.RunUpdate) {
	status := http.StatusOK
	if !u.State.Settled() {
		status = http.StatusAccepted
	}
	writeJSON(w, status, runUpdateOf(u))
}

// updateError maps the errors of updates: a missing update is 404, too
// many is 429 too_many_updates; the rest as every route's.
func updateError(err error) *Error {
	switch {
	case errors.Is(err, backend.ErrUpdateNotFound):
		return errorf(http.StatusNotFound, CodeNotFound, "updateId", "%s", err)
	case errors.Is(err, backend.ErrTooManyUpdates):
		return errorf(http.StatusTooManyRequests, CodeTooManyUpdates, "", "%s", err)
	}
	return asAPIError(err, "input")
}

// storedMessage is the message of a stored error ({"message": …}).
func storedMessage(raw json.RawMessage) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Message == "" {
		return fmt.Sprintf("%s", raw)
	}
	return e.Message
}
