package api

import (
	"encoding/json"
	"net/http"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// Worker is a Go worker of the registry of workers as the API shows it
// (GET /v1/workers). State is running, draining, stopped or gone (silent
// for 3 heartbeat intervals); FreeSlots is Concurrency − InUse at its last
// heartbeat. TypeScript workers write no record and are not listed.
type Worker struct {
	ID                  string               `json:"id"`
	Host                string               `json:"host"`
	PID                 int                  `json:"pid"`
	SDK                 string               `json:"sdk"`
	SDKVersion          string               `json:"sdkVersion"`
	State               string               `json:"state"`
	Concurrency         int                  `json:"concurrency"`
	InUse               int                  `json:"inUse"`
	FreeSlots           int                  `json:"freeSlots"`
	HeartbeatIntervalMs int64                `json:"heartbeatIntervalMs"`
	StartedAt           time.Time            `json:"startedAt"`
	LastHeartbeatAt     time.Time            `json:"lastHeartbeatAt"`
	Workflows           []RegisteredWorkflow `json:"workflows"`
}

// RegisteredWorkflow is a workflow a worker registered: its name, its
// version (null: unversioned) and its example input (null: none).
type RegisteredWorkflow struct {
	Name         string          `json:"name"`
	Version      *string         `json:"version"`
	InputExample json.RawMessage `json:"inputExample"`
}

// WorkflowSummary is one workflow of the namespace (GET /v1/workflows):
// whether a listed worker registered it, its example input, the running
// workers serving it (Served: at least one), and its pending and running
// runs.
type WorkflowSummary struct {
	Name         string            `json:"name"`
	Version      *string           `json:"version"`
	Registered   bool              `json:"registered"`
	Served       bool              `json:"served"`
	LiveWorkers  []string          `json:"liveWorkers"`
	InputExample json.RawMessage   `json:"inputExample"`
	Active       backend.RunCounts `json:"active"`
}

func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optionalJSON(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

// WorkerOf converts a registry record.
func WorkerOf(w *backend.WorkerRecord) Worker {
	out := Worker{ID: w.ID, Host: w.Host, PID: w.PID, SDK: w.SDK, SDKVersion: w.SDKVersion, State: string(w.State),
		Concurrency: w.Concurrency, InUse: w.InUse, FreeSlots: w.Concurrency - w.InUse,
		HeartbeatIntervalMs: w.HeartbeatInterval.Milliseconds(), StartedAt: w.StartedAt, LastHeartbeatAt: w.LastHeartbeatAt,
		Workflows: make([]RegisteredWorkflow, 0, len(w.Workflows))}
	for _, r := range w.Workflows {
		out.Workflows = append(out.Workflows, RegisteredWorkflow{Name: r.Name, Version: optionalText(r.Version), InputExample: optionalJSON(r.InputExample)})
	}
	return out
}

// WorkflowSummaryOf converts the SDK's summary.
func WorkflowSummaryOf(s *ow.WorkflowSummary) WorkflowSummary {
	return WorkflowSummary{Name: s.Name, Version: optionalText(s.Version), Registered: s.Registered, Served: s.Served(),
		LiveWorkers: s.LiveWorkers, InputExample: optionalJSON(s.InputExample), Active: s.Active}
}

// listWorkers answers the registry of workers in one page (a namespace
// has a row per worker heard from in the last 24 h).
func (h *Handler) listWorkers(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	ws, err := h.c.ListWorkers(r.Context())
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(ws, nil, WorkerOf))
	return nil
}

// listWorkflows answers the namespace's workflows in one page: the
// registered ones and those with active runs.
func (h *Handler) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	ss, err := h.c.ListWorkflows(r.Context())
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(ss, nil, WorkflowSummaryOf))
	return nil
}
