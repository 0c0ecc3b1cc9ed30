package api

import (
	"net/http"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// EventWait is a run's wait for an event (ow.WaitForEvent) as the API
// shows it: what it waits for (eventName, match), until when (timeoutAt),
// and how it ended. The delivered event's data is not repeated here (GET
// /v1/events/{id} has it).
type EventWait struct {
	StepAttemptID string `json:"stepAttemptId"`
	StepName      string `json:"stepName"`
	EventName     string `json:"eventName"`
	// Match is the CEL match; "" for any event of the name.
	Match string `json:"match"`
	// Indexed says whether the match has an indexed equality (publishes
	// find the wait by it).
	Indexed bool `json:"indexed"`
	// Status is open, delivered or timedOut.
	Status    string     `json:"status"`
	CreatedAt time.Time  `json:"createdAt"`
	TimeoutAt time.Time  `json:"timeoutAt"`
	SinceAt   *time.Time `json:"sinceAt,omitempty"`
	// EventID and DeliveredAt are the delivered event's.
	EventID     *string    `json:"eventId,omitempty"`
	DeliveredAt *time.Time `json:"deliveredAt,omitempty"`
	ClosedAt    *time.Time `json:"closedAt,omitempty"`
	// LastError is the last error evaluating the match on an event.
	LastError *string `json:"lastError,omitempty"`
}

// EventWaitOf converts a stored wait.
func EventWaitOf(w *backend.EventWait) EventWait {
	status := "open"
	switch {
	case w.EventID != nil:
		status = "delivered"
	case w.ClosedAt != nil:
		status = "timedOut"
	}
	return EventWait{StepAttemptID: w.StepAttemptID, StepName: w.StepName, EventName: w.EventName, Match: w.Match,
		Indexed: w.IndexPath != nil, Status: status, CreatedAt: w.CreatedAt, TimeoutAt: w.TimeoutAt, SinceAt: w.SinceAt,
		EventID: w.EventID, DeliveredAt: w.DeliveredAt, ClosedAt: w.ClosedAt, LastError: w.LastError}
}

func (h *Handler) listRunEventWaits(w http.ResponseWriter, r *http.Request) error {
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
	ws, err := h.c.ListEventWaits(r.Context(), id)
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(ws, nil, EventWaitOf))
	return nil
}
