package openworkflow_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/backend/sqlite"
)

// inBackendTx runs fn in a transaction of b's own kind (a pgx.Tx on
// PostgreSQL, sqlite.Backend.InTx's *sql.Tx on SQLite), committing it
// when fn returns nil and rolling it back otherwise; it returns when the
// commit or rollback is done.
func inBackendTx(ctx context.Context, b backend.Backend, fn func(ctx context.Context, tx any) error) error {
	switch b := b.(type) {
	case *postgres.Backend:
		return pgx.BeginFunc(ctx, b.Pool(), func(tx pgx.Tx) error { return fn(ctx, tx) })
	case *sqlite.Backend:
		return b.InTx(ctx, func(ctx context.Context, tx *sql.Tx) error { return fn(ctx, tx) })
	}
	return errors.New("no transactions for this backend")
}

// claimLog is a backend that records when its worker claims and how many
// runs each claim took, signalling each claim on calls.
type claimLog struct {
	backend.Backend
	mu     sync.Mutex
	claims []claimRecord
	calls  chan struct{}
}

type claimRecord struct {
	at   time.Time
	runs int
}

func (c *claimLog) ClaimWorkflowRuns(ctx context.Context, p backend.ClaimWorkflowRunsParams) ([]*backend.WorkflowRun, error) {
	runs, err := c.Backend.ClaimWorkflowRuns(ctx, p)
	c.mu.Lock()
	c.claims = append(c.claims, claimRecord{time.Now(), len(runs)})
	c.mu.Unlock()
	select {
	case c.calls <- struct{}{}:
	default:
	}
	return runs, err
}

func (c *claimLog) records() []claimRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]claimRecord(nil), c.claims...)
}

// A run started in a transaction exists only if the transaction commits,
// and its commit wakes an idle worker at once: the claim that takes it
// comes before the worker's next idle poll could. The worker's polls are
// spaced by its backoff (100 ms × 2^(n−1) × a jitter of at least 0.5 after
// n idle claims, up to MaxPollInterval, here an hour), so after 6 idle
// claims the next poll is at least 1.6 s away: a claim before that was
// woken by the commit.
func TestStartTxRunsExistIffTheTransactionCommitsAndTheCommitWakesTheWorker(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		executed := make(chan string, 4)
		wf := ow.Define(ow.Spec{Name: "invoice"}, func(ctx ow.Context, order int) (int, error) {
			runID := ctx.RunInfo().ID
			return ow.Run(ctx, "send", func(context.Context) (int, error) {
				executed <- runID
				return order * 10, nil
			})
		})
		client := ow.NewClient(b)

		var rolledBack *ow.Handle[int]
		err := inBackendTx(ctx, b, func(ctx context.Context, tx any) error {
			var err error
			if rolledBack, err = wf.StartTx(ctx, client, tx, 1); err != nil {
				return err
			}
			return errors.New("the order could not be saved")
		})
		if err == nil || rolledBack == nil {
			t.Fatalf("rolled-back transaction: err %v, handle %v; want the fn's error after a start", err, rolledBack)
		}
		if _, err := client.GetRun(ctx, rolledBack.ID); !errors.Is(err, backend.ErrRunNotFound) {
			t.Fatalf("GetRun of the run of a rolled-back transaction = %v, want ErrRunNotFound", err)
		}

		log := &claimLog{Backend: b, calls: make(chan struct{}, 1)}
		startWorker(t, log, ow.WorkerOptions{Concurrency: 2, MaxPollInterval: time.Hour}, wf)
		const idleClaims = 6
		for len(log.records()) < idleClaims {
			select {
			case <-log.calls:
			case <-ctx.Done():
				t.Fatalf("the worker made %d claims in 30 s, want %d", len(log.records()), idleClaims)
			}
		}
		idle := log.records()
		for _, c := range idle {
			if c.runs != 0 {
				t.Fatalf("an idle claim took %d runs: the rolled-back run exists", c.runs)
			}
		}
		earliestPoll := idle[len(idle)-1].at.Add(time.Duration(0.5 * float64(100*time.Millisecond<<(idleClaims-1))))

		var h *ow.Handle[int]
		err = inBackendTx(ctx, b, func(ctx context.Context, tx any) error {
			var err error
			h, err = wf.StartTx(ctx, client, tx, 4)
			return err
		})
		committed := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Result(ctx)
		if err != nil || out != 40 {
			t.Fatalf("Result = %d, %v; want 40", out, err)
		}
		if id := <-executed; id != h.ID {
			t.Fatalf("the step ran for run %s, want %s", id, h.ID)
		}
		var claimedAt time.Time
		for _, c := range log.records() {
			if c.runs > 0 {
				claimedAt = c.at
				break
			}
		}
		t.Logf("wake latency from commit to claim: %v (the next idle poll was at least %v after the commit)",
			claimedAt.Sub(committed).Round(time.Microsecond), earliestPoll.Sub(committed).Round(time.Millisecond))
		if !claimedAt.Before(earliestPoll) {
			t.Fatalf("the run was claimed %v after the commit, not before the worker's next idle poll (%v after it): the commit did not wake the worker",
				claimedAt.Sub(committed), earliestPoll.Sub(committed))
		}
	})
}
