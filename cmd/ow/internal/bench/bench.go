package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Report is what [Run] measured.
type Report struct {
	// Options are the options in force, defaults applied.
	Options Options
	// Env describes the machine and the build measured.
	Env Environment
	// Results are the Go engine's figures: per workload and backend (and
	// W5 worker count), the medians over Options.Repeat measurements.
	Results []Result
	// TS, TSVersion and Ratios are the TypeScript comparison's figures,
	// the versions measured, and Go ÷ TS (when Options.CompareTS).
	TS        []Result
	TSVersion string
	Ratios    []Ratio
}

// Commit is the revision reported when the binary's build information has
// none (GOFLAGS=-buildvcs=false, or a build outside a git checkout): set
// it with -ldflags "-X github.com/openworkflow-go/openworkflow/cmd/ow/internal/bench.Commit=<rev>".
var Commit string

// Environment says where and what was measured.
type Environment struct {
	Date time.Time
	// Commit is the VCS revision the binary was built from, with
	// "+dirty" for uncommitted changes; "" when unknown (go test, go run).
	Commit          string
	GoVersion       string
	CPU             string
	CPUs            int
	PostgresVersion string // "" when PostgreSQL was not measured
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute load
	// averages before and after the measurements ("" where unknown): other
	// work on the machine skews every figure.
	LoadStart, LoadEnd string
}

// Run measures the selected workloads on the selected backends, each
// measurement on a fresh database, and returns the medians. A workload
// whose runs do not all complete with the right output fails: its result
// carries the error, the other workloads still run, and Run returns an
// error naming every failure. An interrupt (ctx) stops at once, after
// dropping the database in use.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &Report{Options: o, Env: environment()}
	var admin *pgAdmin
	if slices.Contains(o.Backends, Postgres) {
		if admin, err = connectAdmin(ctx, o.PostgresURL); err != nil {
			return nil, err
		}
		defer admin.close()
		if rep.Env.PostgresVersion, err = admin.serverVersion(ctx); err != nil {
			return nil, err
		}
	}
	var raw []Result
	var failures []error
	for _, w := range o.Workloads {
		if (w == W1m || w == W1f) && slices.Contains(o.Workloads, W1) {
			continue // measured in turn with W1
		}
		for _, bk := range o.Backends {
			if w == L0 {
				rs, err := runL0(ctx, o, admin, bk)
				raw, failures = record(raw, failures, rs, err, "L0 "+bk)
				continue
			}
			for i := range o.Repeat {
				for _, t := range turnsOf(w, i, o.Workloads) {
					m := &measurement{o: o, id: t.id, workers: t.workers, label: label(t.id, bk, t.workers, i, o.Repeat)}
					res, err := measureOnce(ctx, m, admin, bk)
					if ctx.Err() != nil {
						return rep, ctx.Err()
					}
					if err == nil {
						fmt.Fprintf(o.Progress, "%s: %s\n", m.label, summary(res))
					}
					raw, failures = record(raw, failures, []Result{res}, err, m.label)
				}
			}
		}
	}
	rep.Results = aggregate(raw)
	defer func() { rep.Env.LoadEnd = loadAverage() }()
	if o.CompareTS {
		ts, version, err := runTS(ctx, o, admin)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("TypeScript comparison: %w", err))
		}
		rep.TS, rep.TSVersion = aggregate(ts), version
		rep.Ratios = ratios(rep.Results, rep.TS)
		for _, r := range rep.TS {
			if r.Error != "" {
				failures = append(failures, fmt.Errorf("TypeScript %s %s: %s", r.Label(), r.Backend, r.Error))
			}
		}
	}
	if len(failures) > 0 {
		return rep, fmt.Errorf("%d measurements failed:\n%w", len(failures), errors.Join(failures...))
	}
	return rep, nil
}

// record appends results, or a failed result for err.
func record(raw []Result, failures []error, rs []Result, err error, what string) ([]Result, []error) {
	if err != nil {
		for i := range rs {
			rs[i].Error = err.Error()
		}
		failures = append(failures, fmt.Errorf("%s: %w", what, err))
	}
	return append(raw, rs...), failures
}

// measureOnce runs m on a fresh target of backend bk, destroyed after.
func measureOnce(ctx context.Context, m *measurement, admin *pgAdmin, bk string) (res Result, err error) {
	switch bk {
	case Postgres:
		m.t, err = newPostgresTarget(ctx, admin)
	default:
		m.t, err = newSQLiteTarget(ctx, m.o.TempDir)
	}
	if err != nil {
		res = Result{Engine: EngineGo, Workload: m.id, Backend: bk, Workers: m.workers, Concurrency: m.o.Concurrency, Runs: m.o.runsFor(m.id)}
		return res, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := m.t.destroy(cctx); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	return m.run(ctx)
}

// turn is one measurement of a repetition: a workload, and its worker
// processes (0: a worker in this process).
type turn struct {
	id      string
	workers int
}

// turnsOf is what repetition i of workload w measures: W5 once per worker
// process count; S1 with its s1Workers processes; W1, when W1m or W1f is
// selected too, beside them, in alternating order, so that they are
// compared under the same conditions and a drift of the machine does not
// favour either; any other workload once.
func turnsOf(w string, i int, selected []string) []turn {
	switch {
	case w == W5:
		var ts []turn
		for _, n := range w5Workers {
			ts = append(ts, turn{W5, n})
		}
		return ts
	case w == S1:
		return []turn{{S1, s1Workers}}
	case w == W1 && (slices.Contains(selected, W1m) || slices.Contains(selected, W1f)):
		ts := []turn{{W1, 0}}
		for _, c := range []string{W1m, W1f} {
			if slices.Contains(selected, c) {
				ts = append(ts, turn{c, 0})
			}
		}
		if i%2 == 1 {
			slices.Reverse(ts)
		}
		return ts
	}
	return []turn{{w, 0}}
}

func label(w, bk string, workers, i, repeat int) string {
	s := w
	if workers > 0 {
		s = fmt.Sprintf("%s ×%d", w, workers)
	}
	s += " " + bk
	if repeat > 1 {
		s += fmt.Sprintf(" (%d/%d)", i+1, repeat)
	}
	return s
}

// summary is a one-line account of a measurement for the progress log.
func summary(r Result) string {
	var parts []string
	for _, m := range metricOrder {
		if v, ok := r.Metrics[m]; ok {
			parts = append(parts, m+"="+formatFloat(v))
		}
	}
	return fmt.Sprintf("%s runs verified; %s", thousands(r.Runs), strings.Join(parts, " "))
}

// environment describes this machine and build.
func environment() Environment {
	e := Environment{Date: time.Now().UTC(), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), CPU: cpuModel(), LoadStart: loadAverage()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if len(rev) > 7 {
			rev = rev[:7]
		}
		if rev != "" {
			e.Commit = rev + dirty
		}
	}
	if e.Commit == "" {
		e.Commit = Commit
	}
	return e
}

// cpuModel is the CPU's model name from /proc/cpuinfo, or GOARCH.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// loadAverage is the 1, 5 and 15 minute load averages, e.g. "0.52 0.31
// 0.20", or "" where /proc/loadavg is missing.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
