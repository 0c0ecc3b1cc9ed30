package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openworkflow-go/openworkflow/backend"
)

// replicaCollector exports the read replica's state as the backend's
// monitor last measured it (no query at scrape time):
// openworkflow_replica_up, openworkflow_replica_lag_seconds,
// openworkflow_replica_lag_bytes and openworkflow_replica_reads_total by
// target (replica, primary).
type replicaCollector struct {
	rr                          backend.ReadReplicas
	up, lagSeconds, lagBytes, n *prometheus.Desc
}

func newReplicaCollector(rr backend.ReadReplicas) *replicaCollector {
	return &replicaCollector{
		rr:         rr,
		up:         prometheus.NewDesc("openworkflow_replica_up", "1 when the last check reached the read replica (read_replica_url), else 0: the API's reads then go to the primary.", nil, nil),
		lagSeconds: prometheus.NewDesc("openworkflow_replica_lag_seconds", "Replay lag of the read replica in seconds: 0 when it replayed all it received, else the age of the last transaction it replayed.", nil, nil),
		lagBytes:   prometheus.NewDesc("openworkflow_replica_lag_bytes", "Replay lag of the read replica in bytes of WAL behind the primary's current position.", nil, nil),
		n:          prometheus.NewDesc("openworkflow_replica_reads_total", "The API's and dashboard's reads by the server that served them: replica, or primary (lag past the bound, replica down, or a caller reading its own writes).", []string{"target"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.lagSeconds
	ch <- c.lagBytes
	ch <- c.n
}

// Collect implements prometheus.Collector.
func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.rr.ReplicaStatus()
	up := 0.0
	if s.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.lagSeconds, prometheus.GaugeValue, s.LagSeconds)
	ch <- prometheus.MustNewConstMetric(c.lagBytes, prometheus.GaugeValue, float64(s.LagBytes))
	ch <- prometheus.MustNewConstMetric(c.n, prometheus.CounterValue, float64(s.ReplicaReads), "replica")
	ch <- prometheus.MustNewConstMetric(c.n, prometheus.CounterValue, float64(s.PrimaryReads), "primary")
}
