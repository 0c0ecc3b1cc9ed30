package openworkflow_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestADatabaseOutageHoldsNoRunForALease cuts the worker's connections to
// PostgreSQL for 3 s in the middle of a load (through a proxy of the
// test's own, not the shared server): every run completes with the right
// output, none waits for its lease (60 s) to expire, and the outage is
// not logged as a lost lease or a critical error.
func TestADatabaseOutageHoldsNoRunForALease(t *testing.T) {
	const runs, lease = 200, time.Minute
	proxy := pgtest.NewProxy(t)
	b := pgtest.OpenURL(t, proxy.URL(), postgres.Options{})
	// Reads of the test itself go around the proxy.
	direct, err := postgres.Open(t.Context(), pgtest.URL(), postgres.Options{Schema: b.Schema(), SkipMigrations: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })

	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	wf := ow.Define(ow.Spec{Name: "three-steps"}, func(ctx ow.Context, in int) (int, error) {
		n := in
		for _, name := range []string{"a", "b", "c"} {
			var err error
			if n, err = ow.Run(ctx, name, func(context.Context) (int, error) {
				time.Sleep(10 * time.Millisecond) // a step that takes a little while, so passes are in flight
				return n + 1, nil
			}); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	ctx := startWorker(t, b, ow.WorkerOptions{Concurrency: 20, LeaseDuration: lease, Logger: logger}, wf)
	client := ow.NewClient(direct)
	inputs := make([]int, runs)
	for i := range inputs {
		inputs[i] = i * 10
	}
	hs, err := wf.StartMany(ctx, client, inputs)
	if err != nil {
		t.Fatal(err)
	}
	// Cut once some runs finished and others are executing.
	waitCompleted(t, direct, runs/5)
	proxy.Cut()
	time.Sleep(3 * time.Second)
	restored := time.Now()
	proxy.Restore()

	outCtx, cancel := context.WithTimeout(ctx, lease/2)
	defer cancel()
	for i, h := range hs {
		out, err := h.Result(outCtx)
		if err != nil {
			if r, gerr := direct.GetWorkflowRun(context.Background(), h.ID); gerr == nil {
				t.Logf("run %s: status %s, worker %v, available at %v (now %v), attempts %d", r.ID, r.Status, deref(r.WorkerID), r.AvailableAt, time.Now(), r.Attempts)
			}
			t.Logf("log lines about it:\n%s", excerpt(logs.String(), h.ID))
			t.Fatalf("run %d (%s): %v — a run still waiting %v after the database came back waited for its lease", i, h.ID, err, lease/2)
		}
		if out != inputs[i]+3 {
			t.Fatalf("run %d: output %d, want %d", i, out, inputs[i]+3)
		}
	}
	t.Logf("every run completed %v after the database came back", time.Since(restored).Round(time.Millisecond))
	if testing.Verbose() {
		t.Log(logs.String())
	}
	for _, bad := range []string{"critical error", "no longer owned by this worker"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("the outage was logged as %q:\n%s", bad, excerpt(logs.String(), bad))
		}
	}
}

// waitCompleted waits until at least n runs completed.
func waitCompleted(t *testing.T, b backend.Backend, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := b.CountWorkflowRuns(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if c.Completed >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d runs completed after 30 s, want %d", c.Completed, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// excerpt returns the lines of s that contain sub.
func excerpt(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
