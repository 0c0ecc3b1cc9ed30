package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Schedule is a schedule as the API shows it. NextFireAt is the next tick
// and Upcoming the next ones (up to [UpcomingTicks], NextFireAt first);
// both are empty while the schedule is paused, since resuming recomputes
// them. CatchupWindow is a Go duration ("1m0s"). Started, Skipped and
// Missed count the runs started, the ticks the overlap policy skipped and
// the ticks older than the catch-up window when the workers could fire
// them.
type Schedule struct {
	Name          string          `json:"name"`
	WorkflowName  string          `json:"workflowName"`
	Version       *string         `json:"version"`
	Cron          string          `json:"cron"`
	TimeZone      string          `json:"timeZone"`
	Input         json.RawMessage `json:"input"`
	Overlap       string          `json:"overlap"`
	CatchupWindow string          `json:"catchupWindow"`
	Priority      int             `json:"priority"`
	Paused        bool            `json:"paused"`
	NextFireAt    *time.Time      `json:"nextFireAt"`
	Upcoming      []time.Time     `json:"upcoming"`
	BufferedAt    *time.Time      `json:"bufferedAt"`
	LastRunID     *string         `json:"lastRunId"`
	LastFireAt    *time.Time      `json:"lastFireAt"`
	Started       int64           `json:"started"`
	Skipped       int64           `json:"skipped"`
	Missed        int64           `json:"missed"`
	CreatedAt     time.Time       `json:"createdAt"`
	UpdatedAt     time.Time       `json:"updatedAt"`
	// LastError, LastErrorAt, Failures and RetryAt say why and since when
	// a failing schedule's fires fail and when it is tried again
	// ([backend.Schedule.LastError]); null and 0 while it is not failing.
	LastError   *string    `json:"lastError"`
	LastErrorAt *time.Time `json:"lastErrorAt"`
	Failures    int        `json:"failures"`
	RetryAt     *time.Time `json:"retryAt"`
}

// UpcomingTicks is how many ticks [Schedule].Upcoming lists.
const UpcomingTicks = 5

// ScheduleOf converts a stored schedule to its API shape.
func ScheduleOf(s *backend.Schedule) Schedule {
	out := Schedule{
		Name: s.Name, WorkflowName: s.WorkflowName, Version: s.Version, Cron: s.Cron, TimeZone: s.TimeZone,
		Input: s.Input, Overlap: string(s.Overlap), CatchupWindow: s.CatchupWindow.String(), Priority: s.Priority, Paused: s.Paused,
		Upcoming: []time.Time{}, BufferedAt: s.BufferedAt, LastRunID: s.LastRunID, LastFireAt: s.LastFireAt,
		Started: s.Started, Skipped: s.Skipped, Missed: s.Missed, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		LastError: s.LastError, LastErrorAt: s.LastErrorAt, Failures: s.Failures, RetryAt: s.RetryAt,
	}
	if out.Input == nil {
		out.Input = json.RawMessage("null")
	}
	if !s.Paused {
		next := s.NextFireAt
		out.NextFireAt = &next
		if ticks, err := ow.UpcomingTicks(s, UpcomingTicks); err == nil {
			out.Upcoming = ticks
		}
	}
	return out
}

// putScheduleRequest is the body of PUT /v1/schedules/{name}.
type putScheduleRequest struct {
	// WorkflowName (required) and Version (absent: unversioned) are the
	// workflow each tick starts.
	WorkflowName string  `json:"workflowName"`
	Version      *string `json:"version"`
	// Cron (required) and TimeZone (absent: UTC) say when it ticks.
	Cron     string `json:"cron"`
	TimeZone string `json:"timeZone"`
	// Input is every run's input, any JSON (absent: null).
	Input json.RawMessage `json:"input"`
	// Overlap is skip (absent), buffer_one or allow_all.
	Overlap string `json:"overlap"`
	// CatchupWindow is a Go duration ("90s", "5m"); absent: 1 min.
	CatchupWindow *string `json:"catchupWindow"`
	// Priority is the priority of the runs it starts (absent: 0).
	Priority int `json:"priority"`
	// Paused makes a new schedule start paused.
	Paused bool `json:"paused"`
}

// pathName reads and checks the {name} path parameter of a schedule.
func pathName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if name == "" || len(name) > backend.MaxScheduleNameLength || !backend.ValidText(name) {
		return "", badField("name", "the schedule name in the path must be 1 to %d bytes of text", backend.MaxScheduleNameLength)
	}
	return name, nil
}

// noQuery refuses any query parameter.
func noQuery(r *http.Request) error {
	_, err := parseQuery(r)
	return err
}

func (h *Handler) putSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r)
	if err != nil {
		return err
	}
	if err := noQuery(r); err != nil {
		return err
	}
	var req putScheduleRequest
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	spec := ow.ScheduleSpec{
		Name: name, Workflow: req.WorkflowName, Cron: req.Cron, TimeZone: req.TimeZone,
		Overlap: backend.OverlapPolicy(req.Overlap), Priority: req.Priority, Paused: req.Paused,
	}
	if req.Version != nil {
		spec.Version = *req.Version
	}
	if req.Input != nil {
		if err := backend.ValidateJSON(req.Input); err != nil {
			return badField("input", "input cannot be stored: %s", err)
		}
		spec.Input = req.Input
	}
	if req.CatchupWindow != nil {
		d, err := time.ParseDuration(*req.CatchupWindow)
		if err != nil {
			return badField("catchupWindow", "catchupWindow must be a duration such as \"90s\" or \"5m\", got %q", *req.CatchupWindow)
		}
		if d == 0 {
			return badField("catchupWindow", "catchupWindow must be at least %v (leave it out for the default, %v)", backend.MinCatchupWindow, backend.DefaultCatchupWindow)
		}
		spec.CatchupWindow = d
	}
	s, err := h.c.PutSchedule(r.Context(), spec)
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, ScheduleOf(s))
	return nil
}

func (h *Handler) getSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r)
	if err != nil {
		return err
	}
	if err := noQuery(r); err != nil {
		return err
	}
	s, err := h.c.GetSchedule(r.Context(), name)
	if err != nil {
		return asAPIError(err, "name")
	}
	writeJSON(w, http.StatusOK, ScheduleOf(s))
	return nil
}

func (h *Handler) listSchedules(w http.ResponseWriter, r *http.Request) error {
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
		if _, err := backend.DecodeScheduleCursor(cursor); err != nil {
			return badField("cursor", "cursor %q is not one this route answered; pass back the cursor of the previous page", cursor)
		}
	}
	page, err := h.c.ListSchedules(r.Context(), backend.ListSchedulesParams{Limit: limit, After: cursor})
	if err != nil {
		return asAPIError(err, "")
	}
	// A schedule's input is its configuration, listed with it, within the
	// page's byte budget: the page ends before the schedule that would
	// pass it, and the cursor carries on from there.
	budget := backend.PageBudget{Max: h.opts.MaxListBytes}
	for i := range page.Data {
		if !budget.Fits(len(page.Data[i].Input)) {
			next := backend.ScheduleCursor{Name: page.Data[i-1].Name}.Encode()
			page.Data, page.Next = page.Data[:i], &next
			break
		}
	}
	writeJSON(w, http.StatusOK, listOf(page.Data, page.Next, ScheduleOf))
	return nil
}

func (h *Handler) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r)
	if err != nil {
		return err
	}
	if err := noQuery(r); err != nil {
		return err
	}
	if err := h.c.DeleteSchedule(r.Context(), name); err != nil {
		return asAPIError(err, "name")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	return h.changeSchedule(w, r, h.c.PauseSchedule)
}

func (h *Handler) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	return h.changeSchedule(w, r, h.c.ResumeSchedule)
}

// changeSchedule serves pause and resume: no body, the schedule as it is
// after.
func (h *Handler) changeSchedule(w http.ResponseWriter, r *http.Request, change func(ctx context.Context, name string) (*backend.Schedule, error)) error {
	name, err := pathName(r)
	if err != nil {
		return err
	}
	if err := noQuery(r); err != nil {
		return err
	}
	s, err := change(r.Context(), name)
	if err != nil {
		return asAPIError(err, "name")
	}
	writeJSON(w, http.StatusOK, ScheduleOf(s))
	return nil
}

func (h *Handler) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r)
	if err != nil {
		return err
	}
	if err := noQuery(r); err != nil {
		return err
	}
	run, err := h.c.TriggerSchedule(r.Context(), name)
	if err != nil {
		return asAPIError(err, "name")
	}
	writeJSON(w, http.StatusCreated, RunOf(run.Run, false))
	return nil
}
