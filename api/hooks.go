package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// sendSignalRequest is the body of POST /v1/signals.
type sendSignalRequest struct {
	// Signal (required) is the name runs wait on.
	Signal string `json:"signal"`
	// Data is any JSON (absent: null).
	Data json.RawMessage `json:"data"`
	// IdempotencyKey makes a repeated send a no-op that answers the first
	// send's runs.
	IdempotencyKey *string `json:"idempotencyKey"`
}

// SignalResult answers POST /v1/signals: the runs that received it.
type SignalResult struct {
	RunIDs []string `json:"runIds"`
}

func (h *Handler) sendSignal(w http.ResponseWriter, r *http.Request) error {
	var req sendSignalRequest
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	if req.Signal == "" || len(req.Signal) > 255 || !backend.ValidText(req.Signal) {
		return badField("signal", "signal is required: 1 to 255 bytes of text, the name runs wait on")
	}
	data, key, err := signalBody(req.Data, req.IdempotencyKey)
	if err != nil {
		return err
	}
	ids, err := h.c.SendSignal(r.Context(), req.Signal, data, key)
	if err != nil {
		return asAPIError(err, "")
	}
	if ids == nil {
		ids = []string{}
	}
	writeJSON(w, http.StatusOK, SignalResult{RunIDs: ids})
	return nil
}

// signalRunRequest is the body of POST /v1/runs/{id}/signals/{name}.
type signalRunRequest struct {
	// Data is any JSON (absent: null).
	Data json.RawMessage `json:"data"`
	// IdempotencyKey makes a repeated send to the run and signal a no-op
	// that answers the first send.
	IdempotencyKey *string `json:"idempotencyKey"`
}

// RunSignal answers POST /v1/runs/{id}/signals/{name}.
type RunSignal struct {
	// ID is the signal's id (sig_…); for a duplicate, the first send's.
	ID string `json:"id"`
	// Delivered: a wait of the run had received it when the send answered.
	Delivered bool `json:"delivered"`
	// Duplicate: the send repeated an earlier one with the same
	// idempotency key, and stored nothing.
	Duplicate bool `json:"duplicate"`
}

// signalRun sends a signal to one run, stored until the run waits for it
// (Client.SignalRun): 202, or 200 for a keyed repeat.
func (h *Handler) signalRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if name == "" || len(name) > 255 || !backend.ValidText(name) {
		return badField("name", "the signal name in the path must be 1 to 255 bytes of text, the name the run waits on")
	}
	var req signalRunRequest
	if err := decodeBody(r, &req, true); err != nil {
		return err
	}
	data, key, err := signalBody(req.Data, req.IdempotencyKey)
	if err != nil {
		return err
	}
	s, err := h.c.SignalRun(r.Context(), id, name, data, key)
	if err != nil {
		return asAPIError(err, "id")
	}
	status := http.StatusAccepted
	if s.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, RunSignal{ID: s.ID, Delivered: s.Delivered, Duplicate: s.Duplicate})
	return nil
}

// pathToken reads and checks the {token} path parameter.
func pathToken(r *http.Request) (string, error) {
	tok := r.PathValue("token")
	if err := backend.CheckToken(tok); err != nil {
		return "", badField("token", "the token in the path must be 1 to %d bytes of text", backend.MaxTokenLength)
	}
	return tok, nil
}

func (h *Handler) getHook(w http.ResponseWriter, r *http.Request) error {
	tok, err := pathToken(r)
	if err != nil {
		return err
	}
	q, err := parseQuery(r, "resolveData")
	if err != nil {
		return err
	}
	hook, err := h.c.GetHook(r.Context(), tok)
	if err != nil {
		return asAPIError(err, "token")
	}
	writeJSON(w, http.StatusOK, HookOf(hook, q.resolveNone()))
	return nil
}

// HookDelivery answers POST /v1/hooks/{token}: the hook, its run and the
// payload's place among the hook's payloads (from 1).
type HookDelivery struct {
	HookID string `json:"hookId"`
	RunID  string `json:"runId"`
	Seq    int64  `json:"seq"`
}

func (h *Handler) resumeHook(w http.ResponseWriter, r *http.Request) error {
	tok, err := pathToken(r)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return readBodyError(err)
	}
	payload := json.RawMessage("null")
	if len(strings.TrimSpace(string(body))) > 0 {
		if !json.Valid(body) {
			var v any
			return jsonError(json.Unmarshal(body, &v))
		}
		if err := backend.ValidateJSON(body); err != nil {
			return badField("", "the payload cannot be stored: %s", err)
		}
		payload = body
	}
	return h.deliver(w, r, tok, payload, http.StatusOK)
}

// deliver resumes the hook of tok with payload and answers status.
func (h *Handler) deliver(w http.ResponseWriter, r *http.Request, tok string, payload json.RawMessage, status int) error {
	hook, p, err := h.c.ResumeHook(r.Context(), tok, payload)
	var refused *ow.HookPayloadError
	switch {
	case errors.As(err, &refused):
		// The hook's payload schema refused it: nothing was stored.
		return badField("payload", "%s", refused)
	case err != nil:
		return asAPIError(err, "token")
	}
	if status == http.StatusAccepted {
		w.WriteHeader(status)
		return nil
	}
	writeJSON(w, status, HookDelivery{HookID: p.HookID, RunID: hook.WorkflowRunID, Seq: p.Seq})
	return nil
}

// WebhookRequest is the payload a webhook delivers to its hook: the HTTP
// request as it came, its body as text when it is valid UTF-8 (Body), else
// in base64 (BodyBase64). The Authorization and Cookie headers are left
// out: a workflow's history is no place for credentials.
type WebhookRequest struct {
	Method     string              `json:"method"`
	URL        string              `json:"url"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body,omitempty"`
	BodyBase64 []byte              `json:"bodyBase64,omitempty"`
}

func (h *Handler) deliverWebhook(w http.ResponseWriter, r *http.Request) error {
	tok, err := pathToken(r)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return readBodyError(err)
	}
	req := WebhookRequest{Method: r.Method, URL: r.URL.RequestURI(), Headers: map[string][]string{}}
	for k, v := range r.Header {
		if k == "Authorization" || k == "Cookie" {
			continue
		}
		req.Headers[k] = v
	}
	if utf8.Valid(body) {
		s := string(body)
		req.Body = &s
	} else {
		req.BodyBase64 = body
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return badField("", "the request cannot be encoded: %s", err)
	}
	if err := backend.ValidateJSON(payload); err != nil {
		return badField("", "the request cannot be stored: %s", err)
	}
	return h.deliver(w, r, tok, payload, http.StatusAccepted)
}

func readBodyError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return err
	}
	return badField("", "read the request body: %s", err)
}

func (h *Handler) listRunHooks(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := parseQuery(r, "resolveData")
	if err != nil {
		return err
	}
	all, err := q.resolveAll()
	if err != nil {
		return err
	}
	if _, err := h.c.GetRun(r.Context(), id); err != nil {
		return asAPIError(err, "id")
	}
	hooks, err := h.c.ListHooks(r.Context(), id)
	if err != nil {
		return asAPIError(err, "")
	}
	writeJSON(w, http.StatusOK, listOf(hooks, nil, func(hk *backend.Hook) Hook { return HookOf(hk, !all) }))
	return nil
}

// signalBody checks a signal's data and idempotency key, as both sends
// (by name, and to one run) take them: data nil when absent (null), key
// "" when absent.
func signalBody(raw json.RawMessage, idempotencyKey *string) (data any, key string, err error) {
	if raw != nil {
		if err := backend.ValidateJSON(raw); err != nil {
			return nil, "", badField("data", "data cannot be stored: %s", err)
		}
		data = raw
	}
	if k := idempotencyKey; k != nil {
		if *k == "" || len(*k) > 255 || !backend.ValidText(*k) {
			return nil, "", badField("idempotencyKey", "idempotencyKey must be 1 to 255 bytes of text")
		}
		key = *k
	}
	return data, key, nil
}
