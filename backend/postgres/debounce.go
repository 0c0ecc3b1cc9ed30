package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.Debouncer = (*Backend)(nil)

// debounceAttempts bounds the loop of a debounced start that keeps losing
// the key to concurrent creates and claims: each turn either extends a run
// or creates one, so more than a few turns means something else is wrong.
const debounceAttempts = 16

// DebounceWorkflowRun implements [backend.Debouncer], in one transaction:
// debounce_extend (one UPDATE) joins the start to the pending run holding
// the key; when none does, the run is created as CreateWorkflowRun
// creates it and marked with the key in a savepoint, and a unique
// violation of workflow_runs_go_debounce_idx (a concurrent start took the
// key first) rolls the savepoint back and loops to extend that run.
func (b *Backend) DebounceWorkflowRun(ctx context.Context, p backend.CreateWorkflowRunParams, d backend.Debounce) (*backend.DebouncedRun, error) {
	d, err := d.Validate()
	if err == nil {
		err = backend.ValidateDebounceStart(p)
	}
	if err != nil {
		return nil, fmt.Errorf("debounce workflow run: %w", err)
	}
	var runID string
	var debounced bool
	err = b.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		runID, debounced, err = b.debounceInTx(ctx, tx, p, d)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("debounce workflow run %q with key %q: %w", p.WorkflowName, d.Key, missingParent([]backend.CreateWorkflowRunParams{p}, err))
	}
	run, err := b.getDebounced(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("debounce workflow run %q with key %q: read run %s: %w", p.WorkflowName, d.Key, runID, err)
	}
	run.Debounced = debounced
	return run, nil
}

func (b *Backend) debounceInTx(ctx context.Context, tx pgx.Tx, p backend.CreateWorkflowRunParams, d backend.Debounce) (string, bool, error) {
	stored, _ := encodeJSON(p.Input)
	var input any
	if len(p.Input) > 0 {
		input = string(stored)
	}
	for range debounceAttempts {
		var runID string
		err := tx.QueryRow(ctx, b.q.DebounceExtend, b.namespace, p.WorkflowName, d.Key,
			durationMs(d.Period), input, d.Leading, b.at()).Scan(&runID)
		if err == nil {
			if !d.Leading {
				var esc escapes
				esc.note(b.namespace, tableRuns, runID, "input", p.Input)
				if err := b.recordEscapes(ctx, tx, &esc); err != nil {
					return "", false, err
				}
			}
			return runID, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return "", false, err
		}
		created, err := b.debounceCreate(ctx, tx, p, d)
		if err == nil {
			return created, false, nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "workflow_runs_go_debounce_idx" {
			return "", false, err
		}
		// Another start created the key's run since debounce_extend
		// looked: extend that one.
	}
	return "", false, fmt.Errorf("the key changed hands %d times during one start", debounceAttempts)
}

// debounceCreate creates the burst's run in a savepoint of tx, so that a
// unique violation leaves tx usable.
func (b *Backend) debounceCreate(ctx context.Context, tx pgx.Tx, p backend.CreateWorkflowRunParams, d backend.Debounce) (string, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer sp.Rollback(ctx) //nolint:errcheck // a no-op after the commit
	runID := id.New(id.PrefixRun)
	var esc escapes
	if _, _, err := b.createInTx(ctx, sp, p, &esc, b.insertRunArgs(runID, p, &esc)); err != nil {
		return "", err
	}
	if _, err := sp.Exec(ctx, b.q.DebounceMark, b.namespace, runID, d.Key,
		durationMs(d.Period), durationMs(d.MaxDelay), b.at()); err != nil {
		return "", err
	}
	return runID, sp.Commit(ctx)
}

// debounceRow wraps a row of get_debounced_run or list_debounced_runs so
// that scanRun reads the run's columns and the three that follow.
type debounceRow struct {
	pgx.CollectableRow
	extra []any
}

func (r debounceRow) Scan(dest ...any) error {
	return r.CollectableRow.Scan(append(dest, r.extra...)...)
}

func scanDebounced(row pgx.CollectableRow) (backend.DebouncedRun, error) {
	var d backend.DebouncedRun
	var due *time.Time
	var err error
	d.Run, err = scanRun(debounceRow{row, []any{&d.Key, &due, &d.Deadline}})
	if err != nil {
		return d, err
	}
	if due != nil {
		d.DueAt = due.UTC()
	}
	d.Deadline = d.Deadline.UTC()
	return d, nil
}

func (b *Backend) getDebounced(ctx context.Context, runID string) (*backend.DebouncedRun, error) {
	rows, err := b.pool.Query(ctx, b.q.GetDebouncedRun, b.namespace, runID)
	if err != nil {
		return nil, err
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDebounced)
	if err != nil {
		return nil, err
	}
	if err := b.decodeRuns(ctx, d.Run); err != nil {
		return nil, err
	}
	return &d, nil
}

// ListDebouncedRuns implements [backend.Debouncer].
func (b *Backend) ListDebouncedRuns(ctx context.Context, limit int) ([]backend.DebouncedRun, error) {
	if limit <= 0 {
		limit = backend.DefaultPageSize
	}
	rows, err := b.pool.Query(ctx, b.q.ListDebouncedRuns, b.namespace, limit)
	if err != nil {
		return nil, fmt.Errorf("list debounced runs: %w", err)
	}
	ds, err := pgx.CollectRows(rows, scanDebounced)
	if err != nil {
		return nil, fmt.Errorf("list debounced runs: %w", err)
	}
	for i := range ds {
		if err := b.decodeRuns(ctx, ds[i].Run); err != nil {
			return nil, fmt.Errorf("list debounced runs: %w", err)
		}
	}
	return ds, nil
}
