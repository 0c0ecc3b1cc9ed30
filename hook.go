package openworkflow

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// Errors of hooks, re-exported from package backend.
var (
	// ErrHookNotFound: no live hook holds the token (Client.ResumeHook).
	ErrHookNotFound = backend.ErrHookNotFound
	// ErrHookConflict: CreateHook's token is held by another live hook.
	ErrHookConflict = backend.ErrHookConflict
)

// HookOption configures a hook at its creation: [WithToken],
// [WithMetadata], [WithPayloadSchema].
type HookOption func(*hookOptions)

type hookOptions struct {
	token    string
	metadata any
	schema   json.RawMessage // WithPayloadSchema's, nil for none
}

// WithToken gives the hook its token, e.g. one derived from an order id
// so that a known caller can resume it; without it the token is 32 random
// bytes, base64url. A token is 1 to 256 bytes.
func WithToken(token string) HookOption { return func(o *hookOptions) { o.token = token } }

// WithMetadata attaches JSON-encoded v to the hook, for whoever looks it
// up by token (the API, the dashboard).
func WithMetadata(v any) HookOption { return func(o *hookOptions) { o.metadata = v } }

// Hook is a hook of the running workflow: a token a caller outside the
// workflow resumes it with (Client.ResumeHook, POST /v1/hooks/{token},
// or any request to /v1/webhooks/{token}), delivering payloads of type T
// that [Hook.Receive] returns in order.
type Hook[T any] struct {
	// ID and Token identify the hook; give the token to whoever must
	// resume the workflow.
	ID    string
	Token string
	x     *pass
	key   string // the creating step's durable key: receives are named after it
	seq   int64  // the sequence number of the last payload received
}

// hookRecord is the output of a hook's creating step.
type hookRecord struct {
	HookID string `json:"hookId"`
	Token  string `json:"token"`
}

// hookDelivery is the output of a receive: the payload, or null for a
// receive that timed out.
type hookDelivery struct {
	Seq  int64           `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// CreateHook creates a hook as a durable step named name and returns it.
// Payloads delivered to it are kept until the workflow receives them, so
// the token may be handed out before the workflow waits. The hook lives
// while the run does: when the run ends, its hooks are disposed and their
// tokens may be taken again. A token another live hook holds fails the
// step without retry with an error wrapping [ErrHookConflict]. The backend
// must implement backend.HookStore (both built-in ones do).
func CreateHook[T any](ctx Context, name string, opts ...HookOption) (*Hook[T], error) {
	x, err := execOf(ctx)
	if err != nil {
		return nil, err
	}
	key := x.hist.Resolve(name)
	if a, ok := x.hist.Completed(key); ok {
		r, err := decodeOutput[hookRecord](key, a.Output)
		if err != nil {
			return nil, err
		}
		return &Hook[T]{ID: r.HookID, Token: r.Token, x: x, key: key}, nil
	}
	hs, ok := x.b.(backend.HookStore)
	if !ok {
		return nil, NonRetryable(fmt.Errorf("create hook %q: %w: the backend has no hooks", key, backend.ErrNotSupported))
	}
	var o hookOptions
	for _, f := range opts {
		f(&o)
	}
	if o.token == "" {
		o.token = newToken()
	}
	if err := backend.CheckToken(o.token); err != nil {
		return nil, NonRetryable(fmt.Errorf("create hook %q: %w", key, err))
	}
	meta, err := hookMetadata(o)
	if err != nil {
		return nil, NonRetryable(fmt.Errorf("create hook %q: %w", key, err))
	}
	if err := x.gate(false); err != nil {
		return nil, err
	}
	if err := x.flush(); err != nil {
		return nil, err
	}
	a := x.newAttempt(key, backend.StepHook, nil, backend.StepRunning)
	h, err := hs.CreateHook(x.ctx, backend.CreateHookParams{
		WorkflowRunID: x.run.ID, WorkerID: x.workerID, ID: id.New(id.PrefixHook),
		StepName: key, StepAttemptID: a.ID, Token: o.token, Metadata: meta,
	})
	switch {
	case errors.Is(err, backend.ErrHookConflict), errors.Is(err, backend.ErrInvalidArgument):
		f := x.finished(a, backend.StepFailed, nil, encodeError(err))
		x.deferWrite(x.insertWrite(f), false)
		x.hist.Record(f)
		return nil, &StepError{StepName: key, Err: NonRetryable(fmt.Errorf("create hook %q: %w", key, err))}
	case err != nil:
		return nil, x.backendErr(fmt.Sprintf("create hook %q", key), err)
	}
	out, _ := json.Marshal(hookRecord{HookID: h.ID, Token: h.Token})
	f := x.finished(a, backend.StepCompleted, out, nil)
	x.deferWrite(x.insertWrite(f), false)
	x.hist.Record(f)
	return &Hook[T]{ID: h.ID, Token: h.Token, x: x, key: key}, nil
}

// Receive waits durably for the hook's next payload and returns it decoded
// into T, with received=true; payloads come in the order they were
// delivered, each once. While none has come, the run parks
// ([ErrSuspended]) and a delivery wakes it; when the timeout ([WithTimeout],
// default [DefaultWaitTimeout]) passes first it returns received=false.
// Each call is a step of its own, named after the hook's step
// ([WithStepName] names it otherwise).
func (h *Hook[T]) Receive(opts ...WaitOption) (data T, received bool, err error) {
	var zero T
	x := h.x
	o := newWaitOptions(opts)
	name := o.name
	if name == "" {
		name = h.key + "/receive"
	}
	key := x.hist.Resolve(name)
	result := func(raw json.RawMessage) (T, bool, error) {
		if len(raw) == 0 || string(raw) == "null" {
			return zero, false, nil
		}
		d, err := decodeOutput[hookDelivery](key, raw)
		if err != nil {
			return zero, false, err
		}
		h.seq = d.Seq
		v, err := decodeOutput[T](key, d.Data)
		return v, true, err
	}
	if a, ok := x.hist.Completed(key); ok {
		return result(a.Output)
	}
	hs, ok := x.b.(backend.HookStore)
	if !ok {
		return zero, false, NonRetryable(fmt.Errorf("receive from hook %q: %w: the backend has no hooks", h.key, backend.ErrNotSupported))
	}
	a, ok := x.hist.Running(key)
	if !ok {
		timeout := o.timeout
		if timeout <= 0 {
			timeout = DefaultWaitTimeout
		}
		at := backend.FormatTime(x.now().Add(timeout))
		if a, err = x.createAttempt(key, backend.StepHookWait, waitContext{Kind: "hook-wait", HookID: h.ID, AfterSeq: h.seq, TimeoutAt: &at}, false); err != nil {
			return zero, false, err
		}
	}
	var after int64
	if c, ok := decodeWaitContext(a); ok {
		after = c.AfterSeq
	}
	p, got, err := hs.NextHookPayload(x.ctx, h.ID, after)
	if err != nil {
		return zero, false, x.backendErr(fmt.Sprintf("read the payloads of hook %q", h.key), err)
	}
	var out json.RawMessage
	switch at, hasTimeout := waitTime(a); {
	case got:
		out, _ = json.Marshal(hookDelivery{Seq: p.Seq, Data: p.Data})
	case hasTimeout && !x.now().Before(at):
		out = json.RawMessage("null")
	case hasTimeout:
		return zero, false, x.suspend(at)
	default:
		return zero, false, x.suspend(x.now().Add(DefaultWaitTimeout))
	}
	x.completeAttempt(a, out)
	return result(out)
}

// newToken returns 32 random bytes, base64url: a hook token nobody guesses.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ResumeHook delivers data (JSON-encoded) to the live hook holding token
// and returns the hook (its run, its metadata) and the payload as stored
// (its sequence number among the hook's payloads). The hook's run, if
// parked waiting on it, is woken at once; otherwise the payload is kept
// until the workflow receives it. An unknown token, or one whose run has
// ended, gives an error wrapping [ErrHookNotFound] and stores nothing. A
// payload the hook's schema refuses ([WithPayloadSchema]) gives a
// *[HookPayloadError] and stores nothing: the run waits as it did. The
// backend must implement backend.HookStore, else the error wraps
// backend.ErrNotSupported.
func (c *Client) ResumeHook(ctx context.Context, token string, data any) (*backend.Hook, *backend.HookPayload, error) {
	hs, err := c.hooks()
	if err != nil {
		return nil, nil, err
	}
	if err := backend.CheckToken(token); err != nil {
		return nil, nil, fmt.Errorf("resume hook: %w", err)
	}
	raw, err := encodeValue(data)
	if err != nil {
		return nil, nil, fmt.Errorf("resume hook: payload: %w", err)
	}
	// The schema is read with the hook: a hook's metadata never changes,
	// so the payload is checked against the hook it is delivered to
	// unless the token changes hands in between (its run ends and another
	// run's hook takes it), which only a token chosen with WithToken can.
	h, err := hs.GetHookByToken(ctx, token)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckHookPayload(h, raw); err != nil {
		return nil, nil, err
	}
	return hs.ResumeHook(ctx, token, raw)
}

// GetHook returns the live hook holding token, or an error wrapping
// [ErrHookNotFound].
func (c *Client) GetHook(ctx context.Context, token string) (*backend.Hook, error) {
	hs, err := c.hooks()
	if err != nil {
		return nil, err
	}
	if err := backend.CheckToken(token); err != nil {
		return nil, fmt.Errorf("get hook: %w", err)
	}
	return hs.GetHookByToken(ctx, token)
}

// ListHooks returns the hooks of run runID, live or disposed, oldest
// first.
func (c *Client) ListHooks(ctx context.Context, runID string) ([]backend.Hook, error) {
	hs, err := c.hooks()
	if err != nil {
		return nil, err
	}
	return hs.ListHooks(ctx, runID)
}

func (c *Client) hooks() (backend.HookStore, error) {
	hs, ok := c.b.(backend.HookStore)
	if !ok {
		return nil, fmt.Errorf("hooks: %w: the backend has no hooks", backend.ErrNotSupported)
	}
	return hs, nil
}
