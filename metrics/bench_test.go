package metrics_test

import (
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/metrics"
)

// BenchmarkW1RunObservations measures what the exporter costs per run of
// W1's workflow (three steps), from all cores at once as a busy worker
// calls it: the clock readings the worker adds, two slot changes, three
// steps, a pass and a finished run, plus — more than W1 makes, for an
// upper bound — a whole claim and a whole group commit per run (W1 makes
// about 0.3 commits and 0.03 claims per run). Compare ns/op with the
// time a W1 run takes (docs/benchmarks.md).
func BenchmarkW1RunObservations(b *testing.B) {
	m, err := metrics.New(metrics.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			began := time.Now()
			m.ObserveClaim(time.Since(began), 100, 100, nil)
			m.ObserveSlot(true)
			for range 3 {
				s := time.Now()
				m.ObserveStep("bench-seq3", "completed", time.Since(s))
			}
			c := time.Now()
			m.ObserveCommit(30, 120, 0, time.Since(c))
			m.ObservePass("bench-seq3", "completed", time.Since(began))
			m.ObserveRunFinished("bench-seq3", "completed", time.Since(began))
			m.ObserveSlot(false)
		}
	})
}
