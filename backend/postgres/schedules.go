package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/internal/id"
)

var _ backend.ScheduleStore = (*Backend)(nil)

// PutSchedule implements [backend.ScheduleStore] with one upsert
// (put_schedule in sql/schedules.sql); a new schedule's first tick is the
// cron's first after now by the backend's clock.
func (b *Backend) PutSchedule(ctx context.Context, p backend.PutScheduleParams) (*backend.Schedule, error) {
	p, c, err := p.Prepare()
	if err != nil {
		return nil, fmt.Errorf("put schedule: %w", err)
	}
	var input *string
	if p.Input != nil {
		in := string(p.Input)
		input = &in
	}
	next := c.Next(b.now())
	rows, err := b.pool.Query(ctx, b.q.PutSchedule, b.namespace, p.Name, p.WorkflowName, p.Version, p.Cron, p.TimeZone,
		input, string(p.Overlap), p.CatchupWindow.Milliseconds(), p.Paused, next, b.at(), p.Priority)
	if err != nil {
		return nil, fmt.Errorf("put schedule %q: %w", p.Name, err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (*backend.Schedule, error) {
		return scanSchedule(row, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("put schedule %q: %w", p.Name, err)
	}
	return s, nil
}

// GetSchedule implements [backend.ScheduleStore].
func (b *Backend) GetSchedule(ctx context.Context, name string) (*backend.Schedule, error) {
	rows, err := b.pool.Query(ctx, b.q.GetSchedule, b.namespace, name)
	if err != nil {
		return nil, fmt.Errorf("get schedule %q: %w", name, err)
	}
	s, err := collectSchedule(rows)
	if err != nil {
		return nil, fmt.Errorf("get schedule %q: %w", name, err)
	}
	return s, nil
}

// ListSchedules implements [backend.ScheduleStore]: one range of the
// primary key, one row more than the page to know whether another follows.
func (b *Backend) ListSchedules(ctx context.Context, p backend.ListSchedulesParams) (*backend.Page[backend.Schedule], error) {
	if p.Limit < 0 {
		return nil, fmt.Errorf("list schedules: %w: negative limit %d", backend.ErrInvalidArgument, p.Limit)
	}
	limit := p.Limit
	if limit == 0 {
		limit = backend.DefaultPageSize
	}
	var after *string
	if p.After != "" {
		c, err := backend.DecodeScheduleCursor(p.After)
		if err != nil {
			return nil, fmt.Errorf("list schedules: %w", err)
		}
		after = &c.Name
	}
	rows, err := b.pool.Query(ctx, b.q.ListSchedules, b.namespace, after, limit+1)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	ss, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend.Schedule, error) {
		s, err := scanSchedule(row, nil)
		if err != nil {
			return backend.Schedule{}, err
		}
		return *s, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return backend.SchedulePage(ss, limit), nil
}

// DeleteSchedule implements [backend.ScheduleStore].
func (b *Backend) DeleteSchedule(ctx context.Context, name string) error {
	tag, err := b.pool.Exec(ctx, b.q.DeleteSchedule, b.namespace, name)
	if err != nil {
		return fmt.Errorf("delete schedule %q: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete schedule %q: %w", name, backend.ErrScheduleNotFound)
	}
	return nil
}

// PauseSchedule implements [backend.ScheduleStore] with one update.
func (b *Backend) PauseSchedule(ctx context.Context, name string) (*backend.Schedule, error) {
	rows, err := b.pool.Query(ctx, b.q.PauseSchedule, b.namespace, name, b.at())
	if err != nil {
		return nil, fmt.Errorf("pause schedule %q: %w", name, err)
	}
	s, err := collectSchedule(rows)
	if err != nil {
		return nil, fmt.Errorf("pause schedule %q: %w", name, err)
	}
	return s, nil
}

// ResumeSchedule implements [backend.ScheduleStore]: the schedule's row
// is locked, its next tick computed from the statement's clock, and
// written.
func (b *Backend) ResumeSchedule(ctx context.Context, name string) (*backend.Schedule, error) {
	var s *backend.Schedule
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		var now time.Time
		var err error
		if s, now, err = b.lockSchedule(ctx, tx, b.q.LockSchedule, name); err != nil || !s.Paused {
			return err
		}
		c, err := backend.ParseCron(s.Cron, s.TimeZone)
		if err != nil {
			return fmt.Errorf("stored schedule: %w", err)
		}
		rows, err := tx.Query(ctx, b.q.ResumeSchedule, b.namespace, name, c.Next(now), b.at())
		if err != nil {
			return err
		}
		s, err = pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (*backend.Schedule, error) {
			return scanSchedule(row, nil)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resume schedule %q: %w", name, err)
	}
	return s, nil
}

// TriggerSchedule implements [backend.ScheduleStore]: in one transaction
// holding the schedule's row lock, [backend.TriggerLockedSchedule].
func (b *Backend) TriggerSchedule(ctx context.Context, name string) (*backend.WorkflowRun, error) {
	var run *backend.WorkflowRun
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		s, now, err := b.lockSchedule(ctx, tx, b.q.LockSchedule, name)
		if err != nil {
			return err
		}
		run, err = backend.TriggerLockedSchedule(ctx, &scheduleTx{b: b, tx: tx}, s, now)
		return err
	})
	if err == nil {
		err = b.decodeRuns(ctx, run)
	}
	if err != nil {
		return nil, fmt.Errorf("trigger schedule %q: %w", name, err)
	}
	return run, nil
}

// FireDueSchedules implements [backend.ScheduleStore]: one query finds
// the due schedules (due_schedules), each is fired in a transaction of its
// own that locks its row FOR UPDATE SKIP LOCKED (a schedule another worker
// is firing is skipped) and runs [backend.FireLockedSchedule]; a last
// query reads the next tick (next_schedule_fire).
func (b *Backend) FireDueSchedules(ctx context.Context, p backend.FireDueSchedulesParams) (*backend.FireReport, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = backend.DefaultFireLimit
	}
	rows, err := b.pool.Query(ctx, b.q.DueSchedules, b.namespace, limit, b.at())
	if err != nil {
		return nil, fmt.Errorf("fire due schedules: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("fire due schedules: %w", err)
	}
	report := &backend.FireReport{More: len(names) == limit}
	for _, name := range names {
		var f backend.ScheduleFiring
		var more bool
		err := b.inTx(ctx, func(tx pgx.Tx) error {
			s, now, err := b.lockSchedule(ctx, tx, b.q.LockDueSchedule, name)
			if errors.Is(err, backend.ErrScheduleNotFound) {
				return nil // being fired by another worker, or deleted
			}
			if err != nil {
				return err
			}
			f, more, err = backend.FireLockedSchedule(ctx, &scheduleTx{b: b, tx: tx}, s, now)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return report, fmt.Errorf("fire schedule %q: %w", name, err)
			}
			failure, rerr := b.recordScheduleFailure(ctx, name, err)
			if rerr != nil {
				return report, fmt.Errorf("fire schedule %q: %w (and recording the failure failed: %w)", name, err, rerr)
			}
			report.Failures = append(report.Failures, failure)
			continue
		}
		if f.Missed > 0 || len(f.Ticks) > 0 {
			report.Firings = append(report.Firings, f)
		}
		report.More = report.More || more
	}
	var next *time.Time
	var dbNow time.Time
	if err := b.pool.QueryRow(ctx, b.q.NextScheduleFire, b.namespace, b.at()).Scan(&next, &report.Buffered, &dbNow); err != nil {
		return report, fmt.Errorf("next schedule tick: %w", err)
	}
	if next != nil {
		// Due checks compare with the database's clock: say when by ours
		// (see NextDueAt).
		at := b.now().Add(next.Sub(dbNow)).UTC()
		report.NextFireAt = &at
	}
	return report, nil
}

// recordScheduleFailure records on schedule name that its fire failed with
// fireErr (record_schedule_failure, after reading its failures so far),
// backing it off by backend.ScheduleRetryDelay.
func (b *Backend) recordScheduleFailure(ctx context.Context, name string, fireErr error) (backend.ScheduleFailure, error) {
	f := backend.ScheduleFailure{Schedule: name, Err: fireErr}
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		s, now, err := b.lockSchedule(ctx, tx, b.q.LockSchedule, name)
		if err != nil {
			return err
		}
		f.Failures = s.Failures + 1
		f.RetryAt = now.Add(backend.ScheduleRetryDelay(f.Failures)).Truncate(time.Millisecond)
		_, err = tx.Exec(ctx, b.q.RecordScheduleFailure, b.namespace, name, backend.ScheduleErrorText(fireErr), f.Failures, f.RetryAt, b.at())
		return err
	})
	if errors.Is(err, backend.ErrScheduleNotFound) {
		err = nil // deleted meanwhile: nothing to record it on
	}
	return f, err
}

// lockSchedule reads schedule name with one of the lock statements
// (lock_schedule, lock_due_schedule) and returns it with the statement's
// clock; no row is an error wrapping backend.ErrScheduleNotFound.
func (b *Backend) lockSchedule(ctx context.Context, tx pgx.Tx, query, name string) (*backend.Schedule, time.Time, error) {
	var now time.Time
	rows, err := tx.Query(ctx, query, b.namespace, name, b.at())
	if err != nil {
		return nil, now, err
	}
	s, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (*backend.Schedule, error) {
		return scanSchedule(row, &now)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = backend.ErrScheduleNotFound
	}
	return s, now.UTC(), err
}

// scheduleTx is [backend.ScheduleTx] over one transaction of b.
type scheduleTx struct {
	b  *Backend
	tx pgx.Tx
}

// RunActive implements [backend.ScheduleTx] (run_active).
func (t *scheduleTx) RunActive(ctx context.Context, runID string) (bool, error) {
	var active bool
	err := t.tx.QueryRow(ctx, t.b.q.RunActive, t.b.namespace, runID).Scan(&active)
	return active, err
}

// StartScheduledRun implements [backend.ScheduleTx]: tick_started, then
// insert_run (which announces the run at commit) with its escaped values
// recorded, and insert_schedule_run.
func (t *scheduleTx) StartScheduledRun(ctx context.Context, p backend.CreateWorkflowRunParams, schedule string, at time.Time, triggered bool) (*backend.WorkflowRun, error) {
	b := t.b
	if !triggered {
		var started bool
		if err := t.tx.QueryRow(ctx, b.q.TickStarted, b.namespace, schedule, at).Scan(&started); err != nil || started {
			return nil, err
		}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	runID := id.New(id.PrefixRun)
	var esc escapes
	run, err := queryRun(ctx, t.tx, b.q.InsertRun, b.insertRunArgs(runID, p, &esc)...)
	if err != nil {
		return nil, err
	}
	if err := b.recordEscapes(ctx, t.tx, &esc); err != nil {
		return nil, err
	}
	if _, err := t.tx.Exec(ctx, b.q.InsertScheduleRun, b.namespace, schedule, run.ID, at, triggered, b.at()); err != nil {
		return nil, err
	}
	return run, nil
}

// SaveScheduleState implements [backend.ScheduleTx] (save_schedule_state).
func (t *scheduleTx) SaveScheduleState(ctx context.Context, s *backend.Schedule) error {
	_, err := t.tx.Exec(ctx, t.b.q.SaveScheduleState, t.b.namespace, s.Name, s.NextFireAt, s.BufferedAt,
		s.LastRunID, s.LastFireAt, s.Started, s.Skipped, s.Missed, t.b.at())
	return err
}

// collectSchedule reads the one schedule of rows; none is an error
// wrapping backend.ErrScheduleNotFound.
func collectSchedule(rows pgx.Rows) (*backend.Schedule, error) {
	s, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (*backend.Schedule, error) {
		return scanSchedule(row, nil)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = backend.ErrScheduleNotFound
	}
	return s, err
}

// scanSchedule reads one row of the schedule_columns fragment
// (sql/schedules.sql), then into extra the next column when extra is not
// nil; a row with one more column (put_schedule's notification) has it
// read and dropped.
func scanSchedule(row pgx.CollectableRow, extra *time.Time) (*backend.Schedule, error) {
	var s backend.Schedule
	var input *string
	var overlap string
	var windowMs int64
	dest := []any{&s.NamespaceID, &s.Name, &s.WorkflowName, &s.Version, &s.Cron, &s.TimeZone,
		&input, &overlap, &windowMs, &s.Paused, &s.NextFireAt,
		&s.BufferedAt, &s.LastRunID, &s.LastFireAt, &s.Started, &s.Skipped,
		&s.Missed, &s.CreatedAt, &s.UpdatedAt, &s.Priority,
		&s.LastError, &s.LastErrorAt, &s.Failures, &s.RetryAt}
	switch {
	case extra != nil:
		dest = append(dest, extra)
	case len(row.FieldDescriptions()) > len(dest):
		dest = append(dest, nil)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if input != nil {
		s.Input = []byte(*input)
	}
	s.Overlap, s.CatchupWindow = backend.OverlapPolicy(overlap), time.Duration(windowMs)*time.Millisecond
	s.NextFireAt, s.CreatedAt, s.UpdatedAt = s.NextFireAt.UTC(), s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	for _, t := range []**time.Time{&s.BufferedAt, &s.LastFireAt, &s.LastErrorAt, &s.RetryAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return &s, nil
}
