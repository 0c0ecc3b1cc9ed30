package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/server"
)

// TestListMemoryIsBounded: eight concurrent worst-case lists — GET
// /v1/runs?limit=1000&resolveData=all over 100 runs of 1 MiB inputs, the
// case of issue 19 where each answered 100 MB — allocate, all together,
// within a bound set by the page's byte budget (api.Options.MaxListBytes),
// not by the data stored. The bound is on the bytes allocated (the
// runtime's TotalAlloc, which includes the client's side of the test,
// reading the answers into io.Discard), which the peak of the heap cannot
// exceed; the peak of HeapInuse is logged. docs/benchmarks.md gives the
// figures before and after.
func TestListMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 100 MiB")
	}
	const (
		inputBytes = 1 << 20
		requests   = 8
	)
	runs := 100
	if raceEnabled {
		// The race detector slows SQLite (pure Go) tenfold: 16 runs still
		// make each list pass the budget four times, and lists without one
		// allocate three times the bound.
		runs = 16
	}
	b := openSQLite(t)
	c := ow.NewClient(b)
	input := json.RawMessage(`"` + strings.Repeat("x", inputBytes-2) + `"`)
	for range runs / 8 {
		ps := make([]backend.CreateWorkflowRunParams, 8)
		for i := range ps {
			ps[i] = backend.CreateWorkflowRunParams{WorkflowName: "nobody-runs-this", Input: input}
		}
		if _, err := b.CreateWorkflowRuns(t.Context(), ps); err != nil {
			t.Fatal(err)
		}
	}
	addr := serve(t, c, server.Options{})
	url := "http://" + addr + "/v1/runs?limit=1000&resolveData=all"

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := newPeakHeap()
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for range requests {
		wg.Go(func() {
			res, err := http.Get(url)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			n, err := io.Copy(io.Discard, res.Body)
			if err == nil && (res.StatusCode != http.StatusOK || n < inputBytes) {
				err = fmt.Errorf("GET %s: %s, %d bytes", url, res.Status, n)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	heapPeak := peak.stop()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	// Per request, B the budget and R the largest run: the runs read (the
	// page and the run after it, each held twice while scanned) 2(B+R),
	// and the answer's buffer, grown by doubling, 2B; 8B leaves room for
	// the rest of the server, the client, and the race detector's
	// sync.Pool, which keeps less.
	const perRequest = 8 * api.DefaultMaxListBytes
	bound := uint64(requests * perRequest)
	t.Logf("%d concurrent lists of %d runs of %d KiB: %d MiB allocated (bound %d MiB), HeapInuse peak %d MiB above the %d MiB before",
		requests, runs, inputBytes>>10, allocated>>20, bound>>20, (heapPeak-min(heapPeak, before.HeapInuse))>>20, before.HeapInuse>>20)
	if allocated > bound {
		t.Fatalf("%d concurrent lists allocated %d MiB, above the bound of %d MiB: a list's memory is not bounded by its page's byte budget", requests, allocated>>20, bound>>20)
	}
}

// peakHeap samples HeapInuse until stopped, for the log.
type peakHeap struct {
	stopc chan struct{}
	peak  chan uint64
}

func newPeakHeap() *peakHeap {
	p := &peakHeap{stopc: make(chan struct{}), peak: make(chan uint64)}
	go func() { // owned by p: stop ends it
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var peak uint64
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-p.stopc:
				p.peak <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *peakHeap) stop() uint64 {
	close(p.stopc)
	return <-p.peak
}
