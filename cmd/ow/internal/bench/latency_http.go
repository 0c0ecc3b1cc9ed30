package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
)

// latencyHTTP is L3h: L3 through the HTTP API served in the worker's
// process (as ow dev and ow server serve it), each run started with
// POST /v1/runs?wait=30s, whose answer is the finished run; latency is
// from sending the request to reading the whole answer, over one
// loopback connection kept alive. Each answer must be 201 with the
// completed run and the right output, and the database is verified
// afterwards as for every workload.
func (m *measurement) latencyHTTP(ctx context.Context) (Result, error) {
	n := m.o.runsFor(L3h)
	res := m.result(n, 3*n)
	cm, err := m.startCommits(ctx)
	if err != nil {
		return res, err
	}
	stop, err := m.startWorkers(ctx)
	if err != nil {
		return res, err
	}
	url, closeServer, err := serveAPI(api.New(ow.NewClient(m.workerBackend), api.Options{}))
	if err != nil {
		return res, errors.Join(err, stop())
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	p := m.progress()
	lat := make([]float64, 0, n)
	begin := time.Now()
	for i := 0; i < n && err == nil; i++ {
		t0 := time.Now()
		var out Output
		out, err = startAndWait(ctx, client, url, i)
		lat = append(lat, ms(time.Since(t0)))
		if err == nil && out != expectedOutput(i, 3) {
			err = fmt.Errorf("POST /v1/runs?wait (input %d) answered the output %+v, want %+v", i, out, expectedOutput(i, 3))
		}
		p.update(i+1, n, "runs")
	}
	elapsed := time.Since(begin)
	client.CloseIdleConnections()
	if err = errors.Join(err, closeServer(), stop()); err != nil {
		return res, err
	}
	if err := m.stopCommits(ctx, cm, 0, &res); err != nil {
		return res, err
	}
	res.Metrics[MetricSeconds] = elapsed.Seconds()
	res.Metrics[MetricRunsPerS] = float64(n) / elapsed.Seconds()
	res.Metrics[MetricP50] = percentile(lat, 50)
	res.Metrics[MetricP95] = percentile(lat, 95)
	res.Metrics[MetricP99] = percentile(lat, 99)
	return res, m.verify(ctx, nameSeq3, n, 3, nil)
}

// startAndWait starts run i of bench-seq3 with POST /v1/runs?wait=30s and
// returns its output, which the answer must carry: 201 and completed.
func startAndWait(ctx context.Context, client *http.Client, url string, i int) (Output, error) {
	body := fmt.Sprintf(`{"workflowName":%q,"input":{"i":%d}}`, nameSeq3, i)
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/runs?wait=30s", bytes.NewReader([]byte(body)))
	if err != nil {
		return Output{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return Output{}, fmt.Errorf("POST /v1/runs?wait (input %d): %w", i, err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return Output{}, fmt.Errorf("POST /v1/runs?wait (input %d): read the answer: %w", i, err)
	}
	var run api.Run
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &run) != nil || run.Status != "completed" {
		return Output{}, fmt.Errorf("POST /v1/runs?wait (input %d) answered %d %s; want 201 and the completed run", i, resp.StatusCode, raw)
	}
	var out Output
	if err := json.Unmarshal(run.Output, &out); err != nil {
		return Output{}, fmt.Errorf("run %s (input %d): output %s: %w", run.ID, i, run.Output, err)
	}
	return out, nil
}

// serveAPI serves h on a loopback port until the returned function is
// called, which closes the server and waits for it.
func serveAPI(h http.Handler) (url string, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("serve the API: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() error {
		err := srv.Close()
		wg.Wait()
		return err
	}, nil
}
