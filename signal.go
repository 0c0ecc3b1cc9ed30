package openworkflow

import (
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/telemetry"
)

// SendSignal durably sends signal with data (JSON-encoded) to every run
// currently waiting for it, as a step named name (empty: the signal's
// name), and returns the ids of the runs it reached. Signals are not
// buffered: a run that starts waiting later does not receive it. A replay
// after a crash does not send twice (the send carries the idempotency key
// "__signal:<run id>:<step key>"), as in OpenWorkflow.
func SendSignal(ctx Context, name, signal string, data any) ([]string, error) {
	x, err := execOf(ctx)
	if err != nil {
		return nil, err
	}
	if signal == "" {
		return nil, NonRetryable(fmt.Errorf("send signal: empty signal name"))
	}
	if name == "" {
		name = signal
	}
	key := x.hist.Resolve(name)
	type sent struct {
		WorkflowRunIDs []string `json:"workflowRunIds"`
	}
	if a, ok := x.hist.Completed(key); ok {
		s, err := decodeOutput[sent](key, a.Output)
		return s.WorkflowRunIDs, err
	}
	raw, err := encodeValue(data)
	if err != nil {
		return nil, NonRetryable(fmt.Errorf("data of signal %q: %w", signal, err))
	}
	a, ok := x.hist.Running(key)
	if !ok {
		if a, err = x.createAttempt(key, backend.StepSignalSend, nil, false); err != nil {
			return nil, err
		}
	}
	idem := fmt.Sprintf("__signal:%s:%s", x.run.ID, key)
	sctx, span := x.tr.start(x.ctx, telemetry.SpanSignalSend, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		telemetry.AttrSignalName.String(signal), telemetry.AttrRunID.String(x.run.ID), telemetry.AttrStepName.String(key)))
	ids, err := x.b.SendSignal(sctx, backend.SendSignalParams{Signal: signal, Data: raw, IdempotencyKey: &idem})
	span.SetAttributes(telemetry.AttrSignalRecipientCount.Int(len(ids)))
	recordError(span, err)
	span.End()
	if err != nil {
		return nil, x.backendErr(fmt.Sprintf("send signal %q", signal), err)
	}
	if ids == nil {
		ids = []string{}
	}
	out, _ := json.Marshal(sent{WorkflowRunIDs: ids})
	x.completeAttempt(a, out)
	return ids, nil
}

// WaitForSignal waits durably for the next delivery of signal to this run
// and returns its data decoded into T, with received=true. A delivery is
// either a name-addressed send ([SendSignal], [Client.SendSignal]: only
// while the run waits) or the oldest signal sent to this run with
// [Client.SignalRun] that no wait received yet (stored until the run
// waits; each received by one wait, in send order, and a replay returns
// the same one). While nothing
// has arrived the run parks ([ErrSuspended]) and a delivery wakes it; when
// the timeout ([WithTimeout], default [DefaultWaitTimeout]) passes first it
// returns received=false. Only one wait per signal name may be open in a
// run at a time.
func WaitForSignal[T any](ctx Context, signal string, opts ...WaitOption) (data T, received bool, err error) {
	var zero T
	x, err := execOf(ctx)
	if err != nil {
		return zero, false, err
	}
	o := newWaitOptions(opts)
	name := o.name
	if name == "" {
		name = signal
	}
	key := x.hist.Resolve(name)
	type delivery struct {
		Data json.RawMessage `json:"data"`
	}
	result := func(raw json.RawMessage) (T, bool, error) {
		if len(raw) == 0 || string(raw) == "null" {
			return zero, false, nil
		}
		d, err := decodeOutput[delivery](key, raw)
		if err != nil {
			return zero, false, err
		}
		v, err := decodeOutput[T](key, d.Data)
		return v, true, err
	}
	if a, ok := x.hist.Completed(key); ok {
		return result(a.Output)
	}
	a, ok := x.hist.Running(key)
	if !ok {
		for _, w := range x.hist.RunningWaits(backend.StepSignalWait) {
			var c waitContext
			if json.Unmarshal(w.Context, &c) == nil && c.Signal == signal {
				return zero, false, NonRetryable(fmt.Errorf("wait for signal %q: step %q of this run already waits for it", signal, w.StepName))
			}
		}
		timeout := o.timeout
		if timeout <= 0 {
			timeout = DefaultWaitTimeout
		}
		at := backend.FormatTime(x.now().Add(timeout))
		if a, err = x.createAttempt(key, backend.StepSignalWait, waitContext{Kind: "signal-wait", Signal: signal, TimeoutAt: &at}, false); err != nil {
			return zero, false, err
		}
	}
	got, delivered, err := x.b.ReceiveRunSignal(x.ctx, backend.ReceiveRunSignalParams{
		WorkflowRunID: x.run.ID, WorkerID: x.workerID, StepAttemptID: a.ID, Signal: signal})
	if err != nil {
		return zero, false, x.backendErr(fmt.Sprintf("read delivery of signal %q", signal), err)
	}
	var out json.RawMessage
	switch at, hasTimeout := waitTime(a); {
	case delivered:
		if len(got) == 0 {
			got = json.RawMessage("null")
		}
		out, _ = json.Marshal(delivery{Data: got})
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
