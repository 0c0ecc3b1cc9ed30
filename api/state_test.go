package api_test

import (
	"encoding/json"
	"testing"

	"github.com/openworkflow-go/openworkflow/api"
)

func TestAttemptState(t *testing.T) {
	const failedModule = `{"status":"failure","result":{"error":{"name":"ExecutionErr","message":"exit 3"}},"logs":""}`
	for _, c := range []struct {
		name      string
		run       string
		kind      string
		status    string
		abandoned bool
		output    string
		want      string
	}{
		{"a completed step", "completed", "function", "completed", false, `"ok"`, "completed"},
		{"a failed step", "running", "function", "failed", false, ``, "failed"},
		{"an OpenFlow module that raised", "failed", "function", "completed", false, failedModule, "failed"},
		{"a module that succeeded", "completed", "function", "completed", false, `{"status":"success","result":1}`, "completed"},
		{"a user step returning a failure status without an error", "completed", "function", "completed", false, `{"status":"failure","result":{}}`, "completed"},
		{"a wait of a parked run", "running", "signal-wait", "running", false, ``, "waiting"},
		{"a wait of a canceled run", "canceled", "signal-wait", "running", true, ``, "canceled"},
		{"a step running when the run was canceled", "canceled", "function", "running", true, ``, "canceled"},
		{"a wait of a run failed by its deadline", "failed", "sleep", "running", true, ``, "abandoned"},
		{"a step whose worker was lost", "running", "function", "running", true, ``, "abandoned"},
		{"a step executing", "running", "function", "running", false, ``, "running"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := api.Run{Status: c.run}
			s := api.Step{Kind: c.kind, Status: c.status, Abandoned: c.abandoned}
			if c.output != "" {
				s.Output = json.RawMessage(c.output)
			}
			if got := api.AttemptState(&run, &s); got != c.want {
				t.Errorf("AttemptState = %q, want %q", got, c.want)
			}
		})
	}
	if e := api.ModuleError(json.RawMessage(failedModule)); string(e) != `{"name":"ExecutionErr","message":"exit 3"}` {
		t.Errorf("ModuleError = %s", e)
	}
}
