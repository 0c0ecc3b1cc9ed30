package api

import (
	"net/http"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// LimitValues are a workflow's concurrency and rate limits; null means
// no limit of that kind.
type LimitValues struct {
	Concurrency       *int   `json:"concurrency"`
	ConcurrencyPerKey *int   `json:"concurrencyPerKey"`
	RateLimit         *int   `json:"rateLimit"`
	RatePeriodMs      *int64 `json:"ratePeriodMs"`
}

// WorkflowLimits are the limits stored for one workflow name, who
// declared them, and the different limits the last change replaced (two
// deployments declaring different limits replace each other's at every
// start).
type WorkflowLimits struct {
	WorkflowName string `json:"workflowName"`
	LimitValues
	UpdatedAt  time.Time       `json:"updatedAt"`
	DeclaredBy *string         `json:"declaredBy"`
	Replaced   *ReplacedLimits `json:"replaced"`
}

// ReplacedLimits are limits a later change replaced, who had declared
// them and when they were replaced.
type ReplacedLimits struct {
	LimitValues
	DeclaredBy *string   `json:"declaredBy"`
	At         time.Time `json:"at"`
}

// LimitValuesOf converts backend limits.
func LimitValuesOf(l backend.Limits) LimitValues {
	n := func(v int) *int {
		if v == 0 {
			return nil
		}
		return &v
	}
	out := LimitValues{Concurrency: n(l.Concurrency), ConcurrencyPerKey: n(l.ConcurrencyPerKey), RateLimit: n(l.RateLimit)}
	if l.RateLimit > 0 {
		ms := l.RatePeriod.Milliseconds()
		out.RatePeriodMs = &ms
	}
	return out
}

// WorkflowLimitsOf converts a backend record.
func WorkflowLimitsOf(w *backend.WorkflowLimits) WorkflowLimits {
	text := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	out := WorkflowLimits{WorkflowName: w.WorkflowName, LimitValues: LimitValuesOf(w.Limits), UpdatedAt: w.UpdatedAt, DeclaredBy: text(w.DeclaredBy)}
	if r := w.Replaced; r != nil {
		out.Replaced = &ReplacedLimits{LimitValues: LimitValuesOf(r.Limits), DeclaredBy: text(r.DeclaredBy), At: r.At}
	}
	return out
}

// listLimits answers the namespace's stored limits, by workflow name, in
// one page (a namespace has a row per limited workflow).
func (h *Handler) listLimits(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	ls, err := h.c.ListWorkflowLimits(r.Context())
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(ls, nil, WorkflowLimitsOf))
	return nil
}
