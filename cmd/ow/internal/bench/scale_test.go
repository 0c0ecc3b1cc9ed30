package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestScaleCheckPassesOnlyAMeasuredFigureWithinItsBound(t *testing.T) {
	for _, c := range []struct {
		c    Check
		want bool
	}{
		{Check{Value: 0.95, Measured: true, Target: 0.9}, true},
		{Check{Value: 0.85, Measured: true, Target: 0.9}, false},
		{Check{Value: 25, Measured: true, Target: 25, AtMost: true}, true},
		{Check{Value: 26, Measured: true, Target: 25, AtMost: true}, false},
		{Check{Value: 0, Measured: false, Target: 25, AtMost: true}, false},
	} {
		if got := c.c.Pass(); got != c.want {
			t.Errorf("%+v.Pass() = %v, want %v", c.c, got, c.want)
		}
	}
}

func TestScaleReportPrintsEachFigureWithItsTargetAndVerdict(t *testing.T) {
	s := &scaleRun{o: ScaleOptions{Finished: 10_000_000, PruneRuns: 1_000_000, Pairs: 3}, pruneNote: "the prune finished first"}
	s.rep = &ScaleReport{Options: s.o, Result: Result{Workload: Scale, Backend: Postgres, Metrics: map[string]float64{
		MetricW1Ratio: 0.93, MetricP99: 31, MetricPageP99: 4, MetricCountP99: 0.5,
	}}}
	s.rep.Checks = s.checks()
	var text bytes.Buffer
	if err := WriteScaleText(&text, s.rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"W1 runs/s, loaded ÷ empty", "0.93", "≥ 0.90", "pass",
		"W2 start-to-result p99, ms", "31.00", "≤ 25.00", "FAIL",
		"W1 slowed while pruning 1,000,000 runs", "FAIL (the prune finished first)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var line bytes.Buffer
	if err := WriteScaleJSON(&line, s.rep); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Workload string `json:"workload"`
		Targets  map[string]struct {
			Value *float64 `json:"value"`
			Pass  bool     `json:"pass"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(line.Bytes(), &got); err != nil || strings.Count(line.String(), "\n") != 1 {
		t.Fatalf("not one JSON line (%v):\n%s", err, line.String())
	}
	if got.Workload != Scale || !got.Targets[MetricW1Ratio].Pass || got.Targets[MetricP99].Pass || got.Targets[MetricSlowdown].Value != nil {
		t.Errorf("JSON line = %s; want w1_ratio passed, p99_ms failed, slowdown without a value", line.String())
	}
}
