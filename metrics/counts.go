package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// runCounts is the collector of openworkflow_runs: it asks the backend for
// the runs per status (ow.Client.CountRuns) when scraped, and reuses a
// count younger than maxAge. Concurrent scrapes share one count.
type runCounts struct {
	c       *ow.Client
	maxAge  time.Duration
	timeout time.Duration
	desc    *prometheus.Desc

	mu     sync.Mutex // held while counting: concurrent scrapes wait for one count
	at     time.Time  // when counts was read; zero: never
	counts backend.RunCounts
	now    func() time.Time
}

func newRunCounts(c *ow.Client, maxAge, timeout time.Duration) *runCounts {
	return &runCounts{
		c: c, maxAge: maxAge, timeout: timeout, now: time.Now,
		desc: prometheus.NewDesc("openworkflow_runs",
			"Runs per status in the namespace (pending, running — parked runs included —, completed, failed, canceled), counted by the backend at scrape time.",
			[]string{"status"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (r *runCounts) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }

// Collect implements prometheus.Collector: one gauge per status, or an
// invalid metric carrying the count's error (the scrape then serves the
// other metrics and logs it).
func (r *runCounts) Collect(ch chan<- prometheus.Metric) {
	counts, err := r.read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(r.desc, fmt.Errorf("count runs per status: %w", err))
		return
	}
	for _, s := range []struct {
		status backend.RunStatus
		n      int
	}{
		{backend.RunPending, counts.Pending},
		{backend.RunRunning, counts.Running},
		{backend.RunCompleted, counts.Completed},
		{backend.RunFailed, counts.Failed},
		{backend.RunCanceled, counts.Canceled},
	} {
		ch <- prometheus.MustNewConstMetric(r.desc, prometheus.GaugeValue, float64(s.n), string(s.status))
	}
}

// read returns the counts, counting again when the last count is older
// than maxAge.
func (r *runCounts) read() (backend.RunCounts, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && r.maxAge > 0 && r.now().Sub(r.at) < r.maxAge {
		return r.counts, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	counts, err := r.c.CountRuns(ctx)
	if err != nil {
		return backend.RunCounts{}, err
	}
	r.counts, r.at = counts, r.now()
	return counts, nil
}
