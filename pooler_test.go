package openworkflow_test

// The engine through PgBouncer (production-postgres.md §5), started by the
// test in front of the test server: in session mode with the defaults, and
// in transaction mode declared (pgx exec mode, LISTEN on the direct URL).
// One workflow uses steps, a durable sleep, a signal and a hook, with the
// worker's LISTEN subscription (its idle polls back off to an hour). That
// LISTEN delivers through each mode is checked directly by TestPoolers in
// backend/postgres.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/pgcluster"
	"github.com/openworkflow-go/openworkflow/internal/pgtest"
)

func TestEngineThroughPgBouncer(t *testing.T) {
	if testBackend() != "postgres" {
		t.Skip("runs in the PostgreSQL round")
	}
	bouncer := pgcluster.StartBouncerFor(t, pgtest.URL())
	for _, c := range []struct {
		name string
		url  string
		opts postgres.Options
	}{
		{"session mode", bouncer.SessionURL, postgres.Options{}},
		{"transaction mode", bouncer.TransactionURL, postgres.Options{PoolMode: postgres.PoolModeTransaction, DirectURL: pgtest.URL()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := pgtest.OpenURL(t, c.url, c.opts)
			token := fmt.Sprintf("tok-%d", time.Now().UnixNano())
			wf := ow.Define(ow.Spec{Name: "pooled"}, func(ctx ow.Context, n int) (string, error) {
				a, err := ow.Run(ctx, "double", func(context.Context) (int, error) { return 2 * n, nil })
				if err != nil {
					return "", err
				}
				if err := ow.Sleep(ctx, "nap", 50*time.Millisecond); err != nil {
					return "", err
				}
				s, ok, err := ow.WaitForSignal[int](ctx, "go", ow.WithTimeout(time.Minute))
				if err != nil || !ok {
					return "", fmt.Errorf("signal: received %v: %w", ok, err)
				}
				h, err := ow.CreateHook[string](ctx, "approval", ow.WithToken(token))
				if err != nil {
					return "", err
				}
				v, ok, err := h.Receive(ow.WithTimeout(time.Minute))
				if err != nil || !ok {
					return "", fmt.Errorf("hook: received %v: %w", ok, err)
				}
				return fmt.Sprintf("%d %d %s", a, s, v), nil
			})
			startWorker(t, b, ow.WorkerOptions{Concurrency: 2, MaxPollInterval: time.Hour}, wf)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			client := ow.NewClient(b)
			h, err := wf.Start(ctx, client, 21)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.SignalRun(ctx, h.ID, "go", 7, ""); err != nil {
				t.Fatal(err)
			}
			for {
				_, _, err := client.ResumeHook(ctx, token, "yes")
				if err == nil {
					break
				}
				if !errors.Is(err, backend.ErrHookNotFound) {
					t.Fatal(err)
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the run made no hook within 60 s: %v", ctx.Err())
				case <-time.After(20 * time.Millisecond):
				}
			}
			out, err := h.Result(ctx)
			if err != nil || out != "42 7 yes" {
				t.Fatalf("result %q, %v; want \"42 7 yes\"", out, err)
			}
		})
	}
}
