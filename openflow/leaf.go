package openflow

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// Module statuses recorded in a module's step.
const (
	statusSuccess = "success"
	statusFailure = "failure"
	statusSkipped = "skipped"
)

// leafRecord is the recorded result of one attempt of an identity, script
// or rawscript module: the output of its durable step. A failed script is
// a recorded result too (status "failure"), so a replay does not run it
// again; the interpreter decides about retries.
type leafRecord struct {
	// Status is success, failure or skipped (skip_if was true).
	Status string `json:"status"`
	// Result is the module's result ({"error": …} on failure).
	Result json.RawMessage `json:"result"`
	// Args are the evaluated input transforms the script ran with.
	Args json.RawMessage `json:"args,omitempty"`
	// Language is the script's.
	Language string `json:"language,omitempty"`
	// Logs are the script's stdout and stderr, interleaved.
	Logs string `json:"logs,omitempty"`
	// ProcessMS is the script process's wall time, start included, in
	// milliseconds.
	ProcessMS float64 `json:"process_ms,omitempty"`
	// Stop is set when stop_after_if was true.
	Stop *stopRecord `json:"stop,omitempty"`
	// SleepS is the evaluated sleep after the module, in seconds.
	SleepS float64 `json:"sleep_s,omitempty"`
	// Retry is the retry_if verdict on a failure (absent: no retry_if).
	Retry *bool `json:"retry,omitempty"`
}

type stopRecord struct {
	Skipped bool `json:"skipped,omitempty"`
	// Error: the stop had an error_message, so the module failed with an
	// EarlyStopError.
	Error bool `json:"error,omitempty"`
}

func (rec leafRecord) outcome() outcome {
	o := outcome{result: rec.Result, failed: rec.Status == statusFailure, skipped: rec.Status == statusSkipped,
		sleep: seconds(rec.SleepS)}
	if rec.Stop != nil {
		if rec.Stop.Error {
			o.noRetry = true
		} else {
			o.stop = &stopSignal{result: rec.Result, skipped: rec.Stop.Skipped}
		}
	}
	return o
}

// leaf runs (or replays) one attempt of a leaf module as one durable step
// named akey: skip_if (first attempt only), the input transforms (or the
// failed attempt's args, on a retry), the script, then stop_after_if and
// sleep after a success, or retry_if after a failure.
func (r *flowRun) leaf(f *frame, m *Module, akey string, attempt int, prev json.RawMessage, rs resumeState, retryArgs json.RawMessage) (leafRecord, error) {
	return runStep(r, f, akey, func(ctx context.Context) (leafRecord, error) {
		sc := r.argScope(f, prev, rs)
		if attempt == 0 && m.SkipIf != nil {
			skip, err := r.predicate(m.SkipIf.Expr, sc)
			if err != nil {
				return failed(executionErr(m.ID, err.Error())), nil
			}
			if skip {
				return leafRecord{Status: statusSkipped, Result: prev}, nil
			}
		}
		rec, err := r.runLeaf(ctx, f, m, akey, prev, sc, retryArgs)
		if err != nil {
			return leafRecord{}, err
		}
		if rec.Status == statusSuccess {
			r.afterSuccess(f, m, &rec)
		} else if m.Retry != nil && m.Retry.RetryIf != "" {
			ok := r.retryIf(f, m, rec.Result)
			rec.Retry = &ok
		}
		return rec, nil
	})
}

func failed(result json.RawMessage) leafRecord {
	return leafRecord{Status: statusFailure, Result: result}
}

// runLeaf computes the module's result: the mock, previous_result for an
// identity, or the script's.
func (r *flowRun) runLeaf(ctx context.Context, f *frame, m *Module, akey string, prev json.RawMessage, sc exprScope, args json.RawMessage) (leafRecord, error) {
	if m.Mock != nil && m.Mock.Enabled {
		return leafRecord{Status: statusSuccess, Result: m.Mock.ReturnValue}, nil
	}
	var transforms Transforms
	var content, lang string
	switch v := m.Value.(type) {
	case Identity:
		if isNull(prev) {
			prev = json.RawMessage("{}")
		}
		return leafRecord{Status: statusSuccess, Result: prev}, nil
	case RawScript:
		transforms, content, lang = v.InputTransforms, v.Content, v.Language
	case PathScript:
		transforms = v.InputTransforms
		var err error
		if content, lang, err = r.e.dirs.readScript(v.Path); err != nil {
			return failed(executionErr(m.ID, err.Error())), nil
		}
	}
	if args == nil {
		var err error
		if args, err = r.evalTransforms(transforms, sc); err != nil {
			return failed(executionErr(m.ID, err.Error())), nil
		}
	}
	timeout := r.e.opts.ScriptTimeout
	if m.Timeout != nil {
		s, err := r.numberOf(m.Timeout, sc, "timeout")
		if err != nil {
			return failed(executionErr(m.ID, err.Error())), nil
		}
		if s > 0 {
			timeout = seconds(s)
		}
	}
	return r.script(ctx, f, m, akey, lang, content, args, timeout)
}

// evalTransforms evaluates input transforms into the args object, in
// document order.
func (r *flowRun) evalTransforms(ts Transforms, sc exprScope) (json.RawMessage, error) {
	ms := make([]member, 0, len(ts))
	for i := range ts {
		v, err := r.transformValue(&ts[i].InputTransform, sc)
		if err != nil {
			return nil, err
		}
		ms = append(ms, member{key: ts[i].Name, val: v})
	}
	return encodeObject(ms), nil
}

// script runs a script in a fresh working directory (removed after).
func (r *flowRun) script(ctx context.Context, f *frame, m *Module, akey, lang, content string, args json.RawMessage, timeout time.Duration) (leafRecord, error) {
	dir, err := r.workDir(akey)
	if err != nil {
		return leafRecord{}, err
	}
	defer os.RemoveAll(dir)
	if f.shared {
		shared, err := r.sharedDir()
		if err != nil {
			return leafRecord{}, err
		}
		if err := os.Symlink(shared, filepath.Join(dir, "shared")); err != nil {
			return leafRecord{}, err
		}
	}
	job := scriptJob{lang: lang, content: content, args: args, dir: dir, timeout: timeout, env: []string{
		"WM_JOB_ID=" + r.runID + "/" + akey, "WM_FLOW_JOB_ID=" + r.runID, "WM_ROOT_FLOW_JOB_ID=" + r.runID,
		"WM_FLOW_STEP_ID=" + m.ID, "WM_WORKSPACE=openworkflow",
	}}
	if live := openLiveLog(ctx, akey); live != nil {
		job.live = live
		defer live.close()
	}
	res, err := r.e.runners.run(ctx, job)
	if err != nil {
		if ctx.Err() != nil {
			return leafRecord{}, err
		}
		var missing *RunnerMissingError
		if errors.As(err, &missing) {
			return leafRecord{Status: statusFailure, Language: lang, Args: args, Result: failure(mustJSON(map[string]string{
				"name": "RunnerMissing", "message": missing.Error(), "step_id": m.ID}))}, nil
		}
		return leafRecord{Status: statusFailure, Language: lang, Args: args, Logs: res.logs, Result: executionErr(m.ID, err.Error())}, nil
	}
	rec := leafRecord{Status: statusSuccess, Result: res.result, Args: args, Language: lang, Logs: res.logs,
		ProcessMS: float64(res.process.Microseconds()) / 1000}
	if res.failed {
		rec.Status, rec.Result = statusFailure, withStepID(failure(res.result), m.ID)
	}
	return rec, nil
}

// afterSuccess evaluates stop_after_if and the sleep on a successful
// result.
func (r *flowRun) afterSuccess(f *frame, m *Module, rec *leafRecord) {
	sc := resultScope(f, rec.Result)
	if st := m.StopAfterIf; st != nil {
		stop, err := r.predicate(st.Expr, sc)
		if err != nil {
			rec.Status, rec.Result = statusFailure, executionErr(m.ID, err.Error())
			return
		}
		if stop {
			if st.ErrorMessage != nil {
				rec.Status, rec.Result, rec.Stop = statusFailure, earlyStopError(st, rec.Result), &stopRecord{Error: true}
				return
			}
			rec.Stop = &stopRecord{Skipped: st.SkipIfStopped}
		}
	}
	if m.Sleep != nil {
		s, err := r.numberOf(m.Sleep, sc, "sleep")
		if err != nil {
			rec.Status, rec.Result = statusFailure, executionErr(m.ID, err.Error())
			return
		}
		rec.SleepS = s
	}
}

// earlyStopError is the failure of a stop_after_if (or
// stop_after_all_iters_if) with an error_message:
// {"error":{"name":"EarlyStopError","message":…,"result"?:…}}. An empty
// error_message gives Windmill's "stop after if: <expr>".
func earlyStopError(st *StopAfterIf, result json.RawMessage) json.RawMessage {
	msg := *st.ErrorMessage
	if msg == "" {
		msg = "stop after if: " + st.Expr
	}
	ms := []member{{key: "name", val: jsonString("EarlyStopError")}, {key: "message", val: jsonString(msg)}}
	if st.ErrorIncludeResult {
		ms = append(ms, member{key: "result", val: result})
	}
	return failure(encodeObject(ms))
}
