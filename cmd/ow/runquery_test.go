package main

import (
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/backend"
)

func TestRunsQueryAndSearchAttributes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("migrate")
	started := e.ok("runs", "start", "sync-account", "--attr", "customer=c-42", "--attr", "amount=12", "--attr", `tags=["eu","vip"]`, "--attr", "vip=true")
	id := strings.Fields(started.stdout)[2]
	e.ok("runs", "start", "sync-account", "--attr", "customer=c-7")
	e.ok("runs", "start", "other")

	list := e.ok("runs", "list", "--query", `status = "pending" AND workflow = "sync-account" AND attrs.customer = "c-42" AND created > "2026-01-01"`)
	mustContain(t, "list --query", list.stdout, id)
	if strings.Count(list.stdout, "sync-account") != 1 {
		t.Fatalf("list --query printed other runs:\n%s", list.stdout)
	}
	page := decode[backend.Page[backend.WorkflowRun]](t, e.ok("--json", "runs", "list", "--query", `attrs.tags = "vip" AND attrs.amount >= 12`))
	if len(page.Data) != 1 || page.Data[0].ID != id {
		t.Fatalf("list --json --query = %+v, want run %s", page.Data, id)
	}

	get := e.ok("runs", "get", id)
	mustContain(t, "runs get", get.stdout, `attrs.customer:`, `"c-42"`, `attrs.amount:`, "12", `attrs.tags:`, `["eu","vip"]`, `attrs.vip:`, "true")
	detail := decode[struct {
		SearchAttributes map[string]any `json:"searchAttributes"`
	}](t, e.ok("--json", "runs", "get", id))
	if detail.SearchAttributes["customer"] != "c-42" || detail.SearchAttributes["amount"] != float64(12) {
		t.Fatalf("runs get --json searchAttributes = %v", detail.SearchAttributes)
	}

	for _, c := range []struct{ query, want string }{
		{`status = "failed" AND colour = "red"`, "line 1, column 23: unknown field \"colour\""},
		{"workflow = \"a\"\nAND attrs.amount = \"x\"", "line 2, column 20: attrs.amount has type int"},
		{`attrs.nobody = 1`, "line 1, column 1: unknown search attribute attrs.nobody"},
	} {
		r := e.run("runs", "list", "--query", c.query)
		if r.code == 0 {
			t.Fatalf("list --query %q succeeded, want an error", c.query)
		}
		mustContain(t, "the error of --query "+c.query, r.stderr, c.want, "^", "docs/queries.md")
	}
	r := e.run("runs", "start", "w", "--attr", "amount=twelve")
	if r.code == 0 || !strings.Contains(r.stderr, `"amount"`) {
		t.Fatalf("start with an attribute of another type: exit %d, stderr %s", r.code, r.stderr)
	}
	r = e.run("runs", "start", "w", "--attr", "novalue")
	if r.code == 0 || !strings.Contains(r.stderr, "name=value") {
		t.Fatalf("start --attr without =: exit %d, stderr %s", r.code, r.stderr)
	}
}
