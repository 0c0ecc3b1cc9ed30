package openworkflow_test

import (
	"context"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
)

// silentBackend's subscribers get only the events the test sends: the
// backend's own announcements are lost, as while a PostgreSQL listener
// reconnects to a new primary.
type silentBackend struct {
	backend.Backend
	events chan backend.Event
}

func (b *silentBackend) Subscribe(ctx context.Context) (<-chan backend.Event, error) {
	return b.events, nil
}

// TestResultReadsAgainOnResync: a Result whose run finished while the
// announcements were lost reads the run when backend.EventResync says
// so, rather than at its 2 s fallback poll.
func TestResultReadsAgainOnResync(t *testing.T) {
	eachBackend(t, func(t *testing.T, inner backend.Backend) {
		wf := ow.Define(ow.Spec{Name: "resync"}, func(ctx ow.Context, in int) (int, error) { return in + 1, nil })
		quiet := &silentBackend{Backend: inner, events: make(chan backend.Event, 1)}
		h, err := wf.Start(t.Context(), ow.NewClient(quiet), 41)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			out int
			err error
			at  time.Time
		}
		got := make(chan result, 1)
		began := time.Now()
		go func() {
			out, err := h.Result(t.Context())
			got <- result{out, err, time.Now()}
		}()
		// The run finishes; the waiting Result hears nothing of it.
		ctx := startWorker(t, inner, ow.WorkerOptions{ID: "resync"}, wf)
		waitTerminal(t, inner, h.ID)
		select {
		case r := <-got:
			t.Fatalf("Result returned (%v, %v) before the resync: its first read raced the run; nothing tested", r.out, r.err)
		default:
		}
		sent := time.Now()
		quiet.events <- backend.Event{Kind: backend.EventResync}
		select {
		case r := <-got:
			if r.err != nil || r.out != 42 {
				t.Fatalf("Result = %v, %v; want 42", r.out, r.err)
			}
			// The fallback poll comes 2 s after the wait began; the resync
			// came well before it.
			if fallback := began.Add(2 * time.Second); sent.Before(fallback) && r.at.After(fallback) {
				t.Fatalf("Result returned %v after the resync, at its fallback poll: the resync was ignored", r.at.Sub(sent))
			}
		case <-ctx.Done():
			t.Fatal("Result did not return")
		}
	})
}
