package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// BenchmarkChunkToReader measures how long a chunk a step writes takes to
// reach a live reader in this process: one op is an AppendChunk of 64
// bytes, the EventChunk the subscriber then receives (NOTIFY at commit,
// the listener connection, the hub), and the reader's ReadStream of the
// chunk, as Client.TailStream does on an event. It reports the
// percentiles of three spans from the moment the write starts: "append"
// (AppendChunk returned), "event" (the subscriber has the event), "read"
// (the reader has the chunk's bytes), in milliseconds. Chunks are written
// one at a time (an idle stream: the latency, not the throughput).
func BenchmarkChunkToReader(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	be := benchBackend(b)
	run := claimedRuns(b, be, 1)[0]
	events, err := be.Subscribe(ctx)
	if err != nil {
		b.Fatal(err)
	}
	attempt := id.New(id.PrefixStep)
	data := make([]byte, 64)
	var appendMs, eventMs, readMs []float64
	for b.Loop() {
		start := time.Now()
		seq, err := be.AppendChunk(ctx, backend.AppendChunkParams{WorkflowRunID: run.ID, WorkerID: *run.WorkerID,
			StepAttemptID: attempt, Stream: "tokens", Data: data})
		if err != nil {
			b.Fatal(err)
		}
		appended := time.Since(start)
		awaitChunk(b, events, run.ID, seq)
		evented := time.Since(start)
		chunks, _, err := be.ReadStream(ctx, backend.ReadStreamParams{WorkflowRunID: run.ID, Stream: "tokens", AfterSeq: seq - 1, Limit: 1})
		if err != nil || len(chunks) != 1 || chunks[0].Seq != seq {
			b.Fatalf("ReadStream after chunk %d: %d chunks, %v", seq, len(chunks), err)
		}
		read := time.Since(start)
		appendMs = append(appendMs, ms(appended))
		eventMs = append(eventMs, ms(evented))
		readMs = append(readMs, ms(read))
	}
	for _, m := range []struct {
		name string
		v    []float64
	}{{"append", appendMs}, {"event", eventMs}, {"read", readMs}} {
		slices.Sort(m.v)
		b.ReportMetric(percentile(m.v, 0.50), m.name+"-p50-ms")
		b.ReportMetric(percentile(m.v, 0.99), m.name+"-p99-ms")
	}
}

// awaitChunk waits (at most 10 s) for the EventChunk of chunk seq of run
// runID, skipping other events.
func awaitChunk(b *testing.B, events <-chan backend.Event, runID string, seq int64) {
	b.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case e := <-events:
			if e.Kind == backend.EventChunk && e.WorkflowRunID == runID && e.Seq == seq {
				return
			}
		case <-timeout.C:
			b.Fatalf("no EventChunk for chunk %d within 10 s", seq)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile is the p-th quantile of sorted (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
