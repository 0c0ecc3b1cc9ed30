package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
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
	var input any
	if p.Input != nil {
		input = string(p.Input)
	}
	var s *backend.Schedule
	err = b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		s, err = scanSchedule(tx.QueryRowContext(ctx, b.q.PutSchedule,
			sql.Named("ns", b.ns), sql.Named("name", p.Name), sql.Named("workflow_name", p.WorkflowName),
			sql.Named("version", nullStringArg(p.Version)), sql.Named("cron", p.Cron), sql.Named("time_zone", p.TimeZone),
			sql.Named("input", input), sql.Named("overlap", string(p.Overlap)),
			sql.Named("catchup_window_ms", p.CatchupWindow.Milliseconds()), sql.Named("paused", p.Paused), sql.Named("priority", p.Priority),
			sql.Named("next_fire_at", timeArg(c.Next(now))), sql.Named("now", timeArg(now))))
		if err == nil {
			ev.scheduleChanged(b.ns)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("put schedule %q: %w", p.Name, err)
	}
	return s, nil
}

// GetSchedule implements [backend.ScheduleStore].
func (b *Backend) GetSchedule(ctx context.Context, name string) (*backend.Schedule, error) {
	var s *backend.Schedule
	err := b.read(ctx, func() error {
		var err error
		s, err = scanSchedule(b.db.QueryRowContext(ctx, b.q.GetSchedule, sql.Named("ns", b.ns), sql.Named("name", name)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get schedule %q: %w", name, notFound(err))
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
	var after any
	if p.After != "" {
		c, err := backend.DecodeScheduleCursor(p.After)
		if err != nil {
			return nil, fmt.Errorf("list schedules: %w", err)
		}
		after = c.Name
	}
	var ss []backend.Schedule
	err := b.read(ctx, func() error {
		ss = ss[:0]
		rows, err := b.db.QueryContext(ctx, b.q.ListSchedules, sql.Named("ns", b.ns), sql.Named("after", after), sql.Named("limit", limit+1))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanSchedule(rows)
			if err != nil {
				return err
			}
			ss = append(ss, *s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return backend.SchedulePage(ss, limit), nil
}

// DeleteSchedule implements [backend.ScheduleStore].
func (b *Backend) DeleteSchedule(ctx context.Context, name string) error {
	err := b.write(ctx, func(tx *txn, _ time.Time, _ *events) error {
		res, err := tx.ExecContext(ctx, b.q.DeleteSchedule, sql.Named("ns", b.ns), sql.Named("name", name))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, backend.ErrScheduleNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete schedule %q: %w", name, err)
	}
	return nil
}

// PauseSchedule implements [backend.ScheduleStore] with one update.
func (b *Backend) PauseSchedule(ctx context.Context, name string) (*backend.Schedule, error) {
	var s *backend.Schedule
	err := b.write(ctx, func(tx *txn, now time.Time, _ *events) error {
		var err error
		s, err = scanSchedule(tx.QueryRowContext(ctx, b.q.PauseSchedule, sql.Named("ns", b.ns), sql.Named("name", name), sql.Named("now", timeArg(now))))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pause schedule %q: %w", name, notFound(err))
	}
	return s, nil
}

// ResumeSchedule implements [backend.ScheduleStore]: in one write, the
// schedule is read, its next tick computed from now and written.
func (b *Backend) ResumeSchedule(ctx context.Context, name string) (*backend.Schedule, error) {
	var s *backend.Schedule
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		var err error
		if s, err = b.getSchedule(ctx, tx, name); err != nil || !s.Paused {
			return err
		}
		c, err := backend.ParseCron(s.Cron, s.TimeZone)
		if err != nil {
			return fmt.Errorf("stored schedule: %w", err)
		}
		s, err = scanSchedule(tx.QueryRowContext(ctx, b.q.ResumeSchedule, sql.Named("ns", b.ns), sql.Named("name", name),
			sql.Named("next_fire_at", timeArg(c.Next(now))), sql.Named("now", timeArg(now))))
		if err == nil {
			ev.scheduleChanged(b.ns)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resume schedule %q: %w", name, notFound(err))
	}
	return s, nil
}

// TriggerSchedule implements [backend.ScheduleStore]: in one write,
// [backend.TriggerLockedSchedule].
func (b *Backend) TriggerSchedule(ctx context.Context, name string) (*backend.WorkflowRun, error) {
	var run *backend.WorkflowRun
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		s, err := b.getSchedule(ctx, tx, name)
		if err != nil {
			return err
		}
		run, err = backend.TriggerLockedSchedule(ctx, &scheduleTx{b: b, tx: tx, now: now, ev: ev}, s, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("trigger schedule %q: %w", name, notFound(err))
	}
	return run, nil
}

// FireDueSchedules implements [backend.ScheduleStore]: one query finds
// the due schedules (due_schedules), each is fired in a write of its own
// that reads it again and runs [backend.FireLockedSchedule] (a schedule
// another process fired meanwhile has nothing due any more), and a last
// query reads the next tick (next_schedule_fire).
func (b *Backend) FireDueSchedules(ctx context.Context, p backend.FireDueSchedulesParams) (*backend.FireReport, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = backend.DefaultFireLimit
	}
	var names []string
	err := b.read(ctx, func() error {
		names = names[:0]
		rows, err := b.db.QueryContext(ctx, b.q.DueSchedules, sql.Named("ns", b.ns), sql.Named("limit", limit), sql.Named("now", timeArg(b.now())))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return err
			}
			names = append(names, name)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("fire due schedules: %w", err)
	}
	report := &backend.FireReport{More: len(names) == limit}
	for _, name := range names {
		var f backend.ScheduleFiring
		var more bool
		err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
			s, err := b.getSchedule(ctx, tx, name)
			if errors.Is(err, sql.ErrNoRows) {
				f, more = backend.ScheduleFiring{}, false
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			f, more, err = backend.FireLockedSchedule(ctx, &scheduleTx{b: b, tx: tx, now: now, ev: ev}, s, now)
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
	var next sql.NullString
	err = b.read(ctx, func() error {
		return b.db.QueryRowContext(ctx, b.q.NextScheduleFire, sql.Named("ns", b.ns)).Scan(&next, &report.Buffered)
	})
	if err != nil {
		return report, fmt.Errorf("next schedule tick: %w", err)
	}
	if report.NextFireAt, err = parseNullTime(next); err != nil {
		return report, fmt.Errorf("next schedule tick: %w", err)
	}
	return report, nil
}

// recordScheduleFailure records on schedule name that its fire failed with
// fireErr (record_schedule_failure, in a write of its own after reading
// its failures so far), backing it off by backend.ScheduleRetryDelay.
func (b *Backend) recordScheduleFailure(ctx context.Context, name string, fireErr error) (backend.ScheduleFailure, error) {
	f := backend.ScheduleFailure{Schedule: name, Err: fireErr}
	err := b.write(ctx, func(tx *txn, now time.Time, ev *events) error {
		s, err := b.getSchedule(ctx, tx, name)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // deleted meanwhile: nothing to record it on
		}
		if err != nil {
			return err
		}
		f.Failures = s.Failures + 1
		f.RetryAt = now.Add(backend.ScheduleRetryDelay(f.Failures)).Truncate(time.Millisecond)
		_, err = tx.ExecContext(ctx, b.q.RecordScheduleFailure, sql.Named("ns", b.ns), sql.Named("name", name),
			sql.Named("error", backend.ScheduleErrorText(fireErr)), sql.Named("failures", f.Failures),
			sql.Named("retry_at", timeArg(f.RetryAt)), sql.Named("now", timeArg(now)))
		return err
	})
	return f, err
}

// getSchedule reads schedule name in tx.
func (b *Backend) getSchedule(ctx context.Context, tx *txn, name string) (*backend.Schedule, error) {
	return scanSchedule(tx.QueryRowContext(ctx, b.q.GetSchedule, sql.Named("ns", b.ns), sql.Named("name", name)))
}

// notFound turns sql.ErrNoRows (no schedule of that name) into
// backend.ErrScheduleNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return backend.ErrScheduleNotFound
	}
	return err
}

// scheduleTx is [backend.ScheduleTx] over one write of b.
type scheduleTx struct {
	b   *Backend
	tx  *txn
	now time.Time
	ev  *events
}

// RunActive implements [backend.ScheduleTx] (run_active).
func (t *scheduleTx) RunActive(ctx context.Context, runID string) (bool, error) {
	var active bool
	err := t.tx.QueryRowContext(ctx, t.b.q.RunActive, sql.Named("ns", t.b.ns), sql.Named("id", runID)).Scan(&active)
	return active, err
}

// StartScheduledRun implements [backend.ScheduleTx]: tick_started, then
// the run's insert as CreateWorkflowRun makes it (announced after the
// commit), and insert_schedule_run.
func (t *scheduleTx) StartScheduledRun(ctx context.Context, p backend.CreateWorkflowRunParams, schedule string, at time.Time, triggered bool) (*backend.WorkflowRun, error) {
	b := t.b
	if !triggered {
		var started bool
		err := t.tx.QueryRowContext(ctx, b.q.TickStarted, sql.Named("ns", b.ns), sql.Named("name", schedule),
			sql.Named("scheduled_at", timeArg(at))).Scan(&started)
		if err != nil || started {
			return nil, err
		}
	}
	args, err := newCreateArgs(&p)
	if err != nil {
		return nil, err
	}
	run, err := b.createRun(ctx, t.tx, t.now, t.ev, &p, &args)
	if err != nil {
		return nil, err
	}
	_, err = t.tx.ExecContext(ctx, b.q.InsertScheduleRun, sql.Named("ns", b.ns), sql.Named("name", schedule),
		sql.Named("run_id", run.ID), sql.Named("scheduled_at", timeArg(at)), sql.Named("triggered", triggered),
		sql.Named("now", timeArg(t.now)))
	return run, err
}

// SaveScheduleState implements [backend.ScheduleTx] (save_schedule_state).
func (t *scheduleTx) SaveScheduleState(ctx context.Context, s *backend.Schedule) error {
	_, err := t.tx.ExecContext(ctx, t.b.q.SaveScheduleState, sql.Named("ns", t.b.ns), sql.Named("name", s.Name),
		sql.Named("next_fire_at", timeArg(s.NextFireAt)), sql.Named("buffered_at", nullTimeArg(s.BufferedAt)),
		sql.Named("last_run_id", nullStringArg(s.LastRunID)), sql.Named("last_fire_at", nullTimeArg(s.LastFireAt)),
		sql.Named("started", s.Started), sql.Named("skipped", s.Skipped), sql.Named("missed", s.Missed),
		sql.Named("now", timeArg(t.now)))
	return err
}

// scanSchedule reads the columns of the schedule_columns fragment
// (sql/schedules.sql).
func scanSchedule(row scanner) (*backend.Schedule, error) {
	var (
		s                      backend.Schedule
		input                  sql.NullString
		overlap                string
		windowMs               int64
		next, created, updated string
		buffered, lastFire     sql.NullString
		lastErrorAt, retryAt   sql.NullString
	)
	err := row.Scan(&s.NamespaceID, &s.Name, &s.WorkflowName, &s.Version, &s.Cron, &s.TimeZone,
		&input, &overlap, &windowMs, &s.Paused, &next,
		&buffered, &s.LastRunID, &lastFire, &s.Started, &s.Skipped,
		&s.Missed, &created, &updated, &s.Priority,
		&s.LastError, &lastErrorAt, &s.Failures, &retryAt)
	if err != nil {
		return nil, err
	}
	if input.Valid {
		s.Input = []byte(input.String)
	}
	s.Overlap, s.CatchupWindow = backend.OverlapPolicy(overlap), time.Duration(windowMs)*time.Millisecond
	for _, t := range []struct {
		dst *time.Time
		src string
	}{{&s.NextFireAt, next}, {&s.CreatedAt, created}, {&s.UpdatedAt, updated}} {
		if *t.dst, err = backend.ParseTime(t.src); err != nil {
			return nil, fmt.Errorf("schedule %q: %w", s.Name, err)
		}
	}
	if s.BufferedAt, err = parseNullTime(buffered); err != nil {
		return nil, fmt.Errorf("schedule %q: buffered_at: %w", s.Name, err)
	}
	if s.LastFireAt, err = parseNullTime(lastFire); err != nil {
		return nil, fmt.Errorf("schedule %q: last_fire_at: %w", s.Name, err)
	}
	if s.LastErrorAt, err = parseNullTime(lastErrorAt); err != nil {
		return nil, fmt.Errorf("schedule %q: last_error_at: %w", s.Name, err)
	}
	if s.RetryAt, err = parseNullTime(retryAt); err != nil {
		return nil, fmt.Errorf("schedule %q: retry_at: %w", s.Name, err)
	}
	return &s, nil
}
