package api

import (
	"net/http"

	"github.com/openworkflow-go/openworkflow/backend"
)

// pauseRunRequest is the optional body of POST /v1/runs/{id}/pause.
type pauseRunRequest struct {
	// Reason is stored with the pause (absent or "": none); at most
	// backend.MaxPauseReasonLength bytes.
	Reason string `json:"reason"`
}

// pauseRun answers POST /v1/runs/{id}/pause (ow.Client.PauseRun): 200
// with the run, paused; the same for a run paused already (its first
// reason kept); 409 run_terminal for a finished run.
func (h *Handler) pauseRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req pauseRunRequest
	if err := decodeBody(r, &req, true); err != nil {
		return err
	}
	if len(req.Reason) > backend.MaxPauseReasonLength {
		return badField("reason", "reason is %d bytes; at most %d are allowed", len(req.Reason), backend.MaxPauseReasonLength)
	}
	if !backend.ValidText(req.Reason) {
		return badField("reason", "reason must be text (valid UTF-8 without U+0000)")
	}
	res, err := h.c.PauseRun(r.Context(), id, req.Reason)
	if err != nil {
		return asAPIError(err, "reason")
	}
	writeJSON(w, http.StatusOK, RunOf(res.Run, false))
	return nil
}

// resumeRun answers POST /v1/runs/{id}/resume (ow.Client.ResumeRun): 200
// with the run, resumed where it was when paused, or pending again, same
// id, when canceled; a run neither paused nor canceled is returned as it
// is. 409 run_terminal (completed), run_not_canceled (failed: retry it)
// or deadline_passed (canceled past its deadline: fork it).
func (h *Handler) resumeRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := decodeBody(r, &struct{}{}, true); err != nil {
		return err
	}
	res, err := h.c.ResumeRun(r.Context(), id)
	if err != nil {
		return asAPIError(err, "id")
	}
	writeJSON(w, http.StatusOK, RunOf(res.Run, false))
	return nil
}
