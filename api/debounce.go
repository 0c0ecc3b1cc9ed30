package api

import (
	"encoding/json"
	"math"
	"net/http"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// debounceRequest is POST /v1/runs's debounce member (ow.WithDebounce):
// the start joins the pending run of its key (answered 200) or creates
// it, due periodSeconds from now (201).
type debounceRequest struct {
	Key             string   `json:"key"`
	PeriodSeconds   float64  `json:"periodSeconds"`
	MaxDelaySeconds *float64 `json:"maxDelaySeconds"`
	Leading         bool     `json:"leading"`
}

// maxSeconds bounds the durations a request gives in seconds (100 years),
// so that their conversion to time.Duration cannot overflow.
const maxSeconds = 100 * 365 * 24 * 3600

func seconds(field string, s float64) (time.Duration, error) {
	if s < 0 || math.IsNaN(s) || math.IsInf(s, 0) || s > maxSeconds {
		return 0, badField(field, "%s must be a number of seconds from 0 to 100 years, got %v", field, s)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// option checks d and returns its start option; the checks that need the
// defaults (max delay at least the period) are the backend's, answered
// 400 naming the field.
func (d *debounceRequest) option() (ow.StartOption, error) {
	if d.Key == "" || len(d.Key) > backend.MaxDebounceKeyLength || !backend.ValidText(d.Key) {
		return nil, badField("debounce.key", "debounce.key must be 1 to %d bytes of text", backend.MaxDebounceKeyLength)
	}
	period, err := seconds("debounce.periodSeconds", d.PeriodSeconds)
	if err != nil {
		return nil, err
	}
	var maxDelay time.Duration
	if d.MaxDelaySeconds != nil {
		if maxDelay, err = seconds("debounce.maxDelaySeconds", *d.MaxDelaySeconds); err != nil {
			return nil, err
		}
		if maxDelay == 0 {
			return nil, badField("debounce.maxDelaySeconds", "debounce.maxDelaySeconds must be more than 0 (leave it out for the default)")
		}
	}
	return ow.WithDebounce(ow.Debounce{Key: d.Key, Period: period, MaxDelay: maxDelay, Leading: d.Leading}), nil
}

// DebouncedRun is a pending debounced run as GET /v1/debounced-runs lists
// it: the run (without its input), its key, when it is due and the
// burst's deadline.
type DebouncedRun struct {
	Run      Run       `json:"run"`
	Key      string    `json:"key"`
	DueAt    time.Time `json:"dueAt"`
	Deadline time.Time `json:"deadline"`
}

func (h *Handler) listDebouncedRuns(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "limit")
	if err != nil {
		return err
	}
	limit, err := q.limit(backend.DefaultPageSize)
	if err != nil {
		return err
	}
	db, ok := h.c.Backend().(backend.Debouncer)
	if !ok {
		return asAPIError(backend.ErrNotSupported, "")
	}
	ds, err := db.ListDebouncedRuns(r.Context(), limit)
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(ds, nil, func(d *backend.DebouncedRun) DebouncedRun {
		d.Run.Input = nil
		return DebouncedRun{Run: RunOf(d.Run, false), Key: d.Key, DueAt: d.DueAt, Deadline: d.Deadline}
	}))
	return nil
}

// enqueueBatchItemRequest is the body of POST /v1/batches: an item for
// the open batch of (workflowName, key), and the batch's options (those
// of the first item of a batch apply).
type enqueueBatchItemRequest struct {
	WorkflowName   string          `json:"workflowName"`
	Version        *string         `json:"version"`
	Key            string          `json:"key"`
	Item           json.RawMessage `json:"item"`
	MaxSize        int             `json:"maxSize"`
	TimeoutSeconds float64         `json:"timeoutSeconds"`
	MaxBytes       int             `json:"maxBytes"`
}

// BatchAppend answers POST /v1/batches: the item's sequence number, the
// batch's count and bytes after it (0 when it was flushed), and the ids
// of the runs the append flushed.
type BatchAppend struct {
	Seq     int64    `json:"seq"`
	Count   int      `json:"count"`
	Bytes   int64    `json:"bytes"`
	Flushed []string `json:"flushed"`
}

func (h *Handler) enqueueBatchItem(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	var req enqueueBatchItemRequest
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	timeout, err := seconds("timeoutSeconds", req.TimeoutSeconds)
	if err != nil {
		return err
	}
	version := ""
	if req.Version != nil {
		version = *req.Version
	}
	var item any
	if req.Item != nil {
		if err := backend.ValidateJSON(req.Item); err != nil {
			return badField("item", "item cannot be stored: %s", err)
		}
		item = req.Item
	}
	out, err := h.c.EnqueueBatchItem(r.Context(), req.WorkflowName, version, req.Key, item,
		ow.BatchOptions{MaxSize: req.MaxSize, Timeout: timeout, MaxBytes: req.MaxBytes})
	if err != nil {
		return asAPIError(err, "")
	}
	resp := BatchAppend{Seq: out.Seq, Count: out.Count, Bytes: out.Bytes, Flushed: []string{}}
	for _, run := range out.Flushed {
		resp.Flushed = append(resp.Flushed, run.ID)
	}
	writeJSON(w, http.StatusCreated, resp)
	return nil
}

func (h *Handler) listBatches(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "limit")
	if err != nil {
		return err
	}
	limit, err := q.limit(backend.DefaultPageSize)
	if err != nil {
		return err
	}
	bs, ok := h.c.Backend().(backend.BatchStore)
	if !ok {
		return asAPIError(backend.ErrNotSupported, "")
	}
	open, err := bs.ListOpenBatches(r.Context(), limit)
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(open, nil, func(o *backend.OpenBatch) backend.OpenBatch { return *o }))
	return nil
}
