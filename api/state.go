package api

import (
	"bytes"
	"encoding/json"
)

// Attempt states, as the dashboard and the ow command show an attempt
// (see [AttemptState]).
const (
	AttemptCompleted = "completed"
	AttemptFailed    = "failed"
	AttemptRunning   = "running"
	AttemptWaiting   = "waiting"
	AttemptAbandoned = "abandoned"
	AttemptCanceled  = "canceled"
)

// AttemptState is the state of attempt s of run, as readers show it, one
// derivation for the dashboard and the ow command alike:
//
//   - failed: the attempt failed, or it completed recording the failure
//     of an OpenFlow module ([ModuleFailed]): the module raised;
//   - completed: it completed otherwise;
//   - canceled: it was still running when its run was canceled, and
//     nothing will finish it (a wait for a signal, a hook, a child or a
//     sleep ends with the run);
//   - abandoned: it is running but nobody will finish it
//     (s.Abandoned, see [MarkAbandoned]);
//   - waiting: a wait (sleep, child, signal, hook) in progress;
//   - running: a function executing.
//
// Mark the run's attempts with [MarkAbandoned] first.
func AttemptState(run *Run, s *Step) string {
	switch s.Status {
	case AttemptCompleted:
		if s.Kind == "function" && ModuleFailed(s.Output) {
			return AttemptFailed
		}
		return AttemptCompleted
	case AttemptRunning:
	default:
		return s.Status
	}
	switch {
	case run.Status == "canceled":
		return AttemptCanceled
	case s.Abandoned:
		return AttemptAbandoned
	case s.Kind != "function":
		return AttemptWaiting
	}
	return AttemptRunning
}

// ModuleFailed reports whether output, a completed attempt's, is the
// record of an OpenFlow module that failed: package openflow records a
// module's outcome as its step's result, failures included ({"status":
// "failure", "result": {"error": …}, …}), so that a replay does not run
// the module again, and the step itself completes.
func ModuleFailed(output json.RawMessage) bool { return ModuleError(output) != nil }

// ModuleError is the error of the failed OpenFlow module whose record is
// output ({name, message, …}; see [ModuleFailed]); nil for any other
// output.
func ModuleError(output json.RawMessage) json.RawMessage {
	if !bytes.Contains(output, []byte(`"failure"`)) {
		return nil
	}
	var rec struct {
		Status *string         `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(output, &rec) != nil || rec.Status == nil || *rec.Status != "failure" {
		return nil
	}
	var result struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(rec.Result, &result) != nil || len(result.Error) == 0 || string(result.Error) == "null" {
		return nil
	}
	return result.Error
}
