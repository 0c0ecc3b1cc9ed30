package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// column is one metric column of the text tables.
type column struct {
	metric, header string
	format         func(float64) string
}

func rate(v float64) string {
	if v >= 100 {
		return thousands(int(v + 0.5))
	}
	return fmt.Sprintf("%.1f", v)
}

// significant formats v with 3 significant digits, never in exponent
// form: 11.06 → "11.1", 0.0503 → "0.0503", 0.001 → "0.00100".
func significant(v float64) string {
	if v == 0 {
		return "0"
	}
	d := max(0, 2-int(math.Floor(math.Log10(math.Abs(v)))))
	return strconv.FormatFloat(v, 'f', d, 64)
}

func fixed(decimals int) func(float64) string {
	return func(v float64) string { return fmt.Sprintf("%.*f", decimals, v) }
}

var columns = []column{
	{MetricRunsPerS, "runs/s", rate},
	{MetricStepsPerS, "steps/s", rate},
	{MetricStartsPerS, "starts/s", rate},
	{MetricCommitsPerStep, "commits/step", significant},
	{MetricCommitsPerRun, "commits/run", significant},
	{MetricCPUPerRun, "cpu µs/run", rate},
	{MetricP50, "p50 ms", fixed(1)},
	{MetricP95, "p95 ms", fixed(1)},
	{MetricP99, "p99 ms", fixed(1)},
	{MetricLatenessP50, "late p50 ms", fixed(1)},
	{MetricLatenessP99, "late p99 ms", fixed(1)},
	{MetricTickP50, "tick p50 ms", fixed(1)},
	{MetricTickP99, "tick p99 ms", fixed(1)},
	{MetricTickMax, "tick max ms", fixed(1)},
	{MetricTickStartP99, "claim p99 ms", fixed(1)},
	{MetricSpeedup, "speed-up", func(v float64) string { return fmt.Sprintf("%.2f×", v) }},
	{MetricTPS, "tps", rate},
	{MetricAloneRunsPerS, "alone runs/s", rate},
	{MetricSlowdown, "slowdown", func(v float64) string { return fmt.Sprintf("%.1f %%", 100*v) }},
	{MetricPrunedPerS, "pruned/s", rate},
}

// ratioFormat formats Go ÷ TS.
func ratioFormat(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f×", v)
	case v >= 0.1:
		return fmt.Sprintf("%.2f×", v)
	default:
		return fmt.Sprintf("%.3f×", v)
	}
}

// WriteText writes the report as text tables: the environment, the Go
// results, and with the TypeScript comparison its results and the Go/TS
// ratios.
func WriteText(w io.Writer, rep *Report) error {
	e := rep.Env
	fmt.Fprintf(w, "ow bench, %s, commit %s, %s, %s (%d CPUs)", e.Date.Format("2006-01-02 15:04 UTC"), orUnknown(e.Commit), e.GoVersion, e.CPU, e.CPUs)
	if e.PostgresVersion != "" {
		fmt.Fprintf(w, ", PostgreSQL %s", e.PostgresVersion)
	}
	if e.LoadStart != "" {
		fmt.Fprintf(w, "\nload average (1, 5, 15 min) %s before, %s after", e.LoadStart, orUnknown(e.LoadEnd))
	}
	reps := "one measurement"
	if n := rep.Options.Repeat; n > 1 {
		reps = fmt.Sprintf("medians of %d measurements", n)
	}
	fmt.Fprintf(w, "\nworker concurrency %d; %s per workload, each on a fresh database; every run's output verified\n\n", rep.Options.Concurrency, reps)
	if err := writeTable(w, rep.Results); err != nil {
		return err
	}
	if !rep.Options.CompareTS {
		return nil
	}
	fmt.Fprintf(w, "\nTypeScript OpenWorkflow (%s), same workloads:\n\n", orUnknown(rep.TSVersion))
	if err := writeTable(w, rep.TS); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nGo ÷ TypeScript (throughput above 1× and latency or commits below 1× favour Go):\n\n")
	rs := make([]Result, len(rep.Ratios))
	for i, r := range rep.Ratios {
		rs[i] = Result{Workload: r.Workload, Backend: r.Backend, Workers: r.Workers, Metrics: r.Metrics, Repeat: 1}
	}
	return writeRatioTable(w, rs)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// usedColumns are the columns at least one result has a value in.
func usedColumns(rs []Result) []column {
	var cs []column
	for _, c := range columns {
		for _, r := range rs {
			if _, ok := r.Metrics[c.metric]; ok {
				cs = append(cs, c)
				break
			}
		}
	}
	return cs
}

func writeTable(w io.Writer, rs []Result) error {
	var measured []Result
	var failed []string
	skipped := map[string][]string{} // reason → "W0b postgres", …
	var reasons []string
	for _, r := range rs {
		switch {
		case r.Error != "" && r.Repeat == 0:
			failed = append(failed, fmt.Sprintf("%s %s FAILED: %s", r.Label(), r.Backend, r.Error))
		case r.Skipped != "":
			if _, ok := skipped[r.Skipped]; !ok {
				reasons = append(reasons, r.Skipped)
			}
			skipped[r.Skipped] = append(skipped[r.Skipped], r.Label()+" "+r.Backend)
		default:
			if r.Error != "" {
				failed = append(failed, fmt.Sprintf("%s %s FAILED in some repetitions (figures from the others): %s", r.Label(), r.Backend, r.Error))
			}
			measured = append(measured, r)
		}
	}
	cs := usedColumns(measured)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"workload", "backend", "runs"}
	for _, c := range cs {
		head = append(head, c.header)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range measured {
		row := []string{r.Label(), r.Backend, thousands(r.Runs)}
		if r.Workload == L0 {
			row[0], row[2] = fmt.Sprintf("L0 (%d clients)", r.Concurrency), "-"
		}
		for _, c := range cs {
			row = append(row, cell(r, c))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, reason := range reasons {
		fmt.Fprintf(w, "  not measured: %s: %s\n", strings.Join(skipped[reason], ", "), reason)
	}
	for _, f := range failed {
		fmt.Fprintln(w, "  "+f)
	}
	return nil
}

func writeRatioTable(w io.Writer, rs []Result) error {
	var cs []column
	for _, c := range usedColumns(rs) {
		c.format = ratioFormat
		cs = append(cs, c)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"workload", "backend"}
	for _, c := range cs {
		head = append(head, c.header)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rs {
		row := []string{r.Label(), r.Backend}
		for _, c := range cs {
			row = append(row, cell(r, c))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

func cell(r Result, c column) string {
	if v, ok := r.Metrics[c.metric]; ok {
		return c.format(v)
	}
	return "-"
}

// WriteJSON writes one JSON object per line: every Go result, then with
// the TypeScript comparison every TS result and every Go/TS ratio
// (engine "go/ts").
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	for _, r := range rep.Results {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	for _, r := range rep.TS {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	for _, r := range rep.Ratios {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
