package api_test

// Benchmarks of the API over loopback HTTP on PostgreSQL (the figures in
// docs/benchmarks.md):
//
//	go test ./api -run '^$' -bench . -benchtime 2000x
//
// With OW_API_BENCH_SCALE=1 the list benchmark first loads 1,000,000
// finished runs (every tenth failed) into its schema, as
// backend/postgres/scale_test.go does.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// benchServer is the API on a PostgreSQL schema of its own.
func benchServer(b *testing.B, defs ...ow.Definition) (*ow.Client, *postgres.Backend, string) {
	b.Helper()
	be := pgtest.Open(b, postgres.Options{})
	c := ow.NewClient(be)
	if len(defs) > 0 {
		w := ow.NewWorker(be, ow.WorkerOptions{})
		if err := w.Register(defs...); err != nil {
			b.Fatal(err)
		}
		if err := w.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = w.Stop(context.Background()) })
	}
	srv := httptest.NewServer(api.New(c, api.Options{}))
	b.Cleanup(srv.Close)
	return c, be, srv.URL
}

// latencies records durations and reports their p50 and p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	at := func(q float64) float64 { return float64(l[int(q*float64(len(l)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

func get(b *testing.B, url string) {
	res, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	var sink json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&sink); err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	res.Body.Close()
}

// BenchmarkGetRun: GET /v1/runs/{id} (target: p50 ≤ 2 ms).
func BenchmarkGetRun(b *testing.B) {
	c, _, url := benchServer(b)
	h, err := c.StartByName(context.Background(), "bench", "", map[string]int{"n": 1})
	if err != nil {
		b.Fatal(err)
	}
	get(b, url+"/v1/runs/"+h.ID) // warm the connection
	var l latencies
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		get(b, url+"/v1/runs/"+h.ID)
		l = append(l, time.Since(start))
	}
	l.report(b)
}

// BenchmarkListFailedRuns: GET /v1/runs?status=failed&limit=50, following
// cursors (target: p99 ≤ 20 ms with 1,000,000 finished runs).
func BenchmarkListFailedRuns(b *testing.B) {
	_, be, url := benchServer(b)
	n := 10_000
	if os.Getenv("OW_API_BENCH_SCALE") == "1" {
		n = 1_000_000
	}
	fillFinishedRuns(b, be, n)
	var l latencies
	cursor := ""
	b.ResetTimer()
	for b.Loop() {
		q := "/v1/runs?status=failed&limit=50&resolveData=none"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		start := time.Now()
		res, err := http.Get(url + q)
		if err != nil {
			b.Fatal(err)
		}
		var page api.List[json.RawMessage]
		if err := json.NewDecoder(res.Body).Decode(&page); err != nil || len(page.Data) != 50 {
			b.Fatalf("page: %d runs, %v", len(page.Data), err)
		}
		res.Body.Close()
		l = append(l, time.Since(start))
		cursor = ""
		if page.Cursor != nil && len(l)%100 != 0 { // back to the first page now and then
			cursor = *page.Cursor
		}
	}
	l.report(b)
}

// BenchmarkCountRuns: GET /v1/runs/counts (target: ≤ 50 ms with
// 1,000,000 finished runs, OW_API_BENCH_SCALE=1; exact).
func BenchmarkCountRuns(b *testing.B) {
	_, be, url := benchServer(b)
	n := 10_000
	if os.Getenv("OW_API_BENCH_SCALE") == "1" {
		n = 1_000_000
	}
	fillFinishedRuns(b, be, n)
	var l latencies
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := http.Get(url + "/v1/runs/counts")
		if err != nil {
			b.Fatal(err)
		}
		var counts backend.RunCounts
		if err := json.NewDecoder(res.Body).Decode(&counts); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		l = append(l, time.Since(start))
		if counts.Completed+counts.Failed != n {
			b.Fatalf("counts %+v, want %d finished runs", counts, n)
		}
	}
	l.report(b)
}

// fillFinishedRuns loads n finished runs (every tenth failed, 20 workflow
// names, one every 100 ms back from now) into be's namespace.
func fillFinishedRuns(b *testing.B, be *postgres.Backend, n int) {
	b.Helper()
	pool := pgtest.Pool(b)
	q := fmt.Sprintf(`INSERT INTO %s (
  "namespace_id", "id", "workflow_name", "status", "config", "input", "output", "error",
  "attempts", "worker_id", "available_at", "started_at", "finished_at", "created_at", "updated_at")
SELECT $1, 'wrun_' || lpad(g::text, 10, '0'), 'wf-' || (g %% 20),
  CASE WHEN g %% 10 = 0 THEN 'failed' ELSE 'completed' END, '{}', '{"i":1}',
  CASE WHEN g %% 10 = 0 THEN NULL ELSE '{"ok":true}'::jsonb END,
  CASE WHEN g %% 10 = 0 THEN '{"message":"x"}'::jsonb END,
  1, 'w', NULL, t, t, t, t
FROM generate_series(1, $2::int) AS g,
  LATERAL (SELECT NOW() - ($2::int + 1000 - g) * INTERVAL '100 milliseconds' AS t) AS ts`,
		pgx.Identifier{be.Schema(), "workflow_runs"}.Sanitize())
	start := time.Now()
	if _, err := pool.Exec(context.Background(), q, be.NamespaceID(), n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), "ANALYZE "+pgx.Identifier{be.Schema(), "workflow_runs"}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d finished runs in %s", n, time.Since(start).Round(time.Millisecond))
}

// BenchmarkStart compares starting runs through the API with Client.Start
// in process (target: the API within 80 % of the in-process rate).
func BenchmarkStart(b *testing.B) {
	b.Run("api", func(b *testing.B) {
		_, _, url := benchServer(b)
		body := `{"workflowName":"bench","input":{"n":1}}`
		for b.Loop() {
			res, err := http.Post(url+"/v1/runs", "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			var run api.Run
			if err := json.NewDecoder(res.Body).Decode(&run); err != nil || res.StatusCode != http.StatusCreated {
				b.Fatalf("start: %d %v", res.StatusCode, err)
			}
			res.Body.Close()
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
	})
	b.Run("client", func(b *testing.B) {
		c, _, _ := benchServer(b)
		for b.Loop() {
			if _, err := c.StartByName(context.Background(), "bench", "", map[string]int{"n": 1}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
	})
}

// BenchmarkChunkToSSE: from a step's write of a chunk to its arrival at a
// reader of GET /v1/runs/{id}/streams/{name} as a Server-Sent Event
// (target: p50 ≤ 10 ms). The step writes the next chunk once the reader
// has the previous one, so each latency is measured alone.
func BenchmarkChunkToSSE(b *testing.B) {
	next := make(chan struct{})
	writer := ow.Define(ow.Spec{Name: "sse-writer"}, func(ctx ow.Context, n int) (int, error) {
		return ow.Run(ctx, "write", func(sctx context.Context) (int, error) {
			w, err := ow.OpenStream(sctx, "out")
			if err != nil {
				return 0, err
			}
			for i := range n {
				if i > 0 {
					select {
					case <-next:
					case <-sctx.Done():
						return i, sctx.Err()
					}
				}
				if _, err := w.Write([]byte(strconv.FormatInt(time.Now().UnixNano(), 10))); err != nil {
					return i, err
				}
			}
			return n, w.Close()
		})
	})
	c, _, url := benchServer(b, writer)
	h, err := c.StartByName(context.Background(), "sse-writer", "", b.N)
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequest("GET", url+"/v1/runs/"+h.ID+"/streams/out", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	sse := &sseReader{t: b, res: res, sc: bufio.NewScanner(res.Body)}
	var l latencies
	b.ResetTimer()
	for i := range b.N {
		c := sse.chunk()
		sent, _ := strconv.ParseInt(string(c.Data), 10, 64)
		l = append(l, time.Since(time.Unix(0, sent)))
		if i < b.N-1 {
			next <- struct{}{}
		}
	}
	b.StopTimer()
	l.report(b)
}
