package postgres_test

// PostgreSQL-specific tests: concurrency under real row locks, LISTEN/NOTIFY,
// migrations and the schema shared with OpenWorkflow. Behaviour common to
// all backends is specified in backend/backendtest.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

// must drops the error of a query whose rows are collected next (the
// collect reports it).
func must(rows pgx.Rows, err error) pgx.Rows {
	if err != nil {
		panic(err)
	}
	return rows
}

func createRun(t testing.TB, b backend.Backend, p backend.CreateWorkflowRunParams) *backend.WorkflowRun {
	t.Helper()
	if p.WorkflowName == "" {
		p.WorkflowName = "wf"
	}
	run, err := b.CreateWorkflowRun(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func claim(t testing.TB, b backend.Backend, lease time.Duration, workers ...string) []*backend.WorkflowRun {
	t.Helper()
	runs, err := b.ClaimWorkflowRuns(context.Background(), backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: lease})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func TestClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("concurrent claimers with batches never claim a run twice", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		const runs, claimers, batch = 60, 8, 3
		for range runs {
			createRun(t, b, backend.CreateWorkflowRunParams{})
		}
		var mu sync.Mutex
		claimedBy := map[string]string{}
		var wg sync.WaitGroup
		errs := make(chan error, claimers)
		for c := range claimers {
			wg.Go(func() {
				for {
					workers := make([]string, batch)
					for i := range workers {
						workers[i] = fmt.Sprintf("c%d-w%d", c, i)
					}
					got, err := b.ClaimWorkflowRuns(ctx, backend.ClaimWorkflowRunsParams{WorkerIDs: workers, LeaseDuration: time.Hour})
					if err != nil {
						errs <- err
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, r := range got {
						if prev, dup := claimedBy[r.ID]; dup {
							errs <- fmt.Errorf("run %s claimed by %s and %s", r.ID, prev, *r.WorkerID)
						}
						claimedBy[r.ID] = *r.WorkerID
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if len(claimedBy) != runs {
			t.Errorf("claimed %d runs, want %d", len(claimedBy), runs)
		}
	})

	t.Run("pairs the i-th candidate with the i-th worker id, pending first", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		now := time.Now()
		early := now.Add(-time.Hour)
		// A due parked run (running, unowned) is claimed after pending ones.
		parked := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &early})
		claim(t, b, time.Hour, "parker")
		if err := b.SleepWorkflowRun(ctx, backend.SleepWorkflowRunParams{WorkflowRunID: parked.ID, WorkerID: "parker", AvailableAt: early}); err != nil {
			t.Fatal(err)
		}
		older := now.Add(-2 * time.Minute)
		newer := now.Add(-time.Minute)
		second := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &newer})
		first := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &older})
		later := now.Add(time.Hour)
		createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &later}) // not due

		got := claim(t, b, time.Minute, "w1", "w2", "w3", "w4")
		if len(got) != 3 {
			t.Fatalf("claimed %d runs, want 3", len(got))
		}
		for i, want := range []struct{ id, worker string }{{first.ID, "w1"}, {second.ID, "w2"}, {parked.ID, "w3"}} {
			if got[i].ID != want.id || *got[i].WorkerID != want.worker {
				t.Errorf("claim %d = run %s by %s, want run %s by %s", i, got[i].ID, *got[i].WorkerID, want.id, want.worker)
			}
			if got[i].Status != backend.RunRunning || got[i].Attempts < 1 {
				t.Errorf("claim %d: status %s attempts %d", i, got[i].Status, got[i].Attempts)
			}
		}
		if d := got[0].AvailableAt.Sub(*got[0].StartedAt); d < 59*time.Second || d > 61*time.Second {
			t.Errorf("lease = %v, want about 1m", d)
		}
	})

	t.Run("fails runs whose deadline passed, even leased ones", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		soon := time.Now().Add(300 * time.Millisecond)
		run := createRun(t, b, backend.CreateWorkflowRunParams{DeadlineAt: &soon})
		if got := claim(t, b, time.Hour, "w1"); len(got) != 1 {
			t.Fatalf("claimed %d runs", len(got))
		}
		waitFor(t, 5*time.Second, func() bool {
			claim(t, b, time.Hour, "w2")
			r, err := b.GetWorkflowRun(ctx, run.ID)
			return err == nil && r.Status == backend.RunFailed
		})
		r, _ := b.GetWorkflowRun(ctx, run.ID)
		assertJSONEq(t, r.Error, backend.DeadlineExceededError)
		if r.WorkerID != nil || r.AvailableAt != nil || r.FinishedAt == nil {
			t.Errorf("expired run: worker %v available %v finished %v", r.WorkerID, r.AvailableAt, r.FinishedAt)
		}
	})
}

func TestFencingAfterLeaseMoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newBackend(t)
	run := createRun(t, b, backend.CreateWorkflowRunParams{})
	claim(t, b, 0, "old") // lease expires at once
	step, err := b.CreateStepAttempt(ctx, backend.CreateStepAttemptParams{WorkflowRunID: run.ID, WorkerID: "old", StepName: "s", Kind: backend.StepFunction})
	if err != nil {
		t.Fatal(err)
	}
	if got := claim(t, b, time.Hour, "new"); len(got) != 1 || *got[0].WorkerID != "new" {
		t.Fatalf("second claim did not take the run: %+v", got)
	}

	stale := map[string]func() error{
		"extend lease": func() error {
			return b.ExtendWorkflowRunLease(ctx, backend.ExtendWorkflowRunLeaseParams{WorkflowRunID: run.ID, WorkerID: "old", LeaseDuration: time.Minute})
		},
		"create step": func() error {
			_, err := b.CreateStepAttempt(ctx, backend.CreateStepAttemptParams{WorkflowRunID: run.ID, WorkerID: "old", StepName: "t", Kind: backend.StepFunction})
			return err
		},
		"complete step": func() error {
			_, err := b.CompleteStepAttempt(ctx, backend.CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: "old"})
			return err
		},
		"fail step": func() error {
			_, err := b.FailStepAttempt(ctx, backend.FailStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: "old", Error: json.RawMessage(`{}`)})
			return err
		},
		"link child": func() error {
			_, err := b.SetStepAttemptChildWorkflowRun(ctx, backend.SetStepAttemptChildWorkflowRunParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: "old", ChildWorkflowRunNamespaceID: "x", ChildWorkflowRunID: "y"})
			return err
		},
		"park": func() error {
			return b.SleepWorkflowRun(ctx, backend.SleepWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: "old", AvailableAt: time.Now()})
		},
		"complete run": func() error {
			_, err := b.CompleteWorkflowRun(ctx, backend.CompleteWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: "old"})
			return err
		},
		"fail run": func() error {
			_, err := b.FailWorkflowRun(ctx, backend.FailWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: "old", Error: json.RawMessage(`{}`), RetryPolicy: backend.NoRetryPolicy})
			return err
		},
		"reschedule run": func() error {
			_, err := b.RescheduleWorkflowRunAfterFailedStepAttempt(ctx, backend.RescheduleWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: "old", Error: json.RawMessage(`{}`), AvailableAt: time.Now()})
			return err
		},
	}
	for name, write := range stale {
		err := write()
		if !errors.Is(err, backend.ErrNotOwner) {
			t.Errorf("%s by the old owner: err = %v, want ErrNotOwner", name, err)
		} else if !strings.Contains(err.Error(), run.ID) {
			t.Errorf("%s: error %q does not name run %s", name, err, run.ID)
		}
	}

	if _, err := b.CompleteStepAttempt(ctx, backend.CompleteStepAttemptParams{WorkflowRunID: run.ID, StepAttemptID: step.ID, WorkerID: "new", Output: json.RawMessage(`1`)}); err != nil {
		t.Errorf("new owner completing the step: %v", err)
	}
	if _, err := b.CompleteWorkflowRun(ctx, backend.CompleteWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: "new"}); err != nil {
		t.Errorf("new owner completing the run: %v", err)
	}
}

func TestKeyedCreates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ten concurrent creates with one key collapse to one run", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		key := "order-42"
		ids := make([]string, 10)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				run, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf", IdempotencyKey: &key})
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = run.ID
			})
		}
		wg.Wait()
		if uniq := slices.Compact(slices.Sorted(slices.Values(ids))); len(uniq) != 1 {
			t.Errorf("ids = %v, want one id", ids)
		}
		counts, err := b.CountWorkflowRuns(ctx)
		if err != nil || counts.Pending != 1 {
			t.Errorf("counts = %+v, %v; want 1 pending", counts, err)
		}
	})

	t.Run("a key older than 24 hours starts a new run", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		key := "k"
		first := createRun(t, b, backend.CreateWorkflowRunParams{IdempotencyKey: &key})
		ageRun(t, b, first.ID, backend.IdempotencyPeriod+time.Second)
		second := createRun(t, b, backend.CreateWorkflowRunParams{IdempotencyKey: &key})
		if second.ID == first.ID {
			t.Errorf("an expired key returned the old run")
		}
	})
}

func TestIdempotencyLockKeyMatchesOpenWorkflow(t *testing.T) {
	// JSON.stringify({namespaceId, workflowName, idempotencyKey}) escapes only
	// quotes, backslashes and control characters.
	got := postgres.IdempotencyLockKey("default", "a<b>&\u2028", "q\"\\\n\x01é")
	want := `{"namespaceId":"default","workflowName":"a<b>&` + "\u2028" + `","idempotencyKey":"q\"\\\n\u0001é"}`
	if got != want {
		t.Errorf("lock key = %s, want %s", got, want)
	}
}

func TestNotifications(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a subscriber hears new work and finished runs of its namespace only", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		other := newBackend(t)
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events, err := b.Subscribe(sctx)
		if err != nil {
			t.Fatal(err)
		}
		createRun(t, other, backend.CreateWorkflowRunParams{}) // not ours
		run := createRun(t, b, backend.CreateWorkflowRunParams{})
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable, WorkflowRunID: run.ID})

		claim(t, b, time.Hour, "w")
		if _, err := b.CompleteWorkflowRun(ctx, backend.CompleteWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, events, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: run.ID})

		later := time.Now().Add(time.Hour)
		createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &later}) // delayed: silent
		canceled := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &later})
		if _, err := b.CancelWorkflowRun(ctx, canceled.ID); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, events, backend.Event{Kind: backend.EventRunFinished, WorkflowRunID: canceled.ID})
		cancel()
		for range events { // drained and closed once ctx is done
		}
	})

	t.Run("a batch start announces work only when one of its runs is due", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		events, err := b.Subscribe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Hour)
		evenLater := time.Now().Add(2 * time.Hour)
		if _, err := b.CreateWorkflowRuns(ctx, []backend.CreateWorkflowRunParams{
			{WorkflowName: "a", AvailableAt: &evenLater}, {WorkflowName: "a", AvailableAt: &later}}); err != nil {
			t.Fatal(err)
		}
		// Had the delayed batch been announced, its id-less event would
		// come before this run's.
		run := createRun(t, b, backend.CreateWorkflowRunParams{})
		if e := <-events; e != (backend.Event{Kind: backend.EventWorkAvailable, WorkflowRunID: run.ID}) {
			t.Fatalf("first event %+v, want the single run's: a batch of delayed runs was announced", e)
		}
		if _, err := b.CreateWorkflowRuns(ctx, []backend.CreateWorkflowRunParams{
			{WorkflowName: "a", AvailableAt: &later}, {WorkflowName: "a"}}); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable})
	})

	t.Run("a child finishing wakes its parked parent and announces it", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		events, err := b.Subscribe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		parent := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "parent"})
		claim(t, b, time.Hour, "pw")
		step, err := b.CreateStepAttempt(ctx, backend.CreateStepAttemptParams{WorkflowRunID: parent.ID, WorkerID: "pw", StepName: "child", Kind: backend.StepWorkflow, Context: json.RawMessage(`{"kind":"workflow","timeoutAt":null}`)})
		if err != nil {
			t.Fatal(err)
		}
		ns := b.NamespaceID()
		later := time.Now().Add(time.Hour)
		child := createRun(t, b, backend.CreateWorkflowRunParams{WorkflowName: "child", ParentStepAttemptNamespaceID: &ns, ParentStepAttemptID: &step.ID, AvailableAt: &later})
		if _, err := b.SetStepAttemptChildWorkflowRun(ctx, backend.SetStepAttemptChildWorkflowRunParams{WorkflowRunID: parent.ID, StepAttemptID: step.ID, WorkerID: "pw", ChildWorkflowRunNamespaceID: ns, ChildWorkflowRunID: child.ID}); err != nil {
			t.Fatal(err)
		}
		if err := b.SleepWorkflowRun(ctx, backend.SleepWorkflowRunParams{WorkflowRunID: parent.ID, WorkerID: "pw", AvailableAt: later}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.CancelWorkflowRun(ctx, child.ID); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable, WorkflowRunID: parent.ID})
		got := claim(t, b, time.Hour, "pw2")
		if len(got) != 1 || got[0].ID != parent.ID {
			t.Fatalf("claimed %v, want the woken parent", got)
		}
	})

	t.Run("the listener reconnects after its connection is killed", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		events, err := b.Subscribe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		pid := postgres.ListenerPID(b)
		if pid == 0 {
			t.Fatal("listener not connected")
		}
		if _, err := requirePool(t).Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)); err != nil {
			t.Fatal(err)
		}
		// After reconnecting it says work may have been missed.
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable})
		run := createRun(t, b, backend.CreateWorkflowRunParams{})
		expectEvent(t, events, backend.Event{Kind: backend.EventWorkAvailable, WorkflowRunID: run.ID})
	})

	t.Run("Subscribe fails after Close", func(t *testing.T) {
		t.Parallel()
		b := newBackend(t)
		if _, err := b.Subscribe(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Subscribe(t.Context()); err == nil {
			t.Error("Subscribe on a closed backend succeeded")
		}
	})
}

func TestSignalSendsRaceWithOneDeliveryPerWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newBackend(t)
	var waits []string
	for i := range 5 {
		run := createRun(t, b, backend.CreateWorkflowRunParams{})
		w := fmt.Sprint("w", i)
		claim(t, b, time.Hour, w)
		step, err := b.CreateStepAttempt(ctx, backend.CreateStepAttemptParams{WorkflowRunID: run.ID, WorkerID: w, StepName: "wait", Kind: backend.StepSignalWait, Context: json.RawMessage(`{"kind":"signal-wait","signal":"go","timeoutAt":"2999-01-01T00:00:00.000Z"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SleepWorkflowRun(ctx, backend.SleepWorkflowRunParams{WorkflowRunID: run.ID, WorkerID: w, AvailableAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		waits = append(waits, step.ID)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for i := range 8 {
		wg.Go(func() {
			ids, err := b.SendSignal(ctx, backend.SendSignalParams{Signal: "go", Data: json.RawMessage(fmt.Sprint(i))})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += len(ids)
			mu.Unlock()
		})
	}
	wg.Wait()
	if total != len(waits) {
		t.Errorf("%d deliveries reported, want %d (one per wait)", total, len(waits))
	}
	for _, w := range waits {
		if _, ok, err := b.GetSignalDelivery(ctx, w); err != nil || !ok {
			t.Errorf("wait %s: delivered %v, %v", w, ok, err)
		}
	}
	if got := claim(t, b, time.Hour, "a", "b", "c", "d", "e", "f"); len(got) != len(waits) {
		t.Errorf("%d runs woken, want %d", len(got), len(waits))
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("concurrent migrations of a fresh schema all succeed", func(t *testing.T) {
		t.Parallel()
		pool := requirePool(t)
		schema := strings.ReplaceAll(strings.ToLower(id.New("mig")), "-", "_")
		t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`) })
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				p, err := pgxpool.New(ctx, testURL())
				if err != nil {
					t.Error(err)
					return
				}
				defer p.Close()
				if err := postgres.Migrate(ctx, p, schema); err != nil {
					t.Errorf("migrate: %v", err)
				}
			})
		}
		wg.Wait()
		var versions []int64
		rows, err := pool.Query(ctx, `SELECT version FROM "`+schema+`".openworkflow_migrations ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v int64
			_ = rows.Scan(&v)
			versions = append(versions, v)
		}
		if !slices.Equal(versions, []int64{0, 1, 2, 3, 4, 5}) || postgres.LatestMigrationVersion != 5 {
			t.Errorf("versions = %v", versions)
		}
		goVersions, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT version FROM "`+schema+`".openworkflow_go_migrations ORDER BY 1`)), pgx.RowTo[int64])
		if err != nil || !slices.Equal(goVersions, []int64{0, 1, 2}) || postgres.LatestGoMigrationVersion != 2 {
			t.Errorf("versions of our own line = %v, %v; want [0 1 2]", goVersions, err)
		}
		b, err := postgres.FromPool(pool, postgres.Options{Schema: schema, NamespaceID: "n"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"}); err != nil {
			t.Errorf("create in the new schema: %v", err)
		}
	})

	t.Run("the schema has OpenWorkflow's keys and indexes", func(t *testing.T) {
		t.Parallel()
		pool := requirePool(t)
		var fks []string
		rows, _ := pool.Query(ctx, `SELECT conname || ':' || convalidated FROM pg_constraint
			WHERE connamespace = 'openworkflow'::regnamespace AND contype = 'f' ORDER BY 1`)
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			fks = append(fks, s)
		}
		wantFKs := []string{"step_attempts_child_workflow_run_fk:true", "step_attempts_workflow_run_fk:true", "workflow_runs_parent_step_attempt_fk:true"}
		if !slices.Equal(fks, wantFKs) {
			t.Errorf("foreign keys = %v, want %v", fks, wantFKs)
		}
		var idx []string
		rows, _ = pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = 'openworkflow' AND indexname NOT LIKE '%pkey'
			AND indexname NOT LIKE 'workflow\_runs\_go\_%' ORDER BY 1`)
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			idx = append(idx, s)
		}
		wantIdx := []string{
			"step_attempts_child_workflow_run_idx", "step_attempts_signal_wait_idx",
			"step_attempts_workflow_run_created_at_idx", "step_attempts_workflow_run_step_name_created_at_idx",
			"workflow_runs_created_at_desc_idx", "workflow_runs_parent_step_idx",
			"workflow_runs_status_available_at_created_at_idx", "workflow_runs_status_created_at_desc_idx",
			"workflow_runs_workflow_name_idempotency_key_created_at_idx", "workflow_runs_workflow_name_status_created_at_desc_idx",
			"workflow_signals_idempotency_idx", "workflow_signals_step_attempt_idx",
		}
		if !slices.Equal(idx, wantIdx) {
			t.Errorf("indexes = %v\nwant %v", idx, wantIdx)
		}
		ours, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = 'openworkflow'
			AND indexname LIKE 'workflow\_runs\_go\_%' ORDER BY 1`)), pgx.RowTo[string])
		// Go migration 1 made three list indexes besides this one; go
		// migration 2 dropped them (their cost on every run transition).
		wantOurs := []string{"workflow_runs_go_deadline_idx"}
		if err != nil || !slices.Equal(ours, wantOurs) {
			t.Errorf("indexes of our own migration line = %v, %v\nwant %v", ours, err, wantOurs)
		}
	})

	t.Run("go migration 2 drops the list indexes of a database at go version 1", func(t *testing.T) {
		t.Parallel()
		pool := requirePool(t)
		schema := strings.ReplaceAll(strings.ToLower(id.New("mig")), "-", "_")
		t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`) })
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
		// Back to go version 1: its three list indexes, and no version 2.
		q := `"` + schema + `"`
		if _, err := pool.Exec(ctx, `
			CREATE INDEX "workflow_runs_go_status_list_idx" ON `+q+`."workflow_runs" ("namespace_id",
			  (CASE "status" WHEN 'succeeded' THEN 'completed' WHEN 'sleeping' THEN 'running' ELSE "status" END),
			  "created_at" DESC, "id" DESC);
			CREATE INDEX "workflow_runs_go_name_list_idx" ON `+q+`."workflow_runs"
			  ("namespace_id", "workflow_name", "created_at" DESC, "id" DESC);
			CREATE INDEX "workflow_runs_go_name_status_list_idx" ON `+q+`."workflow_runs" ("namespace_id", "workflow_name",
			  (CASE "status" WHEN 'succeeded' THEN 'completed' WHEN 'sleeping' THEN 'running' ELSE "status" END),
			  "created_at" DESC, "id" DESC);
			DELETE FROM `+q+`."openworkflow_go_migrations" WHERE "version" = 2`); err != nil {
			t.Fatal(err)
		}
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
		ours, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1
			AND indexname LIKE 'workflow\_runs\_go\_%' ORDER BY 1`, schema)), pgx.RowTo[string])
		if err != nil || !slices.Equal(ours, []string{"workflow_runs_go_deadline_idx"}) {
			t.Errorf("indexes of our own migration line after the upgrade = %v, %v", ours, err)
		}
		goVersions, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT version FROM `+q+`.openworkflow_go_migrations ORDER BY 1`)), pgx.RowTo[int64])
		if err != nil || !slices.Equal(goVersions, []int64{0, 1, 2}) {
			t.Errorf("versions of our own line after the upgrade = %v, %v; want [0 1 2]", goVersions, err)
		}
	})

	t.Run("bad schema names are refused", func(t *testing.T) {
		t.Parallel()
		for _, s := range []string{"1abc", "a-b", `a"b`, strings.Repeat("a", 64)} {
			if _, err := postgres.FromPool(requirePool(t), postgres.Options{Schema: s}); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("schema %q: err = %v", s, err)
			}
		}
	})
}

// TestListMergesStoredStatuses checks the lists that read one index range
// per stored status and merge them: legacy statuses listed under their
// current names, runs of several statuses sharing a created_at ordered by
// id across the branches, and every page the same going forward with After
// and back with Before.
func TestListMergesStoredStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newBackend(t)
	stored := []string{"pending", "running", "sleeping", "completed", "succeeded", "failed", "canceled"}
	type row struct {
		id, name string
		status   backend.RunStatus
		created  time.Time
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	var rows []row
	for i := range 100 {
		// Twenty runs per created_at, of several statuses and names, with
		// ids in another order than the statuses.
		rows = append(rows, row{
			id:      fmt.Sprintf("wrun_%03d", (i*37)%100),
			name:    []string{"a", "b"}[i%2],
			status:  backend.RunStatus(stored[(i*3)%len(stored)]),
			created: base.Add(time.Duration(i/20) * time.Second),
		})
	}
	for _, r := range rows {
		if _, err := requirePool(t).Exec(ctx, `INSERT INTO openworkflow.workflow_runs
			(namespace_id, id, workflow_name, status, config, attempts, created_at, updated_at)
			VALUES ($1, $2, $3, $4, '{}', 0, $5, $5)`, b.NamespaceID(), r.id, r.name, string(r.status), r.created); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(rows, func(x, y row) int {
		if c := y.created.Compare(x.created); c != 0 {
			return c
		}
		return strings.Compare(y.id, x.id)
	})
	for _, status := range []backend.RunStatus{"", backend.RunPending, backend.RunRunning, backend.RunCompleted, backend.RunFailed, backend.RunCanceled, backend.RunSleeping} {
		for _, name := range []string{"", "a", "b", "none"} {
			var want []string
			for _, r := range rows {
				if (status == "" || r.status.Normalize() == status.Normalize()) && (name == "" || r.name == name) {
					want = append(want, r.id)
				}
			}
			for _, limit := range []int{1, 3, 4, 7, 100} {
				p := backend.ListWorkflowRunsParams{Status: status, WorkflowName: name, Limit: limit}
				what := fmt.Sprintf("status %q, name %q, limit %d", status, name, limit)
				var pages [][]string
				var got []string
				page, err := b.ListWorkflowRuns(ctx, p)
				for err == nil {
					var ids []string
					for _, r := range page.Data {
						if r.Status != r.Status.Normalize() || (status != "" && r.Status != status.Normalize()) {
							t.Errorf("%s: run %s listed with status %q", what, r.ID, r.Status)
						}
						ids = append(ids, r.ID)
					}
					pages = append(pages, ids)
					got = append(got, ids...)
					if page.Next == nil {
						break
					}
					p.After, p.Before = *page.Next, ""
					page, err = b.ListWorkflowRuns(ctx, p)
				}
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: listed %v\nwant %v", what, got, want)
					continue
				}
				// Back from the last page with Before.
				for i := len(pages) - 1; i > 0; i-- {
					if page.Prev == nil {
						t.Fatalf("%s: page %d has no previous-page cursor", what, i)
					}
					p.After, p.Before = "", *page.Prev
					if page, err = b.ListWorkflowRuns(ctx, p); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					var ids []string
					for _, r := range page.Data {
						ids = append(ids, r.ID)
					}
					if !slices.Equal(ids, pages[i-1]) {
						t.Errorf("%s: page %d going back = %v, want %v", what, i-1, ids, pages[i-1])
					}
				}
			}
		}
	}
}

func TestTimestampsHaveMillisecondPrecision(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	at := time.Now().Add(-time.Second)
	run := createRun(t, b, backend.CreateWorkflowRunParams{AvailableAt: &at})
	got := claim(t, b, 1234*time.Microsecond, "w")[0]
	for _, ts := range []time.Time{run.CreatedAt, run.UpdatedAt, *run.AvailableAt, got.CreatedAt, *got.StartedAt, *got.AvailableAt, got.UpdatedAt} {
		if ts.Nanosecond()%int(time.Millisecond) != 0 || ts.Location() != time.UTC {
			t.Errorf("timestamp %v is not UTC milliseconds", ts)
		}
	}
}

// expectEvent waits for an event equal to want, ignoring others.
func expectEvent(t *testing.T, events <-chan backend.Event, want backend.Event) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("events closed while waiting for %+v", want)
			}
			if e == want {
				return
			}
		case <-timeout:
			t.Fatalf("no event %+v within 10s", want)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func assertJSONEq(t *testing.T, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s", got)
	}
	_ = json.Unmarshal(want, &w)
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	requirePool(t)
	ctx := context.Background()

	t.Run("migrates a fresh schema and closes the pool it created", func(t *testing.T) {
		t.Parallel()
		schema := strings.ToLower(id.New("open"))
		t.Cleanup(func() { _, _ = requirePool(t).Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`) })
		b, err := postgres.Open(ctx, testURL(), postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		if b.NamespaceID() != backend.DefaultNamespaceID || b.Schema() != schema {
			t.Errorf("namespace %q schema %q", b.NamespaceID(), b.Schema())
		}
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Subscribe(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Pool().Ping(ctx); err == nil {
			t.Error("the pool Open created is still open after Close")
		}
	})

	t.Run("fails without tables when migrations are skipped", func(t *testing.T) {
		t.Parallel()
		b, err := postgres.Open(ctx, testURL(), postgres.Options{Schema: "no_such_schema_here", SkipMigrations: true})
		if err != nil {
			t.Fatal(err) // the server is reachable: Open succeeds
		}
		defer b.Close()
		if _, err := b.CreateWorkflowRun(ctx, backend.CreateWorkflowRunParams{WorkflowName: "wf"}); err == nil {
			t.Error("create succeeded in a schema that was never migrated")
		}
	})

	t.Run("reports an unreachable server", func(t *testing.T) {
		t.Parallel()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := postgres.Open(cctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", postgres.Options{}); err == nil {
			t.Error("Open succeeded against a closed port")
		}
	})
}

func TestFromPoolLeavesThePoolOpen(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	if _, err := b.Subscribe(t.Context()); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if err := requirePool(t).Ping(context.Background()); err != nil {
		t.Errorf("shared pool closed by a FromPool backend: %v", err)
	}
}
