package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchPrintsOneVerifiedJSONLinePerWorkload(t *testing.T) {
	e := newEnv(t)
	r := e.ok("bench", "--backend", "sqlite", "--workload", "W1,W2", "--runs", "10", "--concurrency", "5", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines on stdout, want one per workload (2):\n%s", len(lines), r.stdout)
	}
	for i, want := range []string{"W1", "W2"} {
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %d is not a JSON object: %v\n%s", i, err, lines[i])
		}
		if got["workload"] != want || got["backend"] != "sqlite" || got["runs_per_s"] == nil {
			t.Errorf("line %d = %s; want workload %s on sqlite with runs_per_s", i, lines[i], want)
		}
	}
	if !strings.Contains(r.stderr, "W1 sqlite: 10 runs verified") {
		t.Errorf("stderr does not show W1's verified runs:\n%s", r.stderr)
	}
}

func TestBenchPrintsATable(t *testing.T) {
	e := newEnv(t)
	r := e.ok("bench", "--backend", "sqlite", "--workload", "W0b", "--runs", "10")
	for _, want := range []string{"workload", "starts/s", "W0b", "sqlite"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestBenchRejectsBadFlagsByName(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--workload", "W9"}, "invalid --workload"},
		{[]string{"bench", "--backend", "mysql"}, "invalid --backend"},
		{[]string{"bench", "--repeat", "-1", "--backend", "sqlite"}, "repeat -1"},
	} {
		r := e.run(c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("ow %s: exit %d, stderr %q; want exit 1 naming %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}

func TestBenchWorkerIsHidden(t *testing.T) {
	e := newEnv(t)
	r := e.ok("bench", "--help")
	// The command list (scale is listed) ends at the first blank line.
	_, cmds, _ := strings.Cut(r.stdout, "Available Commands:")
	cmds, _, _ = strings.Cut(cmds, "\n\n")
	if strings.Contains(cmds, " worker ") || !strings.Contains(cmds, " scale ") {
		t.Errorf("ow bench --help lists the internal worker command, or not scale:\n%s", r.stdout)
	}
}
