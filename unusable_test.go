package openworkflow_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// failingClaims is a backend whose claims fail with err, counted; after
// the third, third is closed.
type failingClaims struct {
	backend.Backend
	err    error
	claims atomic.Int32
	third  chan struct{}
}

func (f *failingClaims) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	if f.claims.Add(1) == 3 {
		close(f.third)
	}
	return nil, f.err
}

func TestUnusableBackendStopsTheWorker(t *testing.T) {
	b := &failingClaims{Backend: openTestBackend(t, nil), third: make(chan struct{}),
		err: fmt.Errorf("select claim candidates: %w", fmt.Errorf("the file /data/ow.db is damaged: %w", backend.ErrUnusable))}
	var logs syncBuffer
	w := ow.NewWorker(b, ow.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := w.Register(ow.Define(ow.Spec{Name: "wf"}, func(ow.Context, int) (int, error) { return 0, nil })); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }() // nothing cancels it: it must return by itself
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("Run still running a minute after its claims failed with ErrUnusable (%d claims); logs:\n%s", b.claims.Load(), logs.String())
	}
	if !errors.Is(err, backend.ErrUnusable) || !strings.Contains(err.Error(), "/data/ow.db is damaged") {
		t.Fatalf("Run = %v, want the backend's error", err)
	}
	if !errors.Is(w.Err(), backend.ErrUnusable) {
		t.Errorf("Err = %v, want the backend's error", w.Err())
	}
	if n := b.claims.Load(); n != 1 {
		t.Errorf("%d claims, want 1: no retry after an ErrUnusable", n)
	}
	out := logs.String()
	if n := strings.Count(out, "worker stopped claiming runs"); n != 1 || strings.Contains(out, "tick failed") || !strings.Contains(out, "/data/ow.db is damaged") {
		t.Errorf("want one line saying why the worker stopped, naming the file, and no tick warning; logs:\n%s", out)
	}
}

func TestPassingBackendErrorsAreRetried(t *testing.T) {
	b := &failingClaims{Backend: openTestBackend(t, nil), third: make(chan struct{}), err: errors.New("connection reset")}
	var logs syncBuffer
	w := ow.NewWorker(b, ow.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-b.third // the worker asked again after two failures
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v after a cancel, want nil: a passing error does not stop the worker", err)
	}
	if w.Err() != nil {
		t.Errorf("Err = %v, want nil", w.Err())
	}
}

// breaksMidPass is a backend that becomes unusable while a step runs:
// from then on claims and writes fail with an error wrapping
// backend.ErrUnusable, counted.
type breaksMidPass struct {
	backend.Backend
	broken atomic.Bool
	writes atomic.Int32
}

var errBroken = fmt.Errorf("the file /data/ow.db is damaged: %w", backend.ErrUnusable)

func (f *breaksMidPass) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	if f.broken.Load() {
		return nil, errBroken
	}
	return f.Backend.ClaimWorkflowRuns(ctx, p)
}

func (f *breaksMidPass) ApplyWrites(ctx context.Context, groups [][]backend.Write) []error {
	if !f.broken.Load() {
		return f.Backend.ApplyWrites(ctx, groups)
	}
	f.writes.Add(1)
	errs := make([]error, len(groups))
	for i := range errs {
		errs[i] = errBroken
	}
	return errs
}

func TestUnusableBackendMidPassStopsTheWorkerWithoutWaitingForTheGracePeriod(t *testing.T) {
	b := &breaksMidPass{Backend: openTestBackend(t, nil)}
	var logs syncBuffer
	// A grace period longer than the test's guard: Run must not wait it
	// out for a pass whose run cannot be handed back.
	w := ow.NewWorker(b, ow.WorkerOptions{ShutdownGracePeriod: time.Hour, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	wf := ow.Define(ow.Spec{Name: "breaks"}, func(ctx ow.Context, _ int) (int, error) {
		return ow.Run(ctx, "break", func(context.Context) (int, error) {
			b.broken.Store(true)
			return 1, nil
		})
	})
	if err := w.Register(wf); err != nil {
		t.Fatal(err)
	}
	if _, err := wf.Start(context.Background(), ow.NewClient(b), 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("Run still running a minute after the backend became unusable mid-pass (%d failed writes); logs:\n%s", b.writes.Load(), logs.String())
	}
	if !errors.Is(err, backend.ErrUnusable) {
		t.Fatalf("Run = %v, want the backend's error", err)
	}
	if n := b.writes.Load(); n > 3 {
		t.Errorf("%d writes tried on the unusable backend, want at most 3 (the pass's, its hand-back, the release at stop)", n)
	}
}
