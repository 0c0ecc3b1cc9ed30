package openflow_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// semanticsCases are flows exercising behaviours the corpus does not:
// each runs on both backends and must give exactly result.
var semanticsCases = []struct {
	name    string
	flow    string
	args    string
	success bool
	result  string
	skipped bool
}{
	{
		name: "a while loop ends through a stop_after_if on a body step reading its own previous result",
		flow: `{"value":{"modules":[{"id":"w","value":{"type":"whileloopflow","skip_failures":false,"modules":[
			{"id":"n","value":{"type":"rawscript","language":"bash","content":"prev=\"$1\"\necho $((prev+1))",
			  "input_transforms":{"prev":{"type":"javascript","expr":"results.n ?? flow_input.start"}}},
			 "stop_after_if":{"expr":"Number(result) >= 3"}}]}}]}}`,
		args: `{"start": 0}`, success: true, result: `["1","2","3"]`,
	},
	{
		name: "nested loops see the outer iteration as iter_parent, and the loop's result is the array of iteration results",
		flow: `{"value":{"modules":[{"id":"outer","value":{"type":"forloopflow","iterator":{"type":"static","value":["x","y"]},"modules":[
			{"id":"inner","value":{"type":"forloopflow","iterator":{"type":"javascript","expr":"[1, 2]"},"modules":[
				{"id":"pair","value":{"type":"identity"},"mock":{"enabled":false}},
				{"id":"label","value":{"type":"rawscript","language":"python3","content":"def main(a, b):\n    return f'{a}{b}'",
				 "input_transforms":{"a":{"type":"javascript","expr":"flow_input.iter_parent.value"},"b":{"type":"javascript","expr":"flow_input.iter.value"}}}}]}}]}}]}}`,
		args: `{}`, success: true, result: `[["x1","x2"],["y1","y2"]]`,
	},
	{
		name: "an id inside a loop body read after the loop gives the last iteration's value",
		flow: `{"value":{"modules":[{"id":"l","value":{"type":"forloopflow","iterator":{"type":"static","value":[1,2,3]},"modules":[
			{"id":"sq","value":{"type":"rawscript","language":"python3","content":"def main(n):\n    return n * n",
			 "input_transforms":{"n":{"type":"javascript","expr":"flow_input.iter.value"}}}}]}},
			{"id":"after","value":{"type":"rawscript","language":"python3","content":"def main(last, all):\n    return [last, all]",
			 "input_transforms":{"last":{"type":"javascript","expr":"results.sq"},"all":{"type":"javascript","expr":"results.l"}}}}]}}`,
		args: `{}`, success: true, result: `[9,[1,4,9]]`,
	},
	{
		name: "continue_on_error passes the {error} result on as previous_result",
		flow: `{"value":{"modules":[
			{"id":"bad","continue_on_error":true,"value":{"type":"rawscript","language":"python3","content":"def main():\n    raise ValueError('no')"}},
			{"id":"next","value":{"type":"rawscript","language":"python3","content":"def main(e):\n    return e['error']['name'] + ': ' + e['error']['message']",
			 "input_transforms":{"e":{"type":"javascript","expr":"previous_result"}}}}]}}`,
		args: `{}`, success: true, result: `"ValueError: no"`,
	},
	{
		name: "a failing last module with continue_on_error still fails the flow, without running the failure module",
		flow: `{"value":{"modules":[
			{"id":"bad","continue_on_error":true,"value":{"type":"rawscript","language":"bash","content":"exit 3"}}],
			"failure_module":{"value":{"type":"identity"},"mock":{"enabled":true,"return_value":"handled"}}}}`,
		args: `{}`, success: false, result: `{"error":{"name":"ExecutionErr","message":"exit code for \"bash\": 3, last log lines:\n","step_id":"bad"}}`,
	},
	{
		name: "a failure module whose result has recover: true makes the flow succeed",
		flow: `{"value":{"modules":[{"id":"a","value":{"type":"rawscript","language":"bash","content":"exit 1"}}],
			"failure_module":{"value":{"type":"rawscript","language":"python3","content":"def main(name, step):\n    return {'recover': True, 'saw': [name, step]}",
			 "input_transforms":{"name":{"type":"javascript","expr":"error.name"},"step":{"type":"javascript","expr":"error.step_id"}}}}}}`,
		args: `{}`, success: true, result: `{"recover":true,"saw":["ExecutionErr","a"]}`,
	},
	{
		name: "an early stop's error fails the flow despite continue_on_error, and the failure module gets it",
		flow: `{"value":{"modules":[
			{"id":"s","continue_on_error":true,"value":{"type":"identity"},"mock":{"enabled":true,"return_value":1},
			 "stop_after_if":{"expr":"result === 1","error_message":"halt"}},
			{"id":"never","value":{"type":"rawscript","language":"bash","content":"exit 1"}}],
			"failure_module":{"value":{"type":"rawscript","language":"python3","content":"def main(e):\n    return {'handled': e}",
			 "input_transforms":{"e":{"type":"javascript","expr":"previous_result"}}}}}}`,
		args: `{}`, success: false, result: `{"handled":{"error":{"name":"EarlyStopError","message":"halt"}}}`,
	},
	{
		name: "a mocked module returns its return_value without running",
		flow: `{"value":{"modules":[{"id":"m","mock":{"enabled":true,"return_value":{"mocked":1}},
			"value":{"type":"rawscript","language":"bash","content":"exit 1"}}]}}`,
		args: `{}`, success: true, result: `{"mocked":1}`,
	},
	{
		name: "skip_expr true ends the flow at once, skipped, with \"stopped early\"",
		flow: `{"value":{"skip_expr":"flow_input.skip","modules":[{"id":"a","value":{"type":"rawscript","language":"bash","content":"exit 1"}}]}}`,
		args: `{"skip": true}`, success: true, result: `"stopped early"`, skipped: true,
	},
	{
		name: "a stop inside a branchone stops the whole flow with the stopping step's result",
		flow: `{"value":{"modules":[{"id":"b","value":{"type":"branchone","branches":[{"expr":"true","modules":[
			{"id":"s","value":{"type":"identity"},"mock":{"enabled":true,"return_value":"stop here"},"stop_after_if":{"expr":"true"}}]}],"default":[]}},
			{"id":"never","value":{"type":"rawscript","language":"bash","content":"exit 1"}}]}}`,
		args: `{}`, success: true, result: `"stop here"`,
	},
	{
		name: "a stop inside a parallel branchall stops the flow, once every branch finished, with the branchall's array",
		flow: `{"value":{"modules":[{"id":"all","value":{"type":"branchall","parallel":true,"branches":[
			{"modules":[{"id":"s","value":{"type":"identity"},"mock":{"enabled":true,"return_value":1},"stop_after_if":{"expr":"true","skip_if_stopped":true}}]},
			{"modules":[{"id":"t","value":{"type":"rawscript","language":"python3","content":"def main():\n    return 2"}}]}]}},
			{"id":"never","value":{"type":"rawscript","language":"bash","content":"exit 1"}}]}}`,
		args: `{}`, success: true, skipped: true, result: `[1,2]`,
	},
	{
		name: "a stop inside a branchall inside a loop breaks the loop, whose last iteration holds the branchall's array",
		flow: `{"value":{"modules":[{"id":"l","value":{"type":"forloopflow","iterator":{"type":"static","value":[1,2,3]},"modules":[
			{"id":"all","value":{"type":"branchall","parallel":false,"branches":[
				{"modules":[{"id":"v","value":{"type":"identity"},"mock":{"enabled":true,"return_value":"x"}}]},
				{"modules":[{"id":"w","value":{"type":"rawscript","language":"python3","content":"def main(i):\n    return i",
				 "input_transforms":{"i":{"type":"javascript","expr":"flow_input.iter.value"}}},"stop_after_if":{"expr":"result == 2"}}]}]}}]}},
			{"id":"after","value":{"type":"identity"}}]}}`,
		args: `{}`, success: true, result: `[["x",1],["x",2]]`,
	},
	{
		name: "stop_after_all_iters_if with an error_message fails the flow with an EarlyStopError holding the loop's array",
		flow: `{"value":{"modules":[{"id":"l","value":{"type":"forloopflow","iterator":{"type":"static","value":[1,2,3]},"modules":[
			{"id":"d","value":{"type":"rawscript","language":"python3","content":"def main(n):\n    return n * 2",
			 "input_transforms":{"n":{"type":"javascript","expr":"flow_input.iter.value"}}}}]},
			"stop_after_all_iters_if":{"expr":"result.length == 3","error_message":"three is too many","error_include_result":true}},
			{"id":"never","value":{"type":"rawscript","language":"bash","content":"exit 1"}}]}}`,
		args: `{}`, success: false, result: `{"error":{"name":"EarlyStopError","message":"three is too many","result":[2,4,6]}}`,
	},
	{
		name: "stop_after_all_iters_if on a branchall with an empty error_message fails with Windmill's default message",
		flow: `{"value":{"modules":[{"id":"b","value":{"type":"branchall","branches":[
			{"modules":[{"id":"x","value":{"type":"identity"},"mock":{"enabled":true,"return_value":1}}]}]},
			"stop_after_all_iters_if":{"expr":"result[0] === 1","error_message":""}},
			{"id":"never","value":{"type":"rawscript","language":"bash","content":"exit 1"}}]}}`,
		args: `{}`, success: false, result: `{"error":{"name":"EarlyStopError","message":"stop after if: result[0] === 1"}}`,
	},
	{
		name: "stop_after_all_iters_if without an error_message stops the flow successfully with the loop's array",
		flow: `{"value":{"modules":[{"id":"l","value":{"type":"forloopflow","iterator":{"type":"static","value":[1,2]},"modules":[
			{"id":"v","value":{"type":"identity"},"mock":{"enabled":true,"return_value":0}}]},
			"stop_after_all_iters_if":{"expr":"true"}},
			{"id":"never","value":{"type":"rawscript","language":"bash","content":"exit 1"}}]}}`,
		args: `{}`, success: true, result: `[0,0]`,
	},
	{
		name: "a stop inside a loop body only breaks the loop, which keeps the stopping iteration",
		flow: `{"value":{"modules":[{"id":"l","value":{"type":"forloopflow","iterator":{"type":"static","value":[1,2,3,4]},"modules":[
			{"id":"v","value":{"type":"identity"},"stop_after_if":{"expr":"result.iter.value == 2"}}]}},
			{"id":"len","value":{"type":"rawscript","language":"python3","content":"def main(l):\n    return len(l)","input_transforms":{"l":{"type":"javascript","expr":"results.l"}}}}]}}`,
		args: `{}`, success: true, result: `2`,
	},
	{
		name: "an empty branchone branch passes previous_result through; an empty branchall branch returns flow_input",
		flow: `{"value":{"modules":[{"id":"a","value":{"type":"identity"},"mock":{"enabled":true,"return_value":7}},
			{"id":"one","value":{"type":"branchone","branches":[],"default":[]}},
			{"id":"all","value":{"type":"branchall","branches":[{"modules":[]}]}},
			{"id":"r","value":{"type":"identity"},"mock":{"enabled":true,"return_value":null},
			 "skip_if":{"expr":"true"}}]}}`,
		args: `{"k":1}`, success: true, result: `[{"k":1}]`,
	},
	{
		name: "a parallel loop with parallelism keeps results in iteration order",
		flow: `{"value":{"modules":[{"id":"p","value":{"type":"forloopflow","parallel":true,"parallelism":2,
			"iterator":{"type":"javascript","expr":"[5, 4, 3, 2, 1]"},"modules":[
			{"id":"w","value":{"type":"rawscript","language":"bash","content":"n=\"$1\"\nsleep 0.0$n\necho $n","input_transforms":{"n":{"type":"javascript","expr":"flow_input.iter.value"}}}}]}}]}}`,
		args: `{}`, success: true, result: `["5","4","3","2","1"]`,
	},
	{
		name: "a module's timeout kills its script",
		flow: `{"value":{"modules":[{"id":"slow","timeout":1,"value":{"type":"rawscript","language":"bash","content":"sleep 30"}}]}}`,
		args: `{}`, success: false, result: `{"error":{"name":"ExecutionErr","message":"timeout after 1s: the script ran longer than its module's timeout","step_id":"slow"}}`,
	},
	{
		name: "a failing input transform fails the module with Windmill's ExecutionErr",
		flow: `{"value":{"modules":[{"id":"t","value":{"type":"rawscript","language":"bash","content":"echo hi",
			"input_transforms":{"x":{"type":"javascript","expr":"nope.x"}}}}]}}`,
		args: `{}`, success: false,
		result: "{\"error\":{\"name\":\"ExecutionErr\",\"message\":\"execution error:\\nError during isolated evaluation of expression `nope.x`:\\nReferenceError: nope is not defined\",\"step_id\":\"t\"}}",
	},
	{
		name: "a flow module runs the flow found by path with its own flow_env",
		flow: `{"value":{"modules":[{"id":"sub","value":{"type":"flow","path":"f/examples/double",
			"input_transforms":{"n":{"type":"javascript","expr":"flow_input.x + 1"}}}}],"flow_env":{"UNIT":"pears"}}}`,
		args: `{"x": 20}`, success: true, result: `"42 apples"`,
	},
	{
		name: "a script module runs the script found by path",
		flow: `{"value":{"modules":[{"id":"s","value":{"type":"script","path":"f/examples/double",
			"input_transforms":{"n":{"type":"static","value":5}}}}]}}`,
		args: `{}`, success: true, result: `10`,
	},
	{
		name: "exponential retries re-run a failing module with the same args",
		flow: `{"value":{"modules":[{"id":"r","retry":{"exponential":{"attempts":2,"multiplier":0.1,"seconds":1}},
			"value":{"type":"rawscript","language":"bash","content":"f=\"$1\"\necho x >> \"$f\"\n[ $(wc -l < \"$f\") -ge 3 ] && echo done || exit 1",
			"input_transforms":{"f":{"type":"javascript","expr":"flow_input.file"}}}}]}}`,
		args: `{"file": "FILE"}`, success: true, result: `"done"`,
	},
}

func TestSemantics(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			for _, c := range semanticsCases {
				t.Run(c.name, func(t *testing.T) {
					env.t = t
					args := strings.ReplaceAll(c.args, "FILE", t.TempDir()+"/count")
					f, err := openflow.Parse([]byte(c.flow))
					if err != nil {
						t.Fatalf("parse: %v", err)
					}
					requireRunners(t, f)
					runID := env.start([]byte(c.flow), args)
					res := env.wait(runID)
					if res.Success != c.success || res.Skipped != c.skipped || !jsonEqual(res.Result, []byte(c.result)) {
						t.Errorf("got success=%v skipped=%v result=%s\nwant success=%v skipped=%v result=%s\nsteps:\n%s",
							res.Success, res.Skipped, res.Result, c.success, c.skipped, c.result, env.describeSteps(runID))
					}
				})
			}
		})
	}
}

// TestSuspendTimeout: a suspend that nobody resumes times out
// (SuspendedTimedOut), or, with continue_on_disapprove_timeout, lets the
// flow go on with the error as resume.
func TestSuspendTimeout(t *testing.T) {
	flow := func(cont bool) string {
		return `{"value":{"modules":[{"id":"a","value":{"type":"identity"},"suspend":{"required_events":1,"timeout":1,"continue_on_disapprove_timeout":` +
			map[bool]string{true: "true", false: "false"}[cont] + `}},
			{"id":"b","value":{"type":"rawscript","language":"python3","content":"def main(r, rs):\n    return [r, rs]",
			 "input_transforms":{"r":{"type":"javascript","expr":"resume"},"rs":{"type":"javascript","expr":"resumes.length"}}}}]}}`
	}
	timedOut := `{"error":{"name":"SuspendedTimedOut","message":"Timed out waiting to be resumed"}}`
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			res := env.run([]byte(flow(false)), `{}`)
			if res.Success || !jsonEqual(res.Result, []byte(timedOut)) {
				t.Errorf("without continue: %+v, want failure %s", res, timedOut)
			}
			res = env.run([]byte(flow(true)), `{}`)
			if want := `[` + timedOut + `,1]`; !res.Success || !jsonEqual(res.Result, []byte(want)) {
				t.Errorf("with continue: success=%v result=%s, want %s", res.Success, res.Result, want)
			}
		})
	}
}

// TestResumeByHookToken: a suspended module's hook token resumes it
// from outside the openflow package (as POST /v1/hooks/{token} or `ow
// hooks resume` do), and two events sent at once, before the module
// received either, are both kept and received in order.
func TestResumeByHookToken(t *testing.T) {
	doc := `{"value":{"modules":[{"id":"a","value":{"type":"identity"},"suspend":{"required_events":2,"timeout":60}},
		{"id":"b","value":{"type":"rawscript","language":"python3","content":"def main(x):\n    return x",
		 "input_transforms":{"x":{"type":"javascript","expr":"[resumes, approvers]"}}}}]}}`
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			runID := env.start([]byte(doc), `{}`)
			var waiting []openflow.SuspendedModule
			waitFor(env.ctx, t, "module a to be suspended", func() bool {
				var err error
				waiting, err = openflow.Suspended(env.ctx, env.client, runID)
				if err != nil {
					t.Fatal(err)
				}
				return len(waiting) == 1
			})
			if waiting[0].Module != "a" || waiting[0].Token == "" || waiting[0].RequiredEvents != 2 {
				t.Fatalf("suspended: %+v", waiting)
			}
			for i, who := range []string{"ada", "grace"} {
				ev := map[string]any{"payload": map[string]int{"n": i}, "approver": who, "approved": true}
				if _, _, err := env.client.ResumeHook(env.ctx, waiting[0].Token, ev); err != nil {
					t.Fatal(err)
				}
			}
			res := env.wait(runID)
			if want := `[[{"n":0},{"n":1}],["ada","grace"]]`; !res.Success || !jsonEqual(res.Result, []byte(want)) {
				t.Errorf("result %s (success %v), want %s\nsteps:\n%s", res.Result, res.Success, want, env.describeSteps(runID))
			}
		})
	}
}

// TestScriptLogsStreamLive: a script's output goes to the stream
// logs/<module> as it runs, readable while the script still runs, and
// whole once it ended; the step's output keeps it too.
func TestScriptLogsStreamLive(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			gate := filepath.Join(t.TempDir(), "go")
			doc := `{"value":{"modules":[{"id":"a","value":{"type":"rawscript","language":"bash",
				"content":"echo first\nwhile [ ! -f ` + gate + ` ]; do sleep 0.01; done\necho second\necho 42"}}]}}`
			env := startEnv(t, kind)
			runID := env.start([]byte(doc), `{}`)
			read := func() string {
				chunks, _, err := env.client.ReadStream(env.ctx, backend.ReadStreamParams{WorkflowRunID: runID, Stream: openflow.LogStream("a")})
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				for _, c := range chunks {
					b.Write(c.Data)
				}
				return b.String()
			}
			// "first" shows while the script waits for its gate file.
			waitFor(env.ctx, t, "the first line in the log stream", func() bool { return read() == "first\n" })
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			res := env.wait(runID)
			if !res.Success || string(res.Result) != `"42"` {
				t.Fatalf("result %+v", res)
			}
			if got := read(); got != "first\nsecond\n42\n" {
				t.Errorf("log stream %q", got)
			}
		})
	}
}

// TestSleepIsDurable: a module's sleep parks the run in a durable sleep
// step before the next module starts.
func TestSleepIsDurable(t *testing.T) {
	doc := `{"value":{"modules":[{"id":"a","sleep":{"type":"javascript","expr":"result.s"},"value":{"type":"identity"},"mock":{"enabled":true,"return_value":{"s":1}}},
		{"id":"b","value":{"type":"identity"}}]}}`
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			start := time.Now()
			runID := env.start([]byte(doc), `{}`)
			res := env.wait(runID)
			if !res.Success || !jsonEqual(res.Result, []byte(`{"s":1}`)) {
				t.Fatalf("result %+v", res)
			}
			if time.Since(start) < time.Second {
				t.Errorf("the flow took %s, less than its 1 s sleep", time.Since(start))
			}
			found := false
			for _, s := range env.steps(runID) {
				if s.StepName == "a@sleep" && s.Kind == "sleep" && s.Status == "completed" {
					found = true
				}
			}
			if !found {
				t.Errorf("no completed durable sleep step a@sleep:\n%s", env.describeSteps(runID))
			}
		})
	}
}

// TestDirWorkflows: a worker picks up the flows of its directories as
// workflows named by their path; a run records the definition first.
func TestDirWorkflows(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			h, err := env.client.StartByName(env.ctx, "f/examples/double", "", map[string]int{"n": 4})
			if err != nil {
				t.Fatal(err)
			}
			res := env.wait(h.ID)
			if !res.Success || string(res.Result) != `"8 apples"` {
				t.Fatalf("result %+v", res)
			}
			steps := env.steps(h.ID)
			if len(steps) == 0 || steps[0].StepName != "@definition" {
				t.Errorf("first step is not @definition:\n%s", env.describeSteps(h.ID))
			}
			// args that break the flow's schema fail the run before any module
			h, err = env.client.StartByName(env.ctx, "f/examples/double", "", map[string]string{"n": "four"})
			if err != nil {
				t.Fatal(err)
			}
			res = env.wait(h.ID)
			if res.Success || !strings.Contains(string(res.Result), "invalid flow input") {
				t.Errorf("bad args: %+v", res)
			}
			for _, s := range env.steps(h.ID) {
				if s.StepName != "@definition" {
					t.Errorf("a module ran despite invalid args: %s", s.StepName)
				}
			}
		})
	}
}

// TestBadFlowsNeverStart: invalid args, a missing runner or a missing
// script leave no run behind.
func TestBadFlowsNeverStart(t *testing.T) {
	env := startEnv(t, "sqlite")
	bun := `{"value":{"modules":[{"id":"a","value":{"type":"rawscript","language":"bun","content":"export function main(){return 1}"}}]},
		"schema":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}`
	f, err := openflow.Parse([]byte(bun))
	if err != nil {
		t.Fatal(err)
	}
	noRunners := openflow.New(openflow.Options{RunnersDir: t.TempDir()})
	cases := []struct {
		name string
		e    *openflow.Engine
		f    *openflow.Flow
		args string
		want []string
	}{
		{"invalid args", env.engine, f, `{"n":"x"}`, []string{"invalid flow input", "n:"}},
		{"missing args", env.engine, f, `{}`, []string{"invalid flow input", "missing property", "n"}},
		{"a missing runner names the binary and how to install it", noRunners, f, `{"n":1}`,
			[]string{"value.modules[0].value.language", `the bun runner is not installed: no "bun"`, "install it with: npm i --prefix ", " bun (or put bun on PATH)"}},
		{"a missing script", env.engine, mustParse(t, `{"value":{"modules":[{"id":"s","value":{"type":"script","path":"f/nope","input_transforms":{}}}]}}`), `{}`,
			[]string{"value.modules[0].value.path", "script f/nope not found"}},
	}
	if err := openflow.New(openflow.Options{}).Check(f); err != nil {
		cases = cases[2:3] // bun itself is missing here: only the missing-runner case is meaningful
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.e == noRunners {
				t.Setenv("PATH", t.TempDir()) // bun may be on PATH too
			}
			_, err := c.e.Start(env.ctx, env.client, c.f, json.RawMessage(c.args), "")
			if err == nil {
				t.Fatal("started")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	counts, err := env.client.CountRuns(env.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := counts.Pending + counts.Running + counts.Completed + counts.Failed + counts.Canceled; n != 0 {
		t.Errorf("%d runs exist after refused starts", n)
	}
}

func mustParse(t *testing.T, doc string) *openflow.Flow {
	t.Helper()
	f, err := openflow.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
