package openflow_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/openflow"
)

// TestUnsupportedFieldsRefused: a field this engine cannot honour is
// refused by validation, naming its path and saying it is not supported,
// never accepted and then ignored; its zero value (what an editor writes
// when the setting is off) is accepted.
func TestUnsupportedFieldsRefused(t *testing.T) {
	step := func(extra string) string {
		return `{"value":{"modules":[{"id":"a","value":{"type":"identity"}` + extra + `}]}}`
	}
	refused := []struct {
		name, doc, path, says string
	}{
		{"a flow's cache_ttl", `{"value":{"cache_ttl":60,"modules":[]}}`, "value.cache_ttl", "no result cache"},
		{"a module's cache_ttl", step(`,"cache_ttl":60`), "value.modules[0].cache_ttl", "no result cache"},
		{"early_return", `{"value":{"early_return":"a","modules":[{"id":"a","value":{"type":"identity"}}]}}`, "value.early_return", "not supported yet"},
		{"preprocessor_module", `{"value":{"preprocessor_module":{"id":"preprocessor","value":{"type":"identity"}},"modules":[]}}`,
			"value.preprocessor_module", "not supported yet"},
		{"delete_after_use", step(`,"delete_after_use":true`), "value.modules[0].delete_after_use", "not supported yet"},
		{"a module's priority", step(`,"priority":3`), "value.modules[0].priority", "set the flow's value.priority"},
		{"concurrency_key", `{"value":{"concurrent_limit":2,"concurrency_key":"$args[user]","modules":[]}}`, "value.concurrency_key", "not supported yet"},
		{"a window without a limit", `{"value":{"concurrency_time_window_s":60,"modules":[]}}`, "value.concurrency_time_window_s", "without concurrent_limit"},
		{"a script's own concurrency limit", `{"value":{"modules":[{"id":"s","value":{"type":"rawscript","language":"bash","content":"echo",
			"concurrent_limit":1}}]}}`, "value.modules[0].value.concurrent_limit", "not supported"},
		{"a $var: value", `{"value":{"modules":[{"id":"s","value":{"type":"rawscript","language":"bash","content":"echo",
			"input_transforms":{"x":{"type":"static","value":"$var:u/admin/token"}}}}]}}`,
			"value.modules[0].value.input_transforms.x.value", "$var:, $res:) are not supported yet"},
		{"a $res: value inside an object", `{"value":{"modules":[{"id":"l","value":{"type":"forloopflow","iterator":{"type":"static","value":[]},"modules":[
			{"id":"s","value":{"type":"rawscript","language":"bash","content":"echo",
			"input_transforms":{"cfg":{"type":"static","value":{"db":"$res:f/pg/main"}}}}}]}}]}}`,
			"value.modules[0].value.modules[0].value.input_transforms.cfg.value.db", "$var:, $res:) are not supported yet"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			_, err := openflow.Parse([]byte(c.doc))
			var ve *openflow.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse accepted it (err %v)", err)
			}
			for _, p := range ve.Problems {
				if p.Path == c.path && strings.Contains(p.Message, c.says) {
					return
				}
			}
			t.Errorf("no problem at %s saying %q: %v", c.path, c.says, err)
		})
	}
	accepted := []string{
		`{"value":{"cache_ttl":0,"early_return":"","priority":5,"concurrent_limit":2,"concurrency_time_window_s":60,"modules":[
			{"id":"a","value":{"type":"identity"},"cache_ttl":0,"delete_after_use":false,"priority":0}]}}`,
		`{"value":{"modules":[{"id":"s","value":{"type":"rawscript","language":"bash","content":"echo",
			"input_transforms":{"x":{"type":"static","value":["$var:in an array is a plain string"]},"y":{"type":"javascript","expr":"'$var:x'"}}}}]}}`,
	}
	for i, doc := range accepted {
		if _, err := openflow.Parse([]byte(doc)); err != nil {
			t.Errorf("accepted[%d]: %v", i, err)
		}
	}
}

// TestFlowPriority: Engine.Start starts a run with the flow's priority.
func TestFlowPriority(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := startEnv(t, kind)
			runID := env.start([]byte(`{"value":{"priority":7,"modules":[{"id":"a","value":{"type":"identity"},"mock":{"enabled":true,"return_value":1}}]}}`), `{}`)
			run, err := env.client.GetRun(env.ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Priority != 7 {
				t.Errorf("run priority %d, want the flow's 7", run.Priority)
			}
			if res := env.wait(runID); !res.Success || string(res.Result) != "1" {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// TestConcurrentLimitNeedsItsOwnWorkflow: a flow with a concurrent_limit
// is refused by Engine.Start (the generic workflow cannot hold one flow's
// limit) and as a flow module's target, leaving no run; as a flow of the
// directories, its workflow carries the limit.
func TestConcurrentLimitNeedsItsOwnWorkflow(t *testing.T) {
	env := startEnv(t, "sqlite")
	limited := `{"value":{"concurrent_limit":1,"concurrency_time_window_s":2.5,"modules":[{"id":"a","value":{"type":"identity"}}]}}`
	_, err := env.engine.Start(env.ctx, env.client, mustParse(t, limited), json.RawMessage(`{}`), "")
	var ve *openflow.ValidationError
	if !errors.As(err, &ve) || ve.Problems[0].Path != "value.concurrent_limit" || !strings.Contains(err.Error(), "openflow.dirs") {
		t.Errorf("Start: %v", err)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "f"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f", "lim.flow.json"), []byte(limited), 0o644); err != nil {
		t.Fatal(err)
	}
	e := openflow.New(openflow.Options{Dirs: []string{dir}, Logger: quietLogger()})
	caller := mustParse(t, `{"value":{"modules":[{"id":"c","value":{"type":"flow","path":"f/lim","input_transforms":{}}}]}}`)
	_, err = e.Start(env.ctx, env.client, caller, json.RawMessage(`{}`), "")
	if !errors.As(err, &ve) || ve.Problems[0].Path != "value.modules[0].value.path" || !strings.Contains(err.Error(), "flow f/lim sets a concurrent_limit") {
		t.Errorf("Start of a caller: %v", err)
	}
	counts, err := env.client.CountRuns(env.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := counts.Pending + counts.Running + counts.Completed + counts.Failed + counts.Canceled; n != 0 {
		t.Errorf("%d runs exist after refused starts", n)
	}

	defs, err := e.DirWorkflows()
	if err != nil || len(defs) != 1 {
		t.Fatalf("DirWorkflows: %v, %d", err, len(defs))
	}
	want := ow.Limits{ConcurrencyPerKey: 1, RateLimit: 1, RatePeriod: 2500 * time.Millisecond}
	if got := defs[0].Spec().Limits; got != want {
		t.Errorf("limits of f/lim: %+v, want %+v", got, want)
	}

	if err := os.WriteFile(filepath.Join(dir, "f", "caller.flow.json"), caller.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DirWorkflows(); err == nil || !strings.Contains(err.Error(), "caller.flow.json") || !strings.Contains(err.Error(), "value.modules[0].value.path: flow f/lim sets a concurrent_limit") {
		t.Errorf("a directory flow calling f/lim: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "f", "caller.flow.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f", "lim.flow.json"), []byte(`{"value":{"priority":3,"modules":[]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DirWorkflows(); err == nil || !strings.Contains(err.Error(), "value.priority") {
		t.Errorf("a directory flow with a priority: %v", err)
	}
}

// TestDirFlowConcurrentLimit: the runs of a directory flow with
// concurrent_limit 1 never overlap, on both backends: each holds a lock
// directory while it runs and fails if another run holds it.
func TestDirFlowConcurrentLimit(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "f"), 0o755); err != nil {
				t.Fatal(err)
			}
			flow := `{"value":{"concurrent_limit":1,"modules":[{"id":"hold","value":{"type":"rawscript","language":"bash",
				"content":"d=\"$1\"\nmkdir \"$d/lock\" || exit 7\nsleep 0.3\nrmdir \"$d/lock\"\necho ok",
				"input_transforms":{"d":{"type":"javascript","expr":"flow_input.dir"}}}}]}}`
			if err := os.WriteFile(filepath.Join(dir, "f", "one.flow.json"), []byte(flow), 0o644); err != nil {
				t.Fatal(err)
			}
			env := startEnv(t, kind, func(o *openflow.Options) { o.Dirs = []string{dir} })
			limits, err := env.client.ListWorkflowLimits(env.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(limits) != 1 || limits[0].WorkflowName != "f/one" || limits[0].ConcurrencyPerKey != 1 {
				t.Errorf("stored limits %+v, want f/one with ConcurrencyPerKey 1", limits)
			}
			work := t.TempDir()
			var ids []string
			for range 3 {
				h, err := env.client.StartByName(env.ctx, "f/one", "", map[string]string{"dir": work})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, h.ID)
			}
			for _, id := range ids {
				if res := env.wait(id); !res.Success || string(res.Result) != `"ok"` {
					t.Errorf("run %s: success=%v result=%s (runs overlapped?)\n%s", id, res.Success, res.Result, env.describeSteps(id))
				}
			}
		})
	}
}
