package main

import (
	"regexp"
	"runtime"
	"strings"
	"testing"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
)

// TestWorkersListsAnIdleWorkerAndWorkflowsSaysWhoServes: ow workers
// shows a started worker holding no run, with its slots and workflows;
// ow workflows shows it serving its workflow with the example input and
// a workflow with a run but no worker as served by nobody; ow runs get of
// that run says nobody serves it, and of a served run says nothing.
func TestWorkersListsAnIdleWorkerAndWorkflowsSaysWhoServes(t *testing.T) {
	bothEnvs(t, func(t *testing.T, e *env) {
		greet := ow.Define(ow.Spec{Name: "greet", Version: "v1", InputExample: `{"name":"Ada"}`},
			func(ctx ow.Context, in map[string]string) (string, error) { return "hi " + in["name"], nil })
		c := startWorker(t, e, greet)

		out := e.ok("workers").stdout
		mustContain(t, "ow workers", out, "WORKER", "running", "0/2", "greet@v1", "openworkflow-go", "TypeScript workers write no record")
		ws := decode[[]api.Worker](t, e.ok("workers", "--json"))
		if len(ws) != 1 || ws[0].State != "running" || ws[0].FreeSlots != 2 || len(ws[0].Workflows) != 1 || ws[0].Workflows[0].Name != "greet" {
			t.Fatalf("ow workers --json = %+v, want the idle worker with 2 free slots serving greet", ws)
		}

		orphan, err := c.StartByName(t.Context(), "orphan", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		out = e.ok("workflows").stdout
		if !regexp.MustCompile(`(?m)^greet\s+v1\s+`+regexp.QuoteMeta(ws[0].ID)+`\s+0\s+0\s+\{"name":"Ada"\}\s*$`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^orphan\s+-\s+nobody\s+1\s+0\s+-\s*$`).MatchString(out) {
			t.Fatalf("ow workflows:\n%s\nwant greet served by %s with its example, and orphan served by nobody with 1 pending run", out, ws[0].ID)
		}

		got := e.ok("runs", "get", orphan.ID).stdout
		mustContain(t, "ow runs get of an unserved run", got, `served by:`, `no live worker serves workflow "orphan"`, "start one with")
		d := decode[runDetail](t, e.ok("runs", "get", orphan.ID, "--json"))
		if !strings.Contains(d.Unserved, `workflow "orphan"`) {
			t.Fatalf("ow runs get --json: unserved %q, want the sentence naming orphan", d.Unserved)
		}
		served, err := c.StartByName(t.Context(), "greet", "v1", map[string]string{"name": "Bo"})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.ok("runs", "get", served.ID).stdout; strings.Contains(got, "served by:") {
			t.Fatalf("ow runs get of a served run says it is not served:\n%s", got)
		}
	})
}

// TestWorkersSaysWhatToDoWithoutWorkers: no record yet.
func TestWorkersSaysWhatToDoWithoutWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("migrate")
	mustContain(t, "ow workers", e.ok("workers").stdout, "no Go worker has written a record", "start one")
	if ws := decode[[]api.Worker](t, e.ok("workers", "--json")); len(ws) != 0 {
		t.Fatalf("ow workers --json = %+v, want []", ws)
	}
}

// TestVersion: ow --version and ow version print the module version,
// the commit and the Go version; --json gives them as one object.
func TestVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	line := e.ok("--version").stdout
	if !regexp.MustCompile(`^ow \S+ \(commit \S+, go\S+\)\n$`).MatchString(line) || !strings.Contains(line, runtime.Version()) {
		t.Fatalf("ow --version = %q, want \"ow <version> (commit <commit>, %s)\"", line, runtime.Version())
	}
	if got := e.ok("version").stdout; got != line {
		t.Fatalf("ow version = %q, ow --version = %q; want the same line", got, line)
	}
	v := decode[buildVersion](t, e.ok("version", "--json"))
	if v.Module != "github.com/openworkflow-go/openworkflow" || v.Version == "" || v.Commit == "" || v.GoVersion != runtime.Version() {
		t.Fatalf("ow version --json = %+v", v)
	}
	if want := "ow " + v.Version + " "; !strings.HasPrefix(line, want) {
		t.Fatalf("ow --version = %q, want it to start %q as --json's version", line, want)
	}
	if r := e.run("version", "extra"); r.code != 1 {
		t.Fatalf("ow version extra exited %d, want 1", r.code)
	}
}
