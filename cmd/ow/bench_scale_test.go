package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestBenchScaleMeasuresEveryFigureOnASmallLoad runs "ow bench scale" as
// CI can afford (2,000 finished runs, W1 of 50 runs, one pair): the JSON
// line carries every figure with its target, the load is verified, and
// both databases are dropped afterwards.
func TestBenchScaleMeasuresEveryFigureOnASmallLoad(t *testing.T) {
	pool := adminPool(t)
	e := newEnv(t)
	r := e.ok("bench", "scale", "--postgres-url", testPostgresURL(), "--finished", "2000", "--runs", "50", "--pairs", "1", "--concurrency", "10", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines on stdout, want one JSON line:\n%s", len(lines), r.stdout)
	}
	var got struct {
		Workload  string  `json:"workload"`
		Backend   string  `json:"backend"`
		Runs      int     `json:"runs"`
		Finished  float64 `json:"finished_runs"`
		PruneRuns int     `json:"prune_runs"`
		LoadS     float64 `json:"load_s"`
		Targets   map[string]struct {
			Value  *float64 `json:"value"`
			Target float64  `json:"target"`
			Bound  string   `json:"bound"`
			Note   string   `json:"note"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, lines[0])
	}
	if got.Workload != "scale" || got.Backend != "postgres" || got.Runs != 50 || got.Finished != 2000 || got.PruneRuns != 200 || got.LoadS <= 0 {
		t.Errorf("line = %s; want workload scale on postgres, 50 W1 runs, 2000 finished, 200 pruned, a load time", lines[0])
	}
	want := map[string]string{"w1_ratio": "min", "p99_ms": "max", "page_p99_ms": "max", "count_p99_ms": "max", "slowdown": "max"}
	for name, bound := range want {
		tg, ok := got.Targets[name]
		switch {
		case !ok:
			t.Errorf("targets lack %s: %s", name, lines[0])
		case tg.Bound != bound || tg.Target <= 0:
			t.Errorf("target %s = %+v; want a positive %s bound", name, tg, bound)
		case tg.Value == nil && (name != "slowdown" || !strings.Contains(tg.Note, "finished before W1")):
			// 200 runs are one prune batch: the prune may end before W1
			// does, and the slowdown is then said not to be measured.
			t.Errorf("target %s has no value and note %q", name, tg.Note)
		}
	}
	for _, w := range []string{"counts verified: 1,800 completed, 200 failed", "W1 pair 1:", "W2 p99:", "page of 50 with a status filter"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	names := regexp.MustCompile(`databases (ow_bench_scale_\w+) \(loaded\) and (ow_bench_scale_empty_\w+) \(empty\)`).FindStringSubmatch(r.stderr)
	if names == nil {
		t.Fatalf("stderr does not name the databases:\n%s", r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var left int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", names[1:]).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d of the databases %v are left after the bench", left, names[1:])
	}
}

// TestBenchScaleReusesAKeptLoad measures a second time on the loaded
// database a first run kept (--keep, then --reuse): a kept load is left as
// loaded (the pruned runs inserted again, the measurements' runs gone),
// a reuse restores what an interrupted run left (here a prune cut short by
// hand and a stray run), verifies the counts as loaded, and keeps the
// reused database.
func TestBenchScaleReusesAKeptLoad(t *testing.T) {
	pool := adminPool(t)
	e := newEnv(t)
	args := []string{"bench", "scale", "--postgres-url", testPostgresURL(), "--finished", "2000", "--runs", "50", "--pairs", "1", "--concurrency", "10", "--prune-runs", "1000"}
	databases := regexp.MustCompile(`databases (ow_bench_scale_\w+) \(loaded\) and (ow_bench_scale_empty_\w+) \(empty\)`)
	drop := func(names ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, n := range names {
			_, _ = pool.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)")
		}
	}
	// A --reuse of a database that is not there fails naming it: reuse
	// loads nothing of its own.
	r := e.run(append(args, "--reuse", "ow_bench_scale_missing")...)
	if r.code != 1 || !strings.Contains(r.stderr, "ow_bench_scale_missing") {
		t.Fatalf("--reuse of a missing database: exit %d, stderr %q; want exit 1 naming it", r.code, r.stderr)
	}
	first := e.ok(append(args, "--keep")...)
	names := databases.FindStringSubmatch(first.stderr)
	if names == nil {
		t.Fatalf("stderr does not name the databases:\n%s", first.stderr)
	}
	t.Cleanup(func() { drop(names[1:]...) })
	if !strings.Contains(first.stderr, "inserted 1,000 pruned runs again") {
		t.Errorf("the kept load was not restored after its prune:\n%s", first.stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := pgx.ParseConfig(testPostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = names[1]
	loaded, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close(context.Background())
	runs := func() (all, loadedRuns int) {
		t.Helper()
		err := loaded.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE namespace_id = 'scale' AND id LIKE 'wrun_scale%')
			FROM openworkflow.workflow_runs`).Scan(&all, &loadedRuns)
		if err != nil {
			t.Fatal(err)
		}
		return all, loadedRuns
	}
	if all, l := runs(); all != 2000 || l != 2000 {
		t.Errorf("the kept load holds %d runs, %d of them loaded; want the 2,000 loaded only", all, l)
	}
	// A prune cut short (300 of its runs gone) and a run of another
	// measurement left behind.
	if _, err := loaded.Exec(ctx, `DELETE FROM openworkflow.workflow_runs WHERE namespace_id = 'scale' AND id <= 'wrun_scale0000000300'`); err != nil {
		t.Fatal(err)
	}
	if _, err := loaded.Exec(ctx, `INSERT INTO openworkflow.workflow_runs (namespace_id, id, workflow_name, status, config, input, attempts, created_at, updated_at)
		VALUES ('w1-loaded-0', 'wrun_stray', 'bench-seq3', 'completed', '{}', '{}', 1, now(), now())`); err != nil {
		t.Fatal(err)
	}

	r = e.run(append(args, "--reuse", names[1])...)
	if r.code != 0 {
		t.Fatalf("--reuse of the kept load: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, w := range []string{"deleted 1 runs of earlier measurements, inserted 300 pruned runs again",
		"counts verified: 1,800 completed, 200 failed", "inserted 1,000 pruned runs again", "kept databases " + names[1]} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("the reuse's stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if all, l := runs(); all != 2000 || l != 2000 {
		t.Errorf("after the reuse the load holds %d runs, %d of them loaded; want the 2,000 loaded only", all, l)
	}
	if second := databases.FindStringSubmatch(r.stderr); second == nil || second[1] != names[1] {
		t.Errorf("the reuse does not name the reused database %s:\n%s", names[1], r.stderr)
	} else {
		drop(second[2])
	}
}

func TestBenchScaleRejectsBadFlagsByName(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "scale", "--finished", "10"}, "finished 10: want at least 1000"},
		{[]string{"bench", "scale", "--finished", "2000", "--prune-runs", "3000"}, "prune runs 3000"},
		{[]string{"bench", "scale", "--prune-duty", "2"}, "prune duty 2"},
		{[]string{"bench", "scale", "--pairs", "-1"}, "pairs -1"},
	} {
		r := e.run(c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("ow %s: exit %d, stderr %q; want exit 1 naming %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}
