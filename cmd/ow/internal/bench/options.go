package bench

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Backend names accepted by [Options.Backends].
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// DefaultPostgresURL is the admin connection used when [Options.PostgresURL]
// is empty: the bench creates and drops its databases through it.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// DefaultConcurrency is the worker concurrency of W1–W5 when
// [Options.Concurrency] is 0.
const DefaultConcurrency = 100

// Options configure [Run]. The zero value runs every standard workload
// (W0–W5, L3 and L3h) at the standard counts once, on both backends, without the
// TypeScript comparison.
type Options struct {
	// Workloads are the workload ids to run, in any order: W0 (which brings
	// W0b along), W0b, W1, W2, L3, L3h, W3, W4, W5, and, never part of the default,
	// W1m (W1 with Prometheus metrics; measured in turn with W1 when both
	// are selected), W1k (W1 with a concurrency key on every run: 100 keys,
	// at most 5 runs per key at once; Go only), W1f (W1 with fair shares
	// on 100 keys; measured in turn with W1 when both are selected; Go
	// only), L0 (pgbench), R1 (W1 while
	// a prune runs) and S1 (a schedule ticking every second for
	// S1Duration). Empty means every standard workload, W0–W5, L3 and L3h.
	Workloads []string
	// Runs is W1's run count; every other workload keeps its standard
	// proportion to W1's 5,000 (W0, W1k, W1f and W5 N, W3 N/10, W4 N/5, W2 N/25, L3 and L3h 3N/50), and
	// at least 1. 0 means the standard counts.
	Runs int
	// Concurrency is each worker's number of slots. 0 means 100.
	Concurrency int
	// Backends are Postgres and/or SQLite. Empty means both.
	Backends []string
	// Repeat is how many times each workload is measured, each time on a
	// fresh database; the figures reported are the medians. 0 means 1.
	Repeat int
	// PostgresURL is the admin connection: a postgres:// URL of a user
	// allowed to CREATE DATABASE. Every measurement gets a fresh database
	// ow_bench_<random> on that server, dropped afterwards. Empty means
	// [DefaultPostgresURL].
	PostgresURL string
	// TempDir is where SQLite files (and the TypeScript install) are
	// created. Empty means the system's temporary directory.
	TempDir string
	// WorkerCommand makes the command of one W5 worker process: it must run
	// [WorkerMain] with args (the ow CLI re-executes itself as
	// "ow bench worker <args>"). Nil makes W5 fail.
	WorkerCommand func(ctx context.Context, args []string) *exec.Cmd
	// CompareTS also runs the workloads on the TypeScript OpenWorkflow
	// (npm openworkflow@0.10, installed in a temporary directory) and
	// reports Go/TS ratios.
	CompareTS bool
	// L0Clients are the pgbench client counts L0 is measured with. Empty
	// means 10, 20 and 50.
	L0Clients []int
	// L0Duration is how long pgbench runs per client count. 0 means 20 s.
	L0Duration time.Duration
	// PruneRuns is the number of finished runs R1 seeds and prunes while
	// W1 runs. 0 means [DefaultPruneRuns] (1,000,000).
	PruneRuns int
	// PruneDuty is the Duty of R1's prune beside W1 (ow.PruneOptions). 0
	// means ow.DefaultPruneDuty, the Pruner's (0.05); 1 prunes without
	// rests.
	PruneDuty float64
	// S1Duration is how long S1's schedule ticks (once a second). 0 means
	// 2 min.
	S1Duration time.Duration
	// Progress receives progress lines (stderr in the CLI). Nil discards
	// them.
	Progress io.Writer
}

// Workload ids.
const (
	W0  = "W0"
	W0b = "W0b"
	W1  = "W1"
	// W1m is W1 with the worker's measurements exported to Prometheus
	// (package metrics) and scraped every second, as Prometheus would:
	// beside W1, what metrics cost.
	W1m = "W1m"
	// W1k is W1 with a concurrency key on every run (100 keys) and a
	// limit of 5 runs per key: what admission costs (issue 16: within 80 %
	// of W1).
	W1k = "W1k"
	// W1f is W1 with fair shares on 100 keys (run i under fairness key
	// tenant-<i mod 100>, weight 1): what fair shares cost (issue 22:
	// within 85 % of W1 on PostgreSQL). Measured in turn with W1 when
	// both are selected.
	W1f = "W1f"
	W2  = "W2"
	W3  = "W3"
	W4  = "W4"
	W5  = "W5"
	// L3 is W2's shape with bench-seq3: 300 runs of three sequential
	// steps, each started and awaited in turn, one idle worker; p50, p95
	// and p99 of start → result, and commits per run (issue 24).
	L3 = "L3"
	// L3h is L3 through the HTTP API in the worker's process: each run
	// started with POST /v1/runs?wait=30s, which answers with the
	// finished run (run-and-wait), on a loopback connection kept alive.
	L3h = "L3h"
	L0  = "L0"
	// R1 is defined in prune.go.
	S1 = "S1"
)

// standardWorkloads is the default selection, in the order they run.
var standardWorkloads = []string{W0, W0b, W1, W2, L3, L3h, W3, W4, W5}

// knownWorkloads is every id in the order they run.
var knownWorkloads = []string{W0, W0b, W1, W1m, W1k, W1f, W2, L3, L3h, W3, W4, W5, L0, R1, S1}

// standardRuns is each workload's run count at the standard scale.
var standardRuns = map[string]int{W0: 5000, W0b: 5000, W1: 5000, W1m: 5000, W1k: 5000, W1f: 5000, W2: 200, L3: 300, L3h: 300, W3: 500, W4: 1000, W5: 5000}

// w5Workers are the worker process counts W5 measures; 1 is the baseline
// the speed-ups are relative to.
var w5Workers = []int{1, 2, 4}

// withDefaults validates o and applies the defaults, in one place.
func (o Options) withDefaults() (Options, error) {
	if o.Runs < 0 {
		return o, fmt.Errorf("runs %d: want 0 (standard counts) or more", o.Runs)
	}
	if o.Concurrency < 0 {
		return o, fmt.Errorf("concurrency %d: want 1 or more", o.Concurrency)
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Repeat < 0 {
		return o, fmt.Errorf("repeat %d: want 1 or more", o.Repeat)
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	ws, err := ParseWorkloads(o.Workloads)
	if err != nil {
		return o, err
	}
	o.Workloads = ws
	bs, err := ParseBackends(o.Backends)
	if err != nil {
		return o, err
	}
	o.Backends = bs
	if o.PostgresURL == "" {
		o.PostgresURL = DefaultPostgresURL
	}
	if o.PruneRuns < 0 {
		return o, fmt.Errorf("prune runs %d: want 1 or more", o.PruneRuns)
	}
	if o.PruneRuns == 0 {
		o.PruneRuns = DefaultPruneRuns
	}
	if o.PruneDuty < 0 || o.PruneDuty > 1 {
		return o, fmt.Errorf("prune duty %g: want 0 (the Pruner's default) to 1", o.PruneDuty)
	}
	if len(o.L0Clients) == 0 {
		o.L0Clients = []int{10, 20, 50}
	}
	for _, c := range o.L0Clients {
		if c < 1 {
			return o, fmt.Errorf("L0 clients %d: want 1 or more", c)
		}
	}
	if o.L0Duration < 0 {
		return o, fmt.Errorf("L0 duration %s: want more than 0", o.L0Duration)
	}
	if o.L0Duration == 0 {
		o.L0Duration = 20 * time.Second
	}
	if o.S1Duration < 0 {
		return o, fmt.Errorf("S1 duration %s: want more than 0", o.S1Duration)
	}
	if o.S1Duration == 0 {
		o.S1Duration = 2 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o, nil
}

// ParseWorkloads validates workload ids (case-insensitive; "all" means
// W0–W5, L3 and L3h) and returns them deduplicated in run order. W0 brings W0b along.
// No ids means every standard workload.
func ParseWorkloads(ids []string) ([]string, error) {
	if len(ids) == 0 {
		return slices.Clone(standardWorkloads), nil
	}
	want := map[string]bool{}
	for _, raw := range ids {
		id := strings.TrimSpace(raw)
		switch {
		case strings.EqualFold(id, "all"):
			for _, w := range standardWorkloads {
				want[w] = true
			}
			continue
		case strings.EqualFold(id, W0):
			want[W0], want[W0b] = true, true
			continue
		}
		i := slices.IndexFunc(knownWorkloads, func(k string) bool { return strings.EqualFold(k, id) })
		if i < 0 {
			return nil, fmt.Errorf("unknown workload %q (want all or some of %s)", raw, strings.Join(knownWorkloads, ", "))
		}
		want[knownWorkloads[i]] = true
	}
	var out []string
	for _, w := range knownWorkloads {
		if want[w] {
			out = append(out, w)
		}
	}
	return out, nil
}

// ParseBackends validates backend names ("both" means postgres and
// sqlite). No names means both.
func ParseBackends(names []string) ([]string, error) {
	if len(names) == 0 {
		return []string{Postgres, SQLite}, nil
	}
	want := map[string]bool{}
	for _, raw := range names {
		switch n := strings.ToLower(strings.TrimSpace(raw)); n {
		case "both":
			want[Postgres], want[SQLite] = true, true
		case Postgres, SQLite:
			want[n] = true
		default:
			return nil, fmt.Errorf("unknown backend %q (want postgres, sqlite or both)", raw)
		}
	}
	var out []string
	for _, b := range []string{Postgres, SQLite} {
		if want[b] {
			out = append(out, b)
		}
	}
	return out, nil
}

// runsFor is workload w's run count: its standard count, or scaled to
// Options.Runs (W1's count), at least 1.
func (o Options) runsFor(w string) int {
	std := standardRuns[w]
	if o.Runs == 0 {
		return std
	}
	return max(1, (o.Runs*std+2500)/5000)
}
